"""Shared machinery for methods that ask the agent role once per step: call the backbone,
parse with the method's protocol, re-sample a bounded number of times on unusable output."""
from __future__ import annotations

from typing import Any

from runners.api import Decision, Message, Method, Parsed


class SingleCallMethod(Method):
    """A method whose step is one agent call (plus re-samples). Subclasses build `messages()`."""

    def __init__(self, backbone, *, max_resamples: int = 2, **params: Any) -> None:
        super().__init__(backbone, **params)
        if max_resamples < 0:
            raise ValueError("max_resamples must be >= 0")
        self.max_resamples = max_resamples
        self._log: dict[str, Any] = {}

    def messages(self, observation_text: str) -> list[Message]:
        raise NotImplementedError

    def usable(self, parsed: Parsed) -> bool:
        """Whether to accept this output or re-sample. Default: some decision came out."""
        return not parsed.decision.is_empty

    async def ask(self, messages: list[Message], **sampling: Any) -> tuple[Parsed, str]:
        """Call the agent; re-sample (new cache key via `attempt`) while the output is unusable.
        Returns the last parse (possibly an empty decision) and the raw text."""
        errors, repairs = [], []
        parsed, text = Parsed(), ""
        for attempt in range(self.max_resamples + 1):
            c = await self.backbone.complete(messages, role="agent", protocol=self.protocol, attempt=attempt, **sampling)
            text = c.text
            parsed = self.protocol.parse(text)
            errors += [e.model_dump() for e in parsed.errors]
            repairs += [{"attempt": attempt, **r} for r in parsed.repairs]
            if self.usable(parsed):
                break
        self._log = {"protocol_errors": errors, "attempts": attempt + 1}
        if repairs:
            self._log["repairs"] = repairs
        if not self.usable(parsed):
            self._log["no_op"] = True
            parsed = parsed.model_copy(update={"decision": Decision()})
        return parsed, text

    def step_log(self) -> dict[str, Any]:
        return self._log
