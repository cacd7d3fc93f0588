"""Whole episodes through `runners.episode.Episode` with the scripted backbone: the four PoS
configs on the MemoryArena fixture, and a looping room where PoS must diagnose a trap and
recover (docs/pos.md §7–§10)."""

from __future__ import annotations

from runners.config import group_config

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.memoryarena.formal import FormalReasoning
from pos.method import PoS
from pos.recovery import GENERIC_TEXT
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.pos.helpers import LoopEnv
from tests.conftest import upstream_src

REPO = Path(__file__).resolve().parents[2]
METHODS = ("pos", "pos_no_consistency", "pos_no_trapping", "pos_generic_recovery")


def params(name: str) -> dict:
    cfg = group_config("method", name)
    assert cfg["name"] == name and cfg["_target_"] == "pos.method.PoS"
    return cfg["params"]


class Spy(ScriptedBackbone):
    """The scripted backbone, keeping every prompt it was sent."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.seen: list[tuple[str, str | None, list]] = []

    async def complete(self, messages, *, role, protocol=None, attempt=0, **s):
        self.seen.append((role, protocol.name if protocol else None, messages))
        return await super().complete(messages, role=role, protocol=protocol, attempt=attempt, **s)


def run(env, method_name: str, inner: ScriptedBackbone):
    ep = Episode(inner, cell=method_name, task_id="t")
    method = PoS(ep.agent, **params(method_name))
    rec = asyncio.run(ep.run(env, method))
    return rec, method


def fixture_episode(name: str, malformed: float, **overrides):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    inner = ScriptedBackbone(malformed_rate=malformed)
    ep = Episode(inner, cell=name, task_id=task.task_id)
    env = ep.make_env(bench, task)
    method = PoS(ep.agent, **(params(name) | overrides))
    return asyncio.run(ep.run(env, method)), task


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("malformed", [0.0, 1.0])
def test_memoryarena_fixture_episode_completes(name, malformed):
    """malformed=0: the scripted answers are right. malformed=1 with `context_failure:
    keep_belief`: every reply of every role is garbage: the episode still completes, non-terminal
    turns get (failed) belief updates and progress calls, and the errors are recorded, never raised."""
    rec, task = fixture_episode(name, malformed, context_failure="keep_belief")
    assert rec.status == "ok", rec.error
    assert len(rec.scores["subtask_correct"]) == len(task.payload["questions"])
    json.dumps(rec.model_dump())  # the record (step logs included) is JSON-serialisable
    steps = [s for r in rec.requests for s in r.steps]
    if malformed == 0.0:
        assert rec.scores["subtask_correct"] == [1] * len(task.payload["questions"])
        # one turn per request: the initialisation is audited unless consistency validation is off
        roles = {"agent", "state"} | ({"sentinel"} if name != "pos_no_consistency" else set())
        assert set(rec.usage_by_role) - {"judge"} == roles
    else:
        assert {"agent", "state", "sentinel"} <= set(rec.usage_by_role) and all(
            rec.usage_by_role[r].total > 0 for r in ("agent", "state", "sentinel")
        )
        assert len(steps) == 4 * len(task.payload["questions"])  # budget 4 per request, no answer ever parses
        later = [s.method for s in steps if s.method["update"]["step"] >= 0]
        assert later and all(u["update"]["status"] == "rejected" for u in later)
        assert all(any(e["call"] == "delta" and e["kind"] == "bad_json" for e in u["protocol_errors"]) for u in later)
        assert all(s.method["belief"]["world"] == {"entities": {}, "states": {}, "relations": {}} for s in steps)


@pytest.mark.parametrize("name", METHODS)
def test_context_failure_is_a_case_error_by_default(name):
    """§2.5: a belief model that never yields a buildable belief ends the case as an error (upstream
    raises and reruns the case) instead of acting on an empty belief; the record names the switch."""
    rec, _ = fixture_episode(name, 1.0)
    assert (
        rec.status == "harness_error" and "ContextFailure" in rec.error and "context_failure: keep_belief" in rec.error
    )
    assert not rec.scores  # never scored as an agent failure


def test_pos_diagnoses_static_trap_and_recovers_in_the_prompt():
    spy = Spy()
    rec, m = run(LoopEnv(budget=12), "pos", spy)
    assert rec.status == "ok", rec.error
    steps = rec.requests[0].steps
    # transitions 0..7 are processed at steps 2..9; the 8th verified label arrives at step 9
    assert all(not s.method.get("health", {}).get("trapped") for s in steps[:8])
    h = steps[8].method["health"]
    assert (
        h["trapped"]
        and h["health_score"] == 0.0
        and h["trapping_pattern"] == "static"
        and h["gap_dimension"] == "achievement"
    )
    started = steps[8].method["recovery_started"]
    assert started["recovery_gap"]["target"] == "complete the current request"
    upstream_src()  # the release's recovery sentences are read from upstream's recoveryPlanning.py
    from pos.release_texts import load, recovery_instruction
    from runners.upstream import TextSources

    texts = load(TextSources())  # the release's recovery sentences (belief_prompts: release), filled
    assert started["instruction"] == recovery_instruction(
        texts, "static", "achievement", "complete the current request", detail="look", period=None
    )
    assert '("look")' in started["instruction"] and started["instruction"].endswith("complete the current request")
    assert started["applies_from_step"] == 8
    policy_prompts = [msgs[-1]["content"] for role, p, msgs in spy.seen if p == "pos-policy"]
    assert "<recovery_constraint>" not in policy_prompts[7] and "<recovery_constraint>" in policy_prompts[8]
    assert all("Nothing happens." not in p.split("<latest_observation>")[0] for p in policy_prompts)
    # still trapped afterwards ⇒ rediagnosed each label (the budget's last action is updated at the
    # request end from the environment's final answer); the episode end closes the last one
    assert [r["ended_reason"] for r in m.recoveries] == ["rediagnosed"] * 4 + ["task_terminal"]
    final = rec.requests[0].method["final_update"]
    assert final["health"]["trapped"] and len(m.transitions) == 12  # all 12 actions got their update
    assert m.recoveries[0]["recovery_action_steps"] == [8]
    # the Active Gap is never changed by recovery
    assert {json.dumps(s["frontier"]) for s in m.snapshots} == {
        json.dumps({"gap_type": "achievement", "target": "complete the current request"})
    }


def test_policy_sees_no_raw_history():
    spy = Spy()
    env = LoopEnv(budget=4)
    rec, _ = run(env, "pos", spy)
    last = [msgs for role, p, msgs in spy.seen if p == "pos-policy"][-1]
    text = "\n".join(m["content"] for m in last)
    assert text.count("Nothing happens.") == 1  # only as the latest observation
    assert "look" not in text.split("<latest_observation>")[1]  # no past actions


def test_no_trapping_scores_progress_but_never_recovers():
    spy = Spy()
    rec, m = run(LoopEnv(budget=12), "pos_no_trapping", spy)
    assert rec.status == "ok"
    assert sum(1 for _, p, _ in spy.seen if p == "pos-progress") == 12  # every action, the last one at the request end
    assert all("health" not in s.method and "recovery_started" not in s.method for s in rec.requests[0].steps)
    assert not m.recoveries


def recovery_blocks(spy: Spy) -> list[dict]:
    prompts = [msgs[-1]["content"] for _, p, msgs in spy.seen if p == "pos-policy"]
    return [
        json.loads(p.split("<recovery_constraint>\n")[1].split("\n</recovery_constraint>")[0])
        for p in prompts
        if "<recovery_constraint>" in p
    ]


def test_generic_recovery_uses_the_fixed_text():
    spy = Spy()
    rec, m = run(LoopEnv(budget=10), "pos_generic_recovery", spy)
    assert rec.status == "ok" and m.recoveries and all(r["instruction"] == GENERIC_TEXT for r in m.recoveries)
    # §10: the generic prompt is pattern- and gap-agnostic: no diagnosis reaches the policy (it is still recorded)
    shown = recovery_blocks(spy)
    assert shown and all(c["instruction"] == GENERIC_TEXT for c in shown)
    assert all(
        not {"trapping_pattern", "gap_dimension", "recovery_gap", "recovery_frontier", "trigger_frontier"} & set(c)
        for c in shown
    )
    assert m.recoveries[0]["trapping_pattern"] == "static" and m.recoveries[0]["recovery_gap"]
    spy = Spy()
    run(LoopEnv(budget=10), "pos", spy)
    composed = recovery_blocks(spy)
    assert (
        composed
        and composed[0]["trapping_pattern"] == "static"
        and composed[0]["recovery_gap"]["gap_type"] == "achievement"
    )


def test_no_consistency_makes_no_audit_calls():
    spy = Spy()
    rec, m = run(LoopEnv(budget=10), "pos_no_consistency", spy)
    assert rec.status == "ok" and not [1 for _, p, _ in spy.seen if p == "pos-audit"]
    assert m.recoveries  # trapping and recovery stay on


def test_bad_params_name_the_fix():
    with pytest.raises(ValueError, match="conf/method/pos.yaml"):
        PoS(ScriptedBackbone(), sentinal={"enabled": False})


def test_rca_last_turn_prompt_carries_the_forced_submission_directive_once(tmp_path):
    """§4: on RCA-100 the last-turn directive reaches the PoS policy as part of the latest observation
    (the diagnostic environment appends it; PoS `forced_submission` stays off, so it is not doubled)."""
    upstream_src()  # the directive's text is upstream's RCA100_FINAL_TURN_DIRECTIVE
    from benchmarks.rca100.benchmark import Rca100
    from benchmarks.rca100.synth import write_fixture
    from tests.pos.helpers import QueueBackbone

    bench = Rca100(name="rca100", data_dir=str(write_fixture(tmp_path)), max_steps=3)
    task = bench.load_tasks()[0]
    bb = QueueBackbone()  # the policy never submits (empty turns); belief calls get minimal valid replies
    ep = Episode(bb, cell="pos", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), PoS(ep.agent, **params("pos"))))
    assert rec.status == "ok", rec.error
    prompts = [m[-1]["content"] for _, p, m in bb.calls if p == "pos-policy" and len(m) == 2]  # first ask of each turn
    assert len(prompts) == 3 and [p.count("This is the final interaction turn") for p in prompts] == [0, 0, 1]
    reasks = [
        m for _, p, m in bb.calls if p == "pos-policy" and len(m) == 4
    ]  # upstream's missing-action re-ask, once per turn
    assert len(reasks) == 3 and all(m[2]["role"] == "assistant" and "executable" in m[3]["content"] for m in reasks)
    from pos.release_prompt import REACT_PROMPT
    from runners.upstream import py_fstring_parts

    parts = py_fstring_parts(REACT_PROMPT, "build_belief_prompt", "user_prompt")  # the release's policy prompt
    i = parts.index(("field", "state['observation']"))
    latest = prompts[-1].split(parts[i - 1][1])[1].split(parts[i + 1][1])[0]
    assert (
        "This is the final interaction turn" in latest and prompts[-1].count("This is the final interaction turn") == 1
    )
