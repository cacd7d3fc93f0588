"""runners.upstream: pinned upstream text read at run time, checksum-checked, with a recorded
fallback when it cannot be had."""
from __future__ import annotations

import hashlib
import shutil

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
