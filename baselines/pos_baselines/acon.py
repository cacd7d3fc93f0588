"""ACON on Raw's loop (docs/pos-baselines.md §2, our implementation): a fixed generic guideline, the
backbone as compressor (no guideline optimisation, no distillation — as PoS ran it).

- Observation rule: an observation over `obs_threshold_tokens` is compressed, given the task and
  the current summary, before it enters the context; the raw text stays only in the episode record.
- History rule: before each policy call, if `Previous steps` (summary + raw turns) exceed
  `history_threshold_tokens`, every raw turn but the last `keep_last_turns` is folded together with
  the previous summary into one new summary (a rolling summary).
Compressor calls use role "memory" (context compression, not the task state). Tokens are counted
with the harness's offline o200k tokenizer (runners.tokens), not the backbone's own. The
benchmark's caps and LOCA's artifact replacement act inside the environment, before ACON sees
an observation (§2)."""

from __future__ import annotations

from typing import Any

from baselines.pos_baselines.common import PosBaseline, Turn, aux_messages, render_turn
from baselines.pos_baselines.config import BaselineConfig
from baselines.pos_baselines.protocols import SummaryReply
from runners.api import Decision, Observation, Request, TaskView
from runners.tokens import count, truncate_tokens

GUIDELINE = """Compress an agent's interaction record so that the agent can continue the task from your text alone.
Keep:
- task-critical facts: identifiers, exact values, numbers, file paths, entity and object names, locations;
- the progress made so far, and every action that failed together with why it failed;
- subgoals that are still open.
Copy values verbatim. Do not invent, guess or generalise anything that is not in the input. Drop chatter, repetition and
content irrelevant to the task."""

HISTORY_TASK = (
    "Merge the previous summary and the steps below into one new summary of everything the agent did and "
    "learned so far."
)
OBS_TASK = (
    "Compress the new observation below. Keep every detail the task may need, given what the summary already says."
)


class AconConfig(BaselineConfig):
    history_threshold_tokens: int = 4096  # [harness choice] AppWorld value (third-party, §2)
    obs_threshold_tokens: int = 1024  # [harness choice] AppWorld value (third-party, §2)
    keep_last_turns: int = 1  # [uncertain] turns kept raw after a history compression
    history_compression: bool = True  # [harness choice] both compressors on
    observation_compression: bool = True
    guideline: str | None = None  # null = our generic guideline (GUIDELINE)


class Acon(PosBaseline):
    own_texts = ("guideline", "history_task", "observation_task")
    config_cls = AconConfig
    base_cfg: AconConfig
    cfg: AconConfig
    method_name = "acon"

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.summary = ""
        self.raw_from = 0  # index in self.turns of the first turn not yet summarised
        self.summary_protocol = SummaryReply()

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if not self.cfg.carry_across_requests:
            self.summary, self.raw_from = "", 0

    def guideline(self) -> str:
        return self.cfg.guideline or GUIDELINE

    async def step(self, observation: Observation) -> Decision:
        self.log: dict[str, Any] = {}
        obs = await self.compress_observation(self.obs_text(observation))
        self.attach(obs)
        await self.compress_history()
        decision = await self.decide(
            lambda: self.policy_messages(
                [
                    ("summary_of_earlier_steps", self.summary or "(none yet)"),
                    ("recent_steps", self.render_turns(self.turns[self.raw_from :])),
                    ("latest_observation", obs or "(no observation yet)"),
                    ("user_query", self.request.text),
                ]
            )
        )
        self.record(decision)
        self.log["summary_tokens"] = count(self.summary)
        return decision

    def previous_steps_tokens(self) -> int:
        return count(self.summary) + count(self.render_turns(self.turns[self.raw_from :]))

    async def compress_observation(self, obs: str) -> str:
        n = count(obs)
        if not self.cfg.observation_compression or n <= self.cfg.obs_threshold_tokens:
            return obs
        head = truncate_tokens(obs, self.cfg.obs_threshold_tokens)[0]
        msgs = aux_messages(
            self.guideline() + "\n\n" + OBS_TASK,
            self.summary_protocol,
            [("task", self.request.text), ("current_summary", self.summary or "(none yet)"), ("new_observation", obs)],
        )
        out = await self.aux(
            msgs, self.summary_protocol, role="memory", call="obs_compression", fallback=lambda: {"summary": head}
        )
        if out is None or not out["summary"].strip():
            self.log["obs_compression"] = {"tokens_in": n, "failed": True}
            return obs  # §0.4: no silent truncation when the compressor fails
        self.log["obs_compression"] = {"tokens_in": n, "tokens_out": count(out["summary"])}
        return f"[compressed observation] {out['summary']}"

    async def compress_history(self) -> None:
        raw = self.turns[self.raw_from :]
        before = self.previous_steps_tokens()
        if not self.cfg.history_compression or before <= self.cfg.history_threshold_tokens:
            return
        k = self.cfg.keep_last_turns
        fold = raw[: len(raw) - k] if k else raw
        if not fold:
            return
        steps = self.render_turns(fold, render=lambda t: render_turn(t))
        msgs = aux_messages(
            self.guideline() + "\n\n" + HISTORY_TASK,
            self.summary_protocol,
            [("task", self.request.text), ("previous_summary", self.summary or "(none)"), ("steps", steps)],
        )
        out = await self.aux(
            msgs,
            self.summary_protocol,
            role="memory",
            call="history_compression",
            fallback=lambda: {"summary": extractive(self.summary, fold)},
        )
        if out is None or not out["summary"].strip():
            self.log["history_compression"] = {"tokens_before": before, "failed": True}
            return  # keep the turns raw; the next step tries again
        self.summary = out["summary"]
        self.raw_from += len(fold)
        self.log["history_compression"] = {
            "tokens_before": before,
            "tokens_after": self.previous_steps_tokens(),
            "folded_turns": len(fold),
        }


def extractive(summary: str, turns: list[Turn], chars: int = 160) -> str:
    """A deterministic stand-in summary (scripted backbone): one line per turn."""
    lines = [summary] if summary else []
    lines += [f"Step {t.step}: {t.action[:chars]} -> {(t.observation or '')[:chars]}" for t in turns]
    return "\n".join(lines)
