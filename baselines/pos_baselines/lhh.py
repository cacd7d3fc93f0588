"""LongHorizon-Harness on the benchmark's actions (docs/pos-baselines.md §5, our implementation).

Rounds of plan → act → verify → checkpoint:
1. Manager (role "state": it maintains the task state) reads {goal, verified_progress,
   failure_evidence, remaining_work} and the latest observation, and picks one bounded next step
   with a done criterion (or declares the task complete).
2. Executor (role "agent") acts from a fresh context: the task, the step and criterion, verified
   progress, the latest observation and only its own steps of this round; at most
   `executor_max_actions` environment actions, or until it claims the step is done.
3. Auditor (role "state") reads the round's raw trajectory and the claim and accepts (summary →
   verified_progress) or rejects (evidence → failure_evidence). It takes no environment actions.
Each `step` returns exactly one executor decision; manager and auditor calls happen inside it."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Literal

from baselines.pos_baselines.common import PosBaseline, Turn, aux_messages, render_turn
from baselines.pos_baselines.config import BaselineConfig
from baselines.pos_baselines.protocols import (
    RELEASE_EXECUTOR_RULE,
    AuditorReply,
    ExecutorProtocol,
    ManagerReply,
    ReleaseExecutorProtocol,
)
from runners.api import Backbone, Decision, Message, Observation, Parsed, Request, RequestOutcome, TaskView
from kit.prompting import tools_text

MANAGER = """You are the manager of a long-horizon agent. Reconstruct the situation from the goal, the VERIFIED progress
(only audited results count), the failure evidence and the latest observation. Then choose ONE bounded next step that an
executor can finish in a few actions, and say how to tell it is done. Do not repeat a step the evidence shows failed
without changing the approach. Set task_complete to true only when the verified progress shows the goal is achieved."""

AUDITOR = """You are the auditor of a long-horizon agent. Judge the executor's round from the observations in its raw
trajectory, not from its claim. Accept only if the observations show the assigned step's done criterion is met. Give the
evidence you relied on, and a one-line summary of the verified outcome (what is now true)."""

FINALIZE = "The manager judges the task complete: deliver the final answer or submission now, as the task requires."


@dataclass
class Round:
    index: int
    next_step: str
    done_criterion: str
    turns: list[Turn] = field(default_factory=list)
    actions: int = 0
    claim: str | None = None
    closing: bool = False


class LhhConfig(BaselineConfig):
    executor_max_actions: int = 8  # [harness choice] environment actions per executor round
    max_rounds: int = 25  # README [run] max_rounds (per request here)
    on_max_rounds: Literal["stop", "continue"] = (
        "stop"  # [harness choice] stop = no further calls, empty turns; continue = last round runs on uncapped
    )
    max_rounds_per_step: int = 3  # [harness choice] rounds that may close without an environment action inside one step
    complete_requires_submission: bool = (
        False  # §5: RCA/ClinDiag may declare completion only after a submission (see overrides)
    )
    submission_tools: str = "submit*"  # fnmatch of the tools that count as a submission
    on_manager_complete: Literal["finalize", "ignore"] = (
        "finalize"  # [harness choice] finalize = the next step asks for the final answer
    )


class LongHorizonHarness(PosBaseline):
    own_texts = ("manager", "auditor", "finalize")
    config_cls = LhhConfig
    base_cfg: LhhConfig
    cfg: LhhConfig
    method_name = "longhorizon_harness"
    release_protocol_cls = ReleaseExecutorProtocol
    release_system_rule = RELEASE_EXECUTOR_RULE

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        super().__init__(backbone, **params)
        self.protocol = ExecutorProtocol()
        self.manager_protocol, self.auditor_protocol = ManagerReply(), AuditorReply()

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.verified: list[str] = []

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if not self.cfg.carry_across_requests:
            self.verified = []
        self.evidence: list[str] = []
        self.remaining = "the whole task"
        self.round: Round | None = None
        self.rounds: list[dict[str, Any]] = []
        self.stopped = False
        self.submitted = False
        self.obs = ""

    def usable(self, parsed: Parsed) -> bool:
        return not parsed.decision.is_empty or bool(parsed.decision.extras.get("step_done"))

    async def step(self, observation: Observation) -> Decision:
        self.log: dict[str, Any] = {}
        self.obs = self.obs_text(observation)
        self.attach(self.obs)
        for _ in range(self.cfg.max_rounds_per_step + 1):
            if self.stopped:
                self.log["stopped"] = "max_rounds"
                return Decision()
            if self.round is not None and self.round.closing:
                await self.audit()
            if self.round is None and not await self.open_round():
                continue
            decision = await self.decide(self.executor_messages)
            r = self.round
            assert r is not None  # opened above
            if decision.extras.get("step_done") and self.cap_applies():
                r.claim, r.closing = decision.extras.get("claim", ""), True
            if decision.is_empty and r.closing:
                continue  # a claim without an action: audit it now
            r.turns.append(self.record(decision))
            r.actions += max(1, len(decision.tool_calls))
            self.submitted |= any(fnmatch.fnmatch(c.name, self.cfg.submission_tools) for c in decision.tool_calls)
            if r.actions >= self.cfg.executor_max_actions and self.cap_applies():
                r.closing = True
            self.log["round"] = {"index": r.index, "actions": r.actions, "closing": r.closing}
            return decision
        self.log["round_limit_in_step"] = True
        return Decision()

    def cap_applies(self) -> bool:
        """After max_rounds with on_max_rounds=continue, the last round is never closed."""
        return not (self.cfg.on_max_rounds == "continue" and len(self.rounds) >= self.cfg.max_rounds)

    def state_blocks(self) -> list[tuple[str, str]]:
        numbered = lambda xs: "\n".join(f"{i}. {x}" for i, x in enumerate(xs, 1)) or "(none)"  # noqa: E731
        return [
            ("goal", self.request.text),
            ("verified_progress", numbered(self.verified)),
            ("failure_evidence", numbered(self.evidence)),
            ("remaining_work", self.remaining),
        ]

    async def open_round(self) -> bool:
        """Manager call → a new round; False when max_rounds stops the request."""
        if len(self.rounds) >= self.cfg.max_rounds:
            self.stopped = self.cfg.on_max_rounds == "stop"
            return False
        msgs = aux_messages(
            f"{MANAGER}\n\nTask policy:\n{self.task.policy or 'none'}\n\nThe executor's "
            f"tools:\n{tools_text(self.task.tools)}",
            self.manager_protocol,
            [*self.state_blocks(), ("latest_observation", self.obs or "(no observation yet)")],
        )
        out = (
            await self.aux(msgs, self.manager_protocol, role="state", call="manager") or self.manager_protocol.minimal()
        )
        step, criterion = out["next_step"], out["done_criterion"]
        complete = out["task_complete"]
        if complete and self.cfg.complete_requires_submission and not self.submitted:
            self.log["completion_refused"] = "no submission yet"
            complete = False
        if complete and self.cfg.on_manager_complete == "finalize":
            step, criterion = FINALIZE, "The final answer or submission has been delivered."
        self.remaining = out["remaining_work"] or self.remaining
        self.round = Round(index=len(self.rounds) + 1, next_step=step, done_criterion=criterion)
        self.rounds.append(
            {"index": self.round.index, "next_step": step, "done_criterion": criterion, "task_complete": complete}
        )
        self.log["manager"] = self.rounds[-1]
        return True

    def executor_messages(self) -> list[Message]:
        r = self.round
        assert r is not None  # called inside an open round
        return self.policy_messages(
            [
                ("verified_progress", "\n".join(f"{i}. {x}" for i, x in enumerate(self.verified, 1)) or "(none)"),
                ("assigned_step", f"{r.next_step}\nDone when: {r.done_criterion}"),
                ("round_steps", self.render_turns(r.turns) if r.turns else "(none yet in this round)"),
                ("latest_observation", self.obs or "(no observation yet)"),
                ("user_query", self.request.text),
            ]
        )

    async def audit(self) -> None:
        r = self.round
        assert r is not None  # audits the open round
        trajectory = "\n".join(render_turn(t) for t in r.turns) or "(the executor took no action)"
        msgs = aux_messages(
            AUDITOR,
            self.auditor_protocol,
            [
                ("goal", self.request.text),
                ("assigned_step", r.next_step),
                ("done_criterion", r.done_criterion),
                (
                    "executor_claim",
                    r.claim
                    if r.claim is not None
                    else f"(no claim: the round hit {self.cfg.executor_max_actions} actions)",
                ),
                ("round_trajectory", trajectory),
            ],
        )
        last = r.turns[-1] if r.turns else None
        fallback = {
            "accepted": bool(r.turns),
            "evidence": (last.observation or "")[:300] if last else "no action was taken",
            "summary": f"Round {r.index}: " + "; ".join(t.action for t in r.turns)[:300],
        }
        out = await self.aux(msgs, self.auditor_protocol, role="state", call="auditor", fallback=lambda: fallback)
        verdict = out or {"accepted": False, "evidence": "the auditor gave no usable verdict", "summary": ""}
        if verdict["accepted"]:
            self.verified.append(verdict["summary"] or r.next_step)
        else:
            self.evidence.append(f"Step '{r.next_step}' not verified: {verdict['evidence']}")
        self.rounds[r.index - 1].update(
            accepted=verdict["accepted"],
            evidence=verdict["evidence"],
            summary=verdict["summary"],
            actions=r.actions,
            claim=r.claim,
        )
        self.log["audit"] = self.rounds[r.index - 1]
        self.round = None

    async def end_request(self, outcome: RequestOutcome) -> None:
        await super().end_request(outcome)
        if self.cfg.carry_across_requests:
            final = outcome.final_response if outcome.final_response is not None else "(none)"
            self.verified.append(f"Request {self.request.index + 1} ended; final response: {final}")

    def request_log(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "verified_progress": list(self.verified),
            "failure_evidence": list(self.evidence),
            "stopped": self.stopped,
        }
