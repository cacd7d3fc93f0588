"""FlowState on τ-bench with user messages (docs/flowstate.md §5 'Mapping final response', [harness choice]
user_turn_mode=request): each simulated-user message opens a new request, the agent's message to
the user ends it. Real TauEnv on the project's own τ fixture, scripted backbone, real episode loop."""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.tau.benchmark import TauBenchmark
from benchmarks.tau.env import TauEnv
from flowstate import FlowState, FlowStateNoISU
from runners.api import Decision
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode

QUESTION = "Before I start: shall I go ahead with your request?"


class AskFirstEnv(TauEnv):
    """The scripted agent first asks the user a question, then follows the gold actions."""

    def reference(self, role, messages):
        if role == "agent" and not any(m["role"] == "assistant" and m is not self.traj[0] for m in self.traj):
            return Decision(message=QUESTION)
        return super().reference(role, messages)


class Bench(TauBenchmark):
    def make_env(self, task, ctx):
        return AskFirstEnv(self.data(), task, ctx, self.params)


class Prompts(ScriptedBackbone):
    """Scripted backbone that keeps the agent prompts."""

    def __init__(self) -> None:
        super().__init__()
        self.agent = []

    async def complete(self, messages, *, role, **kw):
        if role == "agent":
            self.agent.append(messages[-1]["content"])
        return await super().complete(messages, role=role, **kw)


def episode(method_cls, requests="dialogue"):
    bench = Bench(name="tau_airline", domain="airline", data_dir="fixtures", task_ids=["0"], requests=requests)
    task = bench.load_tasks()[0]
    bb = Prompts()
    ep = Episode(bb, cell="t", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), method_cls(ep.agent)))
    return rec, bb.agent


def _block(prompt: str, tag: str) -> str:
    return prompt.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]


def test_user_reply_opens_a_new_request_with_the_previous_turn_indexed():
    rec, prompts = episode(FlowState)
    assert rec.status == "ok" and rec.scores["success"], rec.error
    steps = [s for rr in rec.requests for s in rr.steps]
    assert steps[0].decision.message == QUESTION and steps[0].method["query_id"] == "airline-0/q1"
    first_turn = steps[0].method["delta_validated"][0]["state_id"]
    turn2 = steps[1]
    assert turn2.observation.user_message is not None
    assert turn2.method["new_request"] == "airline-0/q1/u1" and turn2.method["persisted"] == [first_turn]
    assert turn2.method["t"] == 1 and turn2.method["active_state_nodes"] == 0  # S_{k,1} = ∅
    p = prompts[1]
    assert _block(p, "user_query") == turn2.observation.user_message
    assert _block(p, "latest_observation") == "(empty)"  # O_{k,1} = ∅: the user reply is the query, not an observation
    assert '"query_id": "airline-0/q1"' in p and f'"state_id": "{first_turn}"' in p  # the earlier turn is in G_k
    assert {s.method["query_id"] for s in steps[1:]} == {"airline-0/q1/u1"}
    assert rec.requests[-1].method["persisted"]  # the last turn is persisted at the env's request end


def test_no_isu_trajectory_does_not_repeat_the_user_query_as_an_observation():
    rec, prompts = episode(FlowStateNoISU)
    assert rec.status == "ok" and rec.scores["success"], rec.error
    steps = [s for rr in rec.requests for s in rr.steps]
    reply = steps[1].observation.user_message
    later = [p for p, s in zip(prompts, steps) if s.method["query_id"] == "airline-0/q1/u1"][1:]
    assert later, "the second turn needs at least two steps"
    for p in later:
        traj = _block(p, "trajectory_history")
        assert reply not in traj and reply in _block(p, "user_query")  # only as the request's user query, once
    node = steps[1].method["persisted"][0]
    assert node == "response-airline-0/q1"  # rule-built node of the first turn, from its final message


@pytest.mark.parametrize("method_cls", [FlowState, FlowStateNoISU])
def test_env_level_user_turn_requests_also_work(method_cls):
    rec, _ = episode(method_cls, requests="user_turn")
    assert rec.status == "ok" and rec.scores["success"], rec.error
    assert [rr.request.request_id for rr in rec.requests] == ["airline-0/q1", "airline-0/q2"]
    assert [rr.method["persisted"] != [] for rr in rec.requests] == [True, True]
