"""PoS's baselines on the PoS benchmarks speak the release's ReAct interface (pos/release_react.py):
the messages a scripted sweep sent, read back through runners.records.results, carry the release's
system prompt per benchmark and fill `build_prompt`'s user template byte for byte (read here straight
from the pinned copy); Raw's `Previous steps:` is the JSON trajectory; the replies are the release's
JSON object. Offline, or with `policy_prompt: project`, the project's tagged layout, recorded."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from baselines.full_context import FullContext
from baselines.pos_baselines.acon import Acon
from baselines.pos_baselines.hiagent import HiAgent
from baselines.pos_baselines.lhh import LongHorizonHarness
from baselines.pos_baselines.protocols import RELEASE_EXECUTOR_RULE, RELEASE_SUBGOAL_RULE
from tests.pos.test_release_prompt import expected_system
from tests.pos_baselines.helpers import FnBackbone, drive
from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls, manifests, upstream_constant, upstream_file

REACT = "prompts/react_prompt.py"
METHODS = ("full_context", "acon", "pace", "hiagent", "longhorizon_harness")
RULES = {"hiagent": RELEASE_SUBGOAL_RULE, "longhorizon_harness": RELEASE_EXECUTOR_RULE}


def build_prompt_regex() -> re.Pattern[str]:
    """build_prompt's user_prompt f-string from the shared copy, as a regex (each field a group)."""
    tree = ast.parse(upstream_file("PoS", REACT).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_prompt")
    node = next(
        n for n in ast.walk(fn) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "user_prompt"
    )
    return re.compile(
        "".join(re.escape(v.value) if isinstance(v, ast.Constant) else "(.*?)" for v in node.value.values), re.DOTALL
    )


def test_scripted_sweep_sends_the_release_interface(tmp_path):
    regex = build_prompt_regex()
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "backbone=scripted",
        f"++experiment.grid.method=[{','.join(METHODS)}]",
        "++experiment.grid.benchmark=[rca100,clindiag]",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        "experiment.name=rel",
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    examples = {
        "rca100": upstream_constant("PoS", REACT, "RCA100_REASONING_EXAMPLE"),
        "clindiag": upstream_constant("PoS", REACT, "CLINDIAG_EXAMPLE"),
    }
    for method in METHODS:
        for bench, kind, k in (("rca100", "rca", 3), ("clindiag", "clindiag", 1)):
            cell = next((tmp_path / "rel").glob(f"{method}__scripted__{bench}*"))
            agent = [c for c in cell_calls(cell, "agent") if len(c.messages) == 2]  # first ask of each turn
            assert len(agent) >= 2, (method, bench)
            system = expected_system(kind, k)
            if method in RULES:
                system += ("" if system.endswith("\n") else "\n") + RULES[method] + "\n"
            for i, call in enumerate(agent):
                assert call.messages[0]["content"] == system, (method, bench)
                m = regex.fullmatch(call.messages[1]["content"])
                assert m, (method, bench, call.messages[1]["content"][:600])
                example, task, _obs, actions, history = m.groups()
                assert example == examples[bench] and task.strip()
                assert isinstance(json.loads(actions), list)
                if method == "full_context":  # Raw: json.dumps(trajectory, indent=2) of {thought, action, observation}
                    steps = json.loads(history)
                    assert len(steps) >= i and all(set(s) == {"thought", "action", "observation"} for s in steps)
                    assert history == json.dumps(steps, ensure_ascii=False, indent=2)
                    if i:
                        assert steps, "Raw's trajectory stayed empty"
                else:
                    assert "<" in history or i == 0  # the baseline's own context blocks
                reply = json.loads(call.text)
                assert "thought" in reply and ("action" in reply or "actions" in reply)
    for mf in manifests(tmp_path):
        ts = mf["method_notes"]["text_sources"]
        # b3.*: Full Context's tagged layout off the PoS benchmarks
        # (FlowState App. B.3; tests/flowstate/test_b3_templates.py)
        assert [k for k in ts["paraphrased"] if not k.startswith("b3.")] == [], ts["paraphrased"]
        assert ts["prompts"]["pos.release.build_prompt"]["path"] == REACT
        if "rca100" in mf["cell"]:
            assert ts["prompts"]["pos.release.RCA100_REASONING_EXAMPLE"]["source"] == "upstream"
        else:  # a cell records only its own benchmark's texts (Benchmark.task_kinds)
            assert "pos.release.RCA100_REASONING_EXAMPLE" not in ts["prompts"]


@pytest.mark.parametrize("cls", [FullContext, Acon, HiAgent, LongHorizonHarness])
def test_offline_the_project_layout_and_the_manifest_says_so(monkeypatch, tmp_path, cls):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    notes = cls.notes({})["text_sources"]
    assert "pos.release.build_prompt" in notes["paraphrased"] and "pos.release.SYSTEM_PROMPT" in notes["paraphrased"]
    reply = '{"thought": "t", "action": "go to desk 1"}'
    bb = FnBackbone(lambda role, msgs: reply if role == "agent" else "{}")
    method = cls(bb)
    if cls is FullContext:
        asyncio_drive_full_context(method)
    else:
        drive(method, ["", "You see a desk."], policy_prompt="release")
    system = bb.of("agent")[0]["messages"][0]["content"]
    assert system.startswith("<instructions>")  # the project's tagged-block layout


def asyncio_drive_full_context(method) -> None:
    import asyncio

    from runners.api import Observation, Request
    from tests.pos_baselines.helpers import view

    async def go():
        await method.begin_task(view())
        await method.begin_request(
            Request(index=0, request_id="t0/q1", text="Your task is to: put a key in the drawer.")
        )
        await method.step(Observation())

    asyncio.run(go())


def test_project_switch_records_the_projects_interface():
    notes = HiAgent.notes({"policy_prompt": "project", "request_settings": "project"})["text_sources"]
    assert notes["prompts"]["pos.release.interface"]["source"] == "project" and notes["paraphrased"] == []
    assert (
        FullContext.notes({"policy_prompt": "project"})["text_sources"]["prompts"]["pos.release.interface"]["source"]
        == "project"
    )


def test_alfworld_release_reply_lookup_schema_and_subgoal_key():
    """ALFWorld in the release's interface: a string action is the command, the lookup tool is
    listed as a schema after the commands, HiAgent's `"subgoal"` key is read; the system prompt is
    the release's SYSTEM_PROMPT followed by the baseline's own rule."""
    from tests.conftest import upstream_src

    upstream_src()
    replies = iter(
        [
            '{"thought": "t", "subgoal": "find the key", "action": "go to desk 1"}',
            '{"thought": "t", "subgoal": "open the drawer", "action": "open drawer 1"}',
        ]
    )
    bb = FnBackbone(
        lambda role, msgs: next(replies) if role == "agent" else '{"summary": "went to the desk", "subgoal_met": true}'
    )
    out = drive(HiAgent(bb), ["", "You see a key."], policy_prompt="release")
    assert [d.tool_calls[0].arguments for d in out] == [{"command": "go to desk 1"}, {"command": "open drawer 1"}]
    msgs = bb.of("agent")[-1]["messages"]
    assert msgs[0]["content"] == upstream_constant("PoS", REACT, "SYSTEM_PROMPT") + RELEASE_SUBGOAL_RULE + "\n"
    m = build_prompt_regex().fullmatch(msgs[1]["content"])
    assert m and m.group(1) == upstream_constant("PoS", REACT, "ALFWORLD_EXAMPLE")
    assert json.loads(m.group(4))[-1]["function"]["name"] == "retrieve_subgoal"
    assert '"go to desk 1"' in m.group(5) and "find the key" in m.group(
        5
    )  # the past subgoal's step, release action form
