"""End to end through `runners.episode.Episode` with the scripted backbone on the MemoryArena
Formal Reasoning fixture (docs/flowstate.md §5): all three methods, and a task whose second subtask can only be
answered from an earlier request's state disclosed through PSA."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.memoryarena.formal import FormalEnv, FormalReasoning
from flowstate import FlowState, FlowStateNoISU, FlowStateNoPSA
from runners.api import Decision
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode


async def run_all(bench, method_cls, **params):
    bb = ScriptedBackbone()
    recs = []
    for task in bench.load_tasks():
        ep = Episode(bb, cell="test", task_id=task.task_id)
        recs.append(await ep.run(ep.make_env(bench, task), method_cls(ep.agent, **params)))
    return recs


@pytest.mark.parametrize("method_cls", [FlowState, FlowStateNoPSA, FlowStateNoISU])
def test_fixture_episode_all_correct(method_cls):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    recs = asyncio.run(run_all(bench, method_cls))
    assert len(recs) == 3
    for r in recs:
        assert r.status == "ok", r.error
        assert r.scores["subtask_correct"] and all(r.scores["subtask_correct"])
        assert r.scripted and set(r.usage_by_role) == {"agent", "judge"}
        for rr in r.requests:
            for s in rr.steps:
                assert not s.method["protocol_errors"] and s.method["delta_rejected"] == []
    assert bench.metrics([r.model_dump() for r in recs])["SR"] == 100.0


# ------------------------------------------------------------------ PSA-dependent task
ROW = {
    "id": 0,
    "paper_name": "fixture-hidden-constant",
    "backgrounds": ["A constant c is fixed by the lemma below.", ""],
    "questions": ["Determine the constant c.", "State the value of c found in the previous subtask."],
    "answers": ["c = 17", "c = 17"],
}


def _section(content: str, start: str, end: str) -> str:
    return content.split(start, 1)[1].split(end, 1)[0] if start in content else ""


class RecallEnv(FormalEnv):
    """Scripted participant for the second subtask: it answers only from content visible in the
    Active State; otherwise it requests an indexed state (if `request_access`) or guesses."""

    request_access = True

    def reference(self, role, messages):
        if role != "agent" or self.k == 0:
            return super().reference(role, messages)
        user = messages[-1]["content"]
        active = json.loads(_section(user, "Active State:\n", "\n</agent_status>") or "[]")
        for node in active:
            v = node.get("value")
            if isinstance(v, dict) and "final_answer" in v:
                return Decision(message=v["final_answer"])
        index = json.loads(_section(user, "Historical State Index:\n", "\n\nActive State:") or "[]")
        ids = [s["state_id"] for e in index for s in e["states"]]
        if ids and self.request_access:
            return Decision(
                extras={"state_focus": [{"target_id": ids[0], "reason": "need c from subtask 1"}], "state_delta": []}
            )
        return Decision(message="c = 0")


class NoAccessEnv(RecallEnv):
    request_access = False


class RecallBench(FormalReasoning):
    env_cls = RecallEnv

    def make_env(self, task, ctx):
        return self.env_cls(task, ctx, self.params)


def recall_bench(tmp_path, env_cls=RecallEnv):
    d = tmp_path / "formal_reasoning_math"
    d.mkdir(exist_ok=True)
    (d / "data.jsonl").write_text(json.dumps(ROW) + "\n")
    b = RecallBench(name="memoryarena_math", config="formal_reasoning_math", data_dir=str(tmp_path))
    b.env_cls = env_cls
    return b


def test_second_subtask_solved_only_through_psa_disclosure(tmp_path):
    [rec] = asyncio.run(run_all(recall_bench(tmp_path), FlowState))
    assert rec.status == "ok" and rec.scores["subtask_correct"] == [1, 1]
    q2 = rec.requests[1].steps
    first_id = rec.requests[0].steps[0].method["delta_validated"][0]["state_id"]
    assert q2[0].decision.is_empty and q2[0].method["disclosed"] == [first_id]  # z = ∅ while waiting
    assert q2[0].method["active_state_nodes"] == 0 and q2[1].method["active_state_nodes"] == 1
    assert q2[1].decision.message == "c = 17"

    [control] = asyncio.run(run_all(recall_bench(tmp_path, NoAccessEnv), FlowState))
    assert control.scores["subtask_correct"] == [1, 0]  # without disclosure the answer is not available


def test_no_psa_holds_history_in_active_state(tmp_path):
    [rec] = asyncio.run(run_all(recall_bench(tmp_path), FlowStateNoPSA))
    assert rec.status == "ok" and rec.scores["subtask_correct"] == [1, 1]
    q2 = rec.requests[1].steps
    assert len(q2) == 1 and q2[0].method["active_state_nodes"] == 1 and q2[0].method["access"]["requested"] == []
