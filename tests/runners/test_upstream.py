"""runners.upstream: pinned upstream text read at run time, checksum-checked, with a recorded
fallback when it cannot be had."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from runners import upstream
from runners.upstream import TextSources, UpstreamError, UpstreamFile, py_docstring, py_string
from tests.conftest import upstream_src

TOOLS = UpstreamFile("tau2-bench", "src/tau2/domains/airline/tools.py")
CONFIG = UpstreamFile("tau2-bench", "src/tau2/config.py")


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_UPSTREAM_OFFLINE", "1")
    upstream._load.cache_clear()
    yield
    upstream._load.cache_clear()


def test_pins_match_the_shared_copies():
    root = upstream_src()
    for name, pin in upstream.pins().items():
        for path, sha in pin["files"].items():
            p = root / f"{name}@{pin['commit']}" / path
            assert hashlib.sha256(p.read_bytes()).hexdigest() == sha, p


def test_string_constant_and_docstring_are_read_exactly(monkeypatch):
    root = upstream_src()
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(root))
    src = (root / TOOLS.folder / TOOLS.path).read_text()
    doc = py_docstring(TOOLS, "AirlineTools.get_user_details")
    assert doc and doc.splitlines()[0] in src
    assert py_string(CONFIG, "DEFAULT_LLM_USER")  # a module-level string constant
    assert py_string(CONFIG, "NO_SUCH_NAME") is None


def test_wrong_checksum_is_refused(monkeypatch, tmp_path):
    root = upstream_src()
    fake = tmp_path / "up"
    shutil.copytree(root / TOOLS.folder, fake / TOOLS.folder)
    (fake / TOOLS.folder / TOOLS.path).write_text("# tampered\n")
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(fake))
    with pytest.raises(UpstreamError, match="does not match the pinned"):
        py_docstring(TOOLS, "")


def test_offline_without_a_copy_falls_back_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path / "empty"))
    src = TextSources()
    assert src.string("user_model", CONFIG, "DEFAULT_LLM_USER", "our wording") == "our wording"
    m = src.as_manifest()
    assert m["paraphrased"] == ["user_model"]
    assert "OFFLINE" in m["prompts"]["user_model"]["reason"]


def test_annotate_adds_fields_to_a_recorded_entry_only(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path / "empty"))
    src = TextSources()
    src.string("user_model", CONFIG, "DEFAULT_LLM_USER", "our wording")
    src.annotate("user_model", settings={"temperature": 0})
    e = src.as_manifest()["prompts"]["user_model"]
    assert e["settings"] == {"temperature": 0} and e["source"] == "paraphrase"
    with pytest.raises(KeyError, match="use\\(\\) first"):
        src.annotate("never_used", settings={})


def test_upstream_source_recorded(monkeypatch):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(upstream_src()))
    src = TextSources()
    text = src.string("user_model", CONFIG, "DEFAULT_LLM_USER", "fallback")
    assert text != "fallback"
    e = src.as_manifest()["prompts"]["user_model"]
    assert e["source"] == "upstream" and e["commit"] == CONFIG.commit and e["symbol"] == "DEFAULT_LLM_USER"


def test_unpinned_file_names_the_fix():
    with pytest.raises(KeyError, match="upstream_pins.json"):
        UpstreamFile("tau2-bench", "src/nope.py").sha256


def test_analysis_reads_a_finished_cell_without_downloading(tmp_path, monkeypatch, capsys):
    """Rebuilding a cell's benchmark for its metrics (runners.aggregate, runners.paper) neither
    downloads upstream files nor warns: the texts a cell ran on are in its manifest."""
    import subprocess
    import sys
    import urllib.request

    from runners.analysis.cells import collect

    repo = Path(__file__).resolve().parents[2]
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "method=full_context",
        "benchmark=memoryarena_math",
        "runner.limit=1",
        "experiment.name=e",
    ]
    proc = subprocess.run(
        cmd,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo), "HARNESS_UPSTREAM_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    calls: list[str] = []

    def no_network(url, *a, **k):
        calls.append(str(getattr(url, "full_url", url)))
        raise OSError("no network in this test")

    monkeypatch.delenv("HARNESS_UPSTREAM_OFFLINE", raising=False)
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    upstream._load.cache_clear() if hasattr(upstream._load, "cache_clear") else None
    cells = collect(tmp_path / "e")
    assert len(cells) == 1 and calls == []
    # a run (not analysis) in the same situation does try, and says so once per file
    from benchmarks.memoryarena.formal import FormalReasoning

    upstream._SAID.clear()
    FormalReasoning(name="memoryarena_math", data_dir="fixtures", config="formal_reasoning_math")
    assert calls
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    files = {line.split(":")[1].strip() + ":" + line.split(":")[2] for line in warned}
    assert warned and len(warned) == len(files)  # one line per unreachable file, not one per text
