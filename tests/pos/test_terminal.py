"""The end of a request as upstream PoS handles it: a belief-model failure on the step that ended
the case keeps the benchmark's result (upstream `_record_terminal_context_error`), a success on the
last step is labelled without a progress call, and no Belief Text is written after the end."""

from __future__ import annotations

import asyncio
from typing import Any

from pos.method import PoS
from runners.api import Decision, Environment, Message, Observation, Reply, Request, RequestOutcome
from runners.episode import Episode
from tests.pos.helpers import OneRoomEnv, QueueBackbone, act


class WinEnv(OneRoomEnv):
    """A room won by the `win_after`-th action (ALFWorld-like: the win ends the request)."""

    def __init__(self, win_after: int = 4, budget: int = 10) -> None:
        super().__init__(
            Request(
                index=0,
                request_id="toy-1/q1",
                text="You see a drawer 1.\nYour task is to: open drawer 1.",
                goal="open drawer 1.",
            ),
            budget,
        )
        self.win_after, self.actions = win_after, 0

    async def act(self, decision: Decision) -> Reply:
        self.actions += 1
        won = self.actions >= self.win_after
        return Reply(observation=Observation(note="You win." if won else "Nothing happens."), request_done=won)

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        return RequestOutcome(
            request=self.request, steps=steps, truncated=truncated, success=self.actions >= self.win_after
        )

    async def score_task(self) -> dict[str, Any]:
        return {"success": int(self.actions >= self.win_after), "actions": self.actions}

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        return act("open drawer 1") if role == "agent" else None


def _run(bb: QueueBackbone, env: Environment, **params: Any):
    ep = Episode(bb, cell="pos", task_id="toy-1")
    return asyncio.run(ep.run(env, PoS(ep.agent, **params)))


def count(bb: QueueBackbone, pname: str) -> int:
    return sum(1 for _, p, _ in bb.calls if p == pname)


def test_a_four_action_win_makes_three_progress_and_four_text_calls():
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")] * 4})
    rec = _run(bb, WinEnv(win_after=4))
    assert rec.status == "ok", rec.error
    assert rec.scores["success"] == 1
    assert count(bb, "pos-progress") == 3  # the winning action is labelled by the env's success
    assert count(bb, "pos-belief-text") == 4  # initialisation + 3 non-terminal updates, none after the win
    last = rec.requests[0].method["transitions"][-1]
    assert last["scoring_method"] == "execution_task_success" and last["progress"] == 1 and last["done"] is True


def test_terminal_belief_failure_keeps_the_benchmarks_result():
    garbage = ["not json"] * 2
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")], "pos-delta": garbage})
    rec = _run(bb, WinEnv(win_after=1))
    assert rec.status == "ok", rec.error
    assert rec.scores == {"success": 1, "actions": 1}  # the win stands
    errs = rec.requests[0].method["terminal_context_errors"]
    assert (
        len(errs) == 1
        and errs[0]["phase"] == "update"
        and errs[0]["error_type"] == "ContextFailure"
        and errs[0]["step"] == 0
    )


def test_belief_failure_before_the_end_is_still_a_case_error():
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")] * 3, "pos-delta": ["not json"] * 2})
    rec = _run(bb, WinEnv(win_after=3))
    assert rec.status == "harness_error" and "ContextFailure" in rec.error
