"""PoS's policy prompt on the PoS benchmarks is the release's (prompts/react_prompt.py:
`react_system_prompt` per benchmark, `build_belief_prompt`'s template), byte for byte, as read back
from a scripted sweep's records; the manifest names each text; without the pinned files the
project's layout is used and the texts are listed as paraphrased."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from pos.method import PoS
from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls, manifests, upstream_constant, upstream_file

REACT = "prompts/react_prompt.py"


def user_template_regex():
    """build_belief_prompt's user_prompt f-string, read from the shared copy, as a regex (fields: anything)."""
    import re

    tree = ast.parse(upstream_file("PoS", REACT).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_belief_prompt")
    node = next(
        n for n in ast.walk(fn) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "user_prompt"
    )
    out = [re.escape(v.value) if isinstance(v, ast.Constant) else "(.*?)" for v in node.value.values]
    return re.compile("".join(out), re.DOTALL)


def expected_system(kind: str, k: int = 1) -> str:
    c = lambda name, path=REACT: upstream_constant("PoS", path, name)  # noqa: E731
    if kind == "clindiag":
        info = "benchmarks/ClinDiag/info.py"
        return (
            c("CLINDIAG_SYSTEM_PROMPT")
            + "\n"
            + "\n\n".join(
                c(n, info)
                for n in (
                    "ROLE_CONTRACT_INFO",
                    "CLINICAL_WORKFLOW_INFO",
                    "QUESTIONING_DISCIPLINE_INFO",
                    "SUBMIT_CONTRACT_INFO",
                )
            )
        )
    info = "benchmarks/RCA100/info.py"
    fmt = c("RCA100_MULTI_ACTION_FORMAT").format(k=k) if k > 1 else c("RCA100_SINGLE_ACTION_FORMAT")
    return (
        c("RCA100_SYSTEM_PROMPT_HEADER")
        + fmt
        + c("RCA100_SYSTEM_PROMPT_RULES")
        + "\n"
        + "\n\n".join(
            c(n, info)
            for n in ("FAULT_TYPES_INFO", "ENTITY_STANDARD_INFO", "DIAGNOSTIC_METHOD_INFO", "SUBMIT_CONTRACT_INFO")
        )
    )


def test_scripted_sweep_sends_the_release_policy_prompt(tmp_path):
    regex = user_template_regex()
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "method=pos",
        "backbone=scripted",
        "++experiment.grid.benchmark=[rca100,clindiag]",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        "experiment.name=pos_release",
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    seen = set()
    for bench, kind, k in (("rca100", "rca", 3), ("clindiag", "clindiag", 1)):
        cell = next((tmp_path / "pos_release").glob(f"pos__scripted__{bench}*"))
        agent = [c for c in cell_calls(cell, "agent") if len(c.messages) == 2]  # first ask of each turn
        assert agent, f"no {bench} policy call recorded"
        for call in agent:
            assert call.messages[0]["content"] == expected_system(kind, k)
            m = regex.fullmatch(call.messages[1]["content"])
            assert m, call.messages[1]["content"][:500]
        seen.add(bench)
    assert seen == {"rca100", "clindiag"}
    ex = upstream_constant("PoS", REACT, "CLINDIAG_EXAMPLE")
    for m in manifests(tmp_path):
        ts = m["method_notes"]["text_sources"]
        assert ts["paraphrased"] == [] and ts["prompts"]["pos.release.build_belief_prompt"]["path"] == REACT
        if "clindiag" in m["cell"]:
            assert ts["prompts"]["pos.release.CLINDIAG_EXAMPLE"]["source"] == "upstream" and ex
        else:  # a cell records only its own benchmark's texts (Benchmark.task_kinds)
            assert "pos.release.CLINDIAG_EXAMPLE" not in ts["prompts"]


def test_offline_pos_uses_the_project_layout_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    notes = PoS.notes({})["text_sources"]
    assert (
        "pos.release.build_belief_prompt" in notes["paraphrased"]
        and "pos.release.SYSTEM_PROMPT" in notes["paraphrased"]
    )
    from tests.pos.test_policy_prompt import policy_prompt
    from tests.pos.helpers import TASK

    _, system, user = policy_prompt(task=TASK.model_copy(update={"kind": "alfworld"}))
    assert system.startswith("<instructions>") and "<belief_text>" in user  # the project's tagged-block layout


def test_policy_reply_format_lines_are_read_from_the_release(monkeypatch, tmp_path):
    from pos.protocols import PolicyProtocol

    single = upstream_constant("PoS", REACT, "RCA100_SINGLE_ACTION_FORMAT").strip().split("\n")
    closing = upstream_constant("PoS", REACT, "SYSTEM_PROMPT").strip().split("\n")[-1]
    text = PolicyProtocol().description()
    assert text.startswith(single[0] + "\n") and single[2] in text and text.endswith("\n" + closing)
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    own = PolicyProtocol().description()
    assert single[0] not in own and closing not in own and '"thought"' in own
