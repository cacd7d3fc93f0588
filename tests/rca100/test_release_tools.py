"""RCA-100's tool schemas are the PoS release's: the release's own `RCA100ToolRegistry`
(`benchmarks/rca100_env.py` loading `benchmarks/RCA100/tools.py`) runs from the pinned files in a
separate interpreter and import path (the release's `benchmarks` package would clash with the
project's), and its `schemas()` — what the release's adapter puts in `state["actions"]` — must equal
the schemas every method gets from the harness, in the same order; the release interface's
`Available actions:` then carries them byte for byte. Offline the project's wording is sent and
marked; `tool_texts: project` chooses it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.rca100.benchmark import Rca100
from benchmarks.rca100.schema import TOOLS, tool_specs
from runners.api import EpisodeContext
from runners.upstream import TextSources
from tests.upstream_texts import upstream_file

RUN_REGISTRY = """
import json
from pathlib import Path
from benchmarks.rca100_env import RCA100ToolRegistry
print(json.dumps(RCA100ToolRegistry(Path("benchmarks/RCA100/tools.py")).schemas()))
"""


def release_schemas(tmp: Path) -> list[dict]:
    pytest.importorskip("pandas", reason="the release's tools.py imports pandas")
    for path in ("benchmarks/rca100_env.py", "benchmarks/RCA100/tools.py", "benchmarks/RCA100/info.py"):
        (tmp / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(upstream_file("PoS", path), tmp / path)
    for pkg in ("benchmarks", "benchmarks/RCA100"):
        (tmp / pkg / "__init__.py").write_text("")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", RUN_REGISTRY], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> list[dict]:
    return release_schemas(tmp_path_factory.mktemp("release"))


def test_the_harness_sends_the_release_registrys_schemas(registry, rca_root):
    bench = Rca100(name="rca100", data_dir=str(rca_root))
    task = bench.load_tasks()[0]
    env = bench.make_env(task, EpisodeContext())
    sent = [t.openai_schema() for t in env.view().tools]
    assert [s["function"]["name"] for s in registry] == list(TOOLS)
    assert sent == registry
    prompts = bench.notes()["text_sources"]["prompts"]
    for name in TOOLS:
        assert prompts[f"rca100.tools.{name}"]["source"] == "upstream", name
    assert prompts["rca100.tools.submit_root_cause"]["path"] == "benchmarks/rca100_env.py"


def test_the_release_interface_lists_them_as_the_release_does(registry, rca_root):
    from pos.release_react import action_view, raw_messages, raw_texts

    bench = Rca100(name="rca100", data_dir=str(rca_root))
    env = bench.make_env(bench.load_tasks()[0], EpisodeContext())
    view = env.view()
    texts = raw_texts("rca", 3, TextSources())
    assert texts is not None
    (_, user) = raw_messages(
        texts, task_text="{}", observation="o", actions=action_view(None, view.tools), history="[]"
    )
    assert json.dumps(registry, ensure_ascii=False) in user["content"]


def test_offline_and_by_switch_the_project_wording_is_sent_and_marked(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sources = TextSources()
    specs = tool_specs(sources)
    assert [s.description for s in specs] == [d for d, _ in TOOLS.values()]
    assert sources.paraphrased == sorted(f"rca100.tools.{n}" for n in TOOLS)
    own = TextSources()
    tool_specs(own, "project")
    assert not own.paraphrased and own.entries["rca100.tools.get_alerts"]["source"] == "project"
    with pytest.raises(ValueError, match="tool_texts"):
        tool_specs(own, "mine")
