"""Shared machinery for methods that ask the agent role once per step: call the backbone,
parse with the method's protocol, and on unusable output try again a bounded number of times.

A retry is a *repair turn* by default: the next attempt shows the model its own reply and one
short correction naming what was wrong (as upstream PoS does for its JSON roles), so a model at
temperature 0 is not asked the byte-identical question again. `repair_turns: false` restores
the literal re-sample (same prompt, a new sample index for the cache and the scripted backbone).
Every attempt's errors, repairs and corrections are recorded in the step log."""

from __future__ import annotations

from typing import Any

from kit.asking import ask_until
from runners.api import Backbone, Decision, Message, Method, Parsed

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


class SingleCallMethod(Method):
    """A method whose step is one agent call (plus retries). Subclasses build `messages()`;
    `correction(parsed, text)` writes a repair turn's message (an instance may replace it, e.g.
    with a release's own repair texts)."""

    correction = staticmethod(correction)

    def __init__(self, backbone: Backbone, *, max_resamples: int = 2, repair_turns: bool = True, **params: Any) -> None:
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
        `repair_turns: false`) through the shared loop `kit.asking.ask_until`. Returns the last
        parse (an empty decision when none was usable, logged as `no_op`) and the raw text."""
        asked = await ask_until(
            self.backbone,
            messages,
            role="agent",
            protocol=self.protocol,
            read=self.protocol.parse,
            usable=self.usable,
            attempts=self.max_resamples + 1,
            repair=self.correction if self.repair_turns else None,
            **sampling,
        )
        parsed = asked.value
        self._log = {
            "protocol_errors": [
                {"attempt": a, **e.model_dump()} for a, p in enumerate(asked.readings) for e in p.errors
            ],
            "attempts": asked.attempts,
        }
        repairs = [{"attempt": a, **r} for a, p in enumerate(asked.readings) for r in p.repairs]
        if repairs:
            self._log["repairs"] = repairs
        if asked.corrections:
            self._log["repair_turns"] = asked.corrections
        if not asked.ok:
            self._log["no_op"] = True
            parsed = parsed.model_copy(update={"decision": Decision()})
        return parsed, asked.text

    def step_log(self) -> dict[str, Any]:
        return self._log
