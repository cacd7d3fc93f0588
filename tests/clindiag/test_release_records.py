"""The provider's record is what the PoS release sends: its own `ask_provider` and
`ClinDiagCase.record_text` (`benchmarks/clindiag_env.py`, run from the pinned file in a separate
interpreter and import path, with a provider that returns the messages it was given) and the
harness's provider call, on the same real shared case, must send the same messages: whole-file
sections (history, physical examination) verbatim. `verbatim_records: false` re-serialises them."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


from benchmarks.clindiag.benchmark import ClinDiag
from runners.api import Decision, EpisodeContext, ToolCall
from tests.clindiag.helpers import ListBackbone
from tests.conftest import shared_path
from tests.upstream_texts import upstream_file

CASE = "10588413"
TOOLS = ("ask_history", "ask_physical_exam")
RUN = """
import json, sys
from pathlib import Path
from benchmarks.clindiag_env import ClinDiagCase, ask_provider
case = ClinDiagCase(Path(sys.argv[1]))
print(json.dumps({t: json.loads(ask_provider(json.dumps, t, "Q?", case)) for t in sys.argv[2:]}))
"""


def release_messages(tmp: Path, case_dir: Path) -> dict[str, list[dict]]:
    (tmp / "benchmarks").mkdir()
    (tmp / "benchmarks" / "__init__.py").write_text("")
    shutil.copyfile(upstream_file("PoS", "benchmarks/clindiag_env.py"), tmp / "benchmarks" / "clindiag_env.py")
    (tmp / "utils").mkdir()
    (tmp / "utils" / "__init__.py").write_text("")
    # the release's retry helper needs the openai client; its calls are not made here
    (tmp / "utils" / "public_function.py").write_text("def call_with_backoff(fn, label):\n    return fn()\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", RUN, str(case_dir), *TOOLS], cwd=tmp, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def harness_messages(**settings) -> dict[str, list[dict]]:
    cases = shared_path("clindiag", "cases")
    bench = ClinDiag(name="clindiag", data_dir=str(cases.parent), manifest="none", case_ids=[CASE], **settings)
    task = bench.load_tasks()[0]
    out = {}
    for tool in TOOLS:
        bb = ListBackbone(["answer"])
        env = bench.make_env(task, EpisodeContext(backbones={"user_sim": bb}))
        asyncio.run(env.next_request())
        asyncio.run(env.act(Decision(tool_calls=[ToolCall(name=tool, arguments={"question": "Q?"}, id="c")])))
        out[tool] = bb.calls[0]["messages"]
    return out


def test_the_provider_gets_the_records_the_release_sends(tmp_path):
    case_dir = shared_path("clindiag", "cases", CASE)
    want = release_messages(tmp_path, case_dir)
    got = harness_messages()
    assert got == want
    assert want["ask_history"][0]["content"].count((case_dir / "medical_history.json").read_text(encoding="utf-8")) == 1


def test_re_serialised_records_behind_the_switch(tmp_path):
    case_dir = shared_path("clindiag", "cases", CASE)
    got = harness_messages(verbatim_records=False)
    assert (case_dir / "medical_history.json").read_text(encoding="utf-8") not in got["ask_history"][0]["content"]
