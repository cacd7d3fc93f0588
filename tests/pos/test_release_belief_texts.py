"""PoS's belief model, Belief Text, Sentinel and recovery send the release's texts
(prompts/prompt_generation.py, prompts/beliefSentinel_prompt.py, belief/recoveryPlanning.py) byte for
byte, as read back from a scripted sweep's records (LOCA's fixture: execution mode, so the
progress judge is asked too; RCA-100: diagnostic); recovery's sentences are the release's
`_pattern_constraint` / `compose_recovery_instruction` ones, filled."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

from pos.method import PoS
from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls, upstream_constant, upstream_file

GEN, SEN, REC = "prompts/prompt_generation.py", "prompts/beliefSentinel_prompt.py", "belief/recoveryPlanning.py"


def fstring_regex(path: str, func: str, var: str) -> re.Pattern[str]:
    tree = ast.parse(upstream_file("PoS", path).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
    node = next(n for n in ast.walk(fn) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == var)
    return re.compile(
        "".join(re.escape(v.value) if isinstance(v, ast.Constant) else "(.*?)" for v in node.value.values), re.DOTALL
    )


def function_constants(path: str, func: str) -> list[str]:
    """The plain string constants (implicit concatenation folded) written in a function."""
    tree = ast.parse(upstream_file("PoS", path).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
    return [
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and " " in n.value and n is not fn.body[0].value
    ]


def test_scripted_sweep_sends_the_release_belief_and_sentinel_texts(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "method=pos",
        "backbone=scripted",
        "++experiment.grid.benchmark=[loca,rca100]",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        "experiment.name=pos_belief",
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    belief, text = (
        upstream_constant("PoS", GEN, "BELIEF_SYSTEM_PROMPT"),
        upstream_constant("PoS", GEN, "BELIEF_TEXT_SYSTEM_PROMPT"),
    )
    consistency, progress = (
        upstream_constant("PoS", SEN, "CONSISTENCY_SYSTEM_PROMPT"),
        upstream_constant("PoS", SEN, "PROGRESS_SYSTEM_PROMPT"),
    )
    init, update = (
        fstring_regex(GEN, "build_initial_belief_prompt", "user"),
        fstring_regex(GEN, "build_belief_update_prompt", "user"),
    )
    audit_reply = function_constants(SEN, "build_local_audit_prompt")[0]
    progress_tail = (
        "\n"
        + upstream_constant("PoS", SEN, "EXECUTION_PROGRESS_EXAMPLE")
        + function_constants(SEN, "build_execution_progress_prompt")[0]
    )
    seen: dict[str, int] = {}
    for cell in (tmp_path / "pos_belief").glob("pos__scripted__*"):
        for call in cell_calls(cell):
            if call.role not in ("state", "sentinel"):
                continue
            system, user = call.messages[0]["content"], call.messages[1]["content"]
            if system == belief:
                kind = "init" if init.fullmatch(user) else "update" if update.fullmatch(user) else None
                assert kind, user[:400]
            elif system == text:
                kind = "belief_text"
            elif system == consistency:
                assert user.endswith(audit_reply)
                kind = "audit"
            elif system == progress:
                assert user.endswith(progress_tail)
                kind = "progress"
            else:
                raise AssertionError(
                    f"a {call.role} call sent a system prompt that is not the release's: {system[:200]}"
                )
            seen[kind] = seen.get(kind, 0) + 1
    assert {"init", "update", "belief_text", "audit", "progress"} <= set(seen), seen


def test_recovery_sentences_are_the_releases():
    """Ours against the release's own `compose_recovery_instruction`, run from the shared copy."""
    upstream_file("PoS", REC)  # skips without upstream-src
    from pos.release_texts import load, recovery_instruction
    from runners.upstream import TextSources

    texts = load(TextSources())
    assert texts is not None
    ns: dict = {}
    exec(compile(upstream_file("PoS", REC).read_text(), "recoveryPlanning.py", "exec"), ns)  # noqa: S102
    cases = [
        ("static", "epistemic", "which drawer", "open drawer 1", None),
        ("static", "achievement", "key in box", None, None),
        ("cycle", "achievement", "key in box", [{"step": 1, "action": "go to desk 1"}], 3),
        ("drift", "epistemic", "x", None, None),
        (None, "achievement", "y", None, None),
    ]
    for pattern, gap_type, target, detail, period in cases:
        want = ns["compose_recovery_instruction"](
            pattern=pattern,
            gap_type=gap_type,
            gap={"target": target},
            recurrence_period=period,
            recent_transitions=[{"action": detail}] if pattern == "static" else [],
            cycle_transitions=detail if pattern == "cycle" else None,
        )
        assert recovery_instruction(texts, pattern, gap_type, target, detail=detail, period=period) == want


def test_offline_the_project_wording_is_used_and_listed(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    notes = PoS.notes({})["text_sources"]
    for key in ("pos.belief.system", "pos.sentinel.consistency_system", "pos.recovery.pattern", "pos.recovery.gap"):
        assert key in notes["paraphrased"]


def test_generic_recovery_is_labelled_the_projects_own():
    notes = PoS.notes({"recovery": {"mode": "generic"}})["text_sources"]
    assert (
        notes["prompts"]["pos.recovery.generic"]["source"] == "project"
        and "pos.recovery.generic" not in notes["paraphrased"]
    )
