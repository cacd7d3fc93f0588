"""HiAgent on Raw's loop (docs/pos-baselines.md §4, our implementation): subgoals as memory chunks.

The policy writes a `<subgoal>` before its action. A subgoal whose normalised text (casefold,
collapsed whitespace) differs from the current one closes the current chunk: one summarizer call
(role "memory") turns its action–observation pairs into one line plus met / not met; if that
fails, the chunk's last observation stands in. The prompt holds the task, the numbered past
subgoals with their summaries, the current subgoal with its raw steps, and the latest
observation. `retrieve_subgoal(index)` puts one past chunk's full pairs into the next prompt only.
A subgoal that is never closed degenerates to Raw."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from baselines.pos_baselines.common import PosBaseline, Turn, aux_messages, render_turn
from baselines.pos_baselines.config import BaselineConfig
from baselines.pos_baselines.protocols import (
    RELEASE_SUBGOAL_RULE,
    ReleaseSubgoalProtocol,
    SubgoalProtocol,
    SubgoalSummaryReply,
)
from runners.api import Backbone, Decision, Observation, Request, RequestOutcome, TaskView, ToolCall, ToolSpec

RETRIEVE = ToolSpec(
    name="retrieve_subgoal",
    description="Show the full action-observation record of a past subgoal. Costs no "
    "environment action; the record appears in your next prompt only.",
    parameters={
        "type": "object",
        "properties": {"index": {"type": "integer", "description": "the past subgoal's number"}},
        "required": ["index"],
    },
)

SUMMARIZER = """You summarize the work an agent did on one subgoal. From its actions and observations, write ONE line \
that
states what was done and what was found or changed (keep exact names and values), and say whether the subgoal was met.
Use only what the observations show."""


def normalize(subgoal: str) -> str:
    return re.sub(r"\s+", " ", subgoal.casefold()).strip()


@dataclass
class Chunk:
    index: int  # 1-based over the task
    subgoal: str
    request: int
    turns: list[Turn] = field(default_factory=list)
    summary: str | None = None
    met: bool | None = None


class HiAgentConfig(BaselineConfig):
    summarize: bool = True  # false = the chunk's last observation is its summary (the reconstruction's disabled mode)
    retrieval: bool = True  # the retrieve_subgoal action
    close_on_request_end: bool = (
        True  # [harness choice] multi-request tasks: the open subgoal is summarised when its request ends
    )


class HiAgent(PosBaseline):
    own_texts = ("summarizer", "retrieve_tool")
    config_cls = HiAgentConfig
    base_cfg: HiAgentConfig
    cfg: HiAgentConfig
    method_name = "hiagent"
    lookup_tool = RETRIEVE
    release_protocol_cls = ReleaseSubgoalProtocol
    release_system_rule = RELEASE_SUBGOAL_RULE

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        super().__init__(backbone, **params)
        self.protocol = SubgoalProtocol()
        self.summary_protocol = SubgoalSummaryReply()

    def lookup_enabled(self) -> bool:
        return self.cfg.retrieval

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.chunks: list[Chunk] = []
        self.current: Chunk | None = None

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if not self.cfg.carry_across_requests:
            self.chunks, self.current = [], None

    async def step(self, observation: Observation) -> Decision:
        self.log: dict[str, Any] = {}
        obs = self.obs_text(observation)
        self.attach(obs)
        decision = await self.decide(
            lambda: self.policy_messages(
                [
                    ("past_subgoals", self.render_past()),
                    (
                        "current_subgoal",
                        self.current.subgoal if self.current else "(none yet: state your first subgoal)",
                    ),
                    (
                        "current_subgoal_steps",
                        self.render_turns(self.current.turns) if self.current and self.current.turns else "(none yet)",
                    ),
                    ("latest_observation", obs or "(no observation yet)"),
                    ("user_query", self.request.text),
                ]
            )
        )
        subgoal = decision.extras.get("subgoal")
        if self.current is None or (subgoal and normalize(subgoal) != normalize(self.current.subgoal)):
            if self.current is not None:
                await self.close(self.current)
                self.log["subgoal_switch"] = {
                    "closed": self.current.index,
                    "summary": self.current.summary,
                    "met": self.current.met,
                }
            self.current = Chunk(
                index=len(self.chunks) + 1, subgoal=subgoal or "(unstated)", request=self.request.index
            )
            self.chunks.append(self.current)
        self.current.turns.append(self.record(decision))
        self.log["subgoal"] = {"index": self.current.index, "text": self.current.subgoal}
        return decision

    async def close(self, chunk: Chunk) -> None:
        """Observation summarization of a finished subgoal (one line + met)."""
        last = next((t.observation for t in reversed(chunk.turns) if t.observation), "(no observation)")
        out = None
        if self.cfg.summarize and chunk.turns:
            pairs = "\n".join(render_turn(t) for t in chunk.turns)
            msgs = aux_messages(
                SUMMARIZER,
                self.summary_protocol,
                [("task", self.request.text), ("subgoal", chunk.subgoal), ("steps", pairs)],
            )
            out = await self.aux(
                msgs,
                self.summary_protocol,
                role="memory",
                call="subgoal_summary",
                fallback=lambda: {"summary": last.splitlines()[0][:300], "subgoal_met": False},
            )
        line = (out["summary"].strip().splitlines() or [""])[0] if out else ""
        chunk.summary, chunk.met = (line, out["subgoal_met"]) if line and out else (last, None)

    def render_past(self) -> str:
        past = [c for c in self.chunks if c is not self.current]
        if not past:
            return "(none)"
        met = {True: "met", False: "not met", None: "unknown"}
        return "\n".join(
            f"{c.index}. {c.subgoal} [{met[c.met]}] {c.summary}"
            + (f" (request {c.request + 1})" if c.request != self.request.index else "")
            for c in past
        )

    def resolve_lookup(self, call: ToolCall) -> str:
        idx = call.arguments.get("index")
        hit = next(
            (c for c in self.chunks if isinstance(idx, int) and not isinstance(idx, bool) and c.index == idx), None
        )
        if hit is None:
            return f"retrieve_subgoal({idx!r}): no subgoal with that number."
        return f"Full record of subgoal {idx} ({hit.subgoal}):\n" + "\n".join(render_turn(t) for t in hit.turns)

    async def end_request(self, outcome: RequestOutcome) -> None:
        await super().end_request(outcome)
        if self.cfg.close_on_request_end and self.current is not None:
            self.log = {}
            await self.close(self.current)
            self.current = None

    def request_log(self) -> dict[str, Any]:
        return {
            "subgoals": [
                {"index": c.index, "subgoal": c.subgoal, "steps": len(c.turns), "summary": c.summary, "met": c.met}
                for c in self.chunks
            ]
        }
