"""Shared machinery for methods that ask the agent role once per step: call the backbone,
parse with the method's protocol, and on unusable output try again a bounded number of times.

A retry is a *repair turn* by default: the next attempt shows the model its own reply and one
short correction naming what was wrong (as upstream PoS does for its JSON roles), so a model at
temperature 0 is not asked the byte-identical question again. `repair_turns: false` restores
the literal re-sample (same prompt, a new sample index for the cache and the scripted backbone).
Every attempt's errors, repairs and corrections are recorded in the step log."""
from __future__ import annotations

from typing import Any

from runners.api import Decision, Message, Method, Parsed

CORRECTION = "Your previous reply could not be used: {problems}. Reply again, following the output protocol exactly."
"""Our wording of the repair turn's correction (the problems are the parser's error details)."""


def correction(parsed: Parsed, text: str, *, limit: int = 3) -> str:
    """One short message naming what was wrong with `text`."""
    if not (text or "").strip():
        problems = "it was empty"
    elif parsed.thinking and not parsed.errors:
        problems = "it held only thinking, no answer"
    else:
        details = [e.detail for e in parsed.errors[:limit]] or ["it held no decision (no tool call and no message)"]
        problems = "; ".join(d if len(d) <= 160 else d[:157] + "..." for d in details)
    return CORRECTION.format(problems=problems)


def repair_messages(messages: list[Message], text: str, note: str) -> list[Message]:
    """`messages` + the model's own reply + the correction (an empty reply is not replayed)."""
    extra: list[Message] = [{"role": "assistant", "content": text}] if (text or "").strip() else []
    return [*messages, *extra, {"role": "user", "content": note}]


class SingleCallMethod(Method):
    """A method whose step is one agent call (plus retries). Subclasses build `messages()`."""

    def __init__(self, backbone, *, max_resamples: int = 2, repair_turns: bool = True, **params: Any) -> None:
        super().__init__(backbone, **params)
        if max_resamples < 0:
            raise ValueError("max_resamples must be >= 0")
        self.max_resamples = max_resamples
        self.repair_turns = bool(repair_turns)
        self._log: dict[str, Any] = {}

    def messages(self, observation_text: str) -> list[Message]:
        raise NotImplementedError

    def usable(self, parsed: Parsed) -> bool:
        """Whether to accept this output or retry. Default: some decision came out."""
        return not parsed.decision.is_empty

    async def ask(self, messages: list[Message], **sampling: Any) -> tuple[Parsed, str]:
        """Call the agent; while the output is unusable, retry (a repair turn, or a re-sample with
        `repair_turns: false`). Returns the last parse (possibly an empty decision) and the raw text."""
        errors, repairs, turns = [], [], []
        parsed, text = Parsed(), ""
        prompt = messages
        for attempt in range(self.max_resamples + 1):
            c = await self.backbone.complete(prompt, role="agent", protocol=self.protocol, attempt=attempt, **sampling)
            text = c.text
            parsed = self.protocol.parse(text)
            errors += [{"attempt": attempt, **e.model_dump()} for e in parsed.errors]
            repairs += [{"attempt": attempt, **r} for r in parsed.repairs]
            if self.usable(parsed) or attempt == self.max_resamples:
                break
            if self.repair_turns:
                note = correction(parsed, text)
                turns.append({"attempt": attempt + 1, "correction": note})
                prompt = repair_messages(messages, text, note)
        self._log = {"protocol_errors": errors, "attempts": attempt + 1}
        if repairs:
            self._log["repairs"] = repairs
        if turns:
            self._log["repair_turns"] = turns
        if not self.usable(parsed):
            self._log["no_op"] = True
            parsed = parsed.model_copy(update={"decision": Decision()})
        return parsed, text

    def step_log(self) -> dict[str, Any]:
        return self._log
