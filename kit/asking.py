"""The one bounded ask-again loop: call a backbone for one role, read the reply, and while the
reading is unusable ask again, at most `attempts` calls in all.

An attempt after an unusable reply is either a plain re-sample (the same prompt with the next
`attempt` index, which the response cache and the scripted backbone treat as a fresh draw) or,
when the caller passes `repair`, a *repair turn*: the prompt plus the model's own reply plus one
short correction. Every reply, every reading and every correction is kept in the returned
`Asked`, so the caller records what happened; the caller also chooses the failure path (a
judge raises `BackboneError` through `Asked.require`, the agent step becomes a recorded no-op).

Used by `SingleCallMethod.ask` (kit/agent.py) and the ClinDiag and τ³ judges. It depends only
on `runners.api`, so benchmarks import it as they import `kit.blocks`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from runners.api import Backbone, BackboneError, Message, Protocol, Role

T = TypeVar("T")


@dataclass
class Asked(Generic[T]):
    """What the loop saw: one reply and one reading per call, in order."""

    ok: bool
    replies: list[str] = field(default_factory=list)
    readings: list[T] = field(default_factory=list)
    corrections: list[dict[str, Any]] = field(default_factory=list)
    """The repair turns: {"attempt": the attempt that carried it, "correction": the note}."""

    @property
    def value(self) -> T:
        """The last reading (an unusable one when `ok` is false)."""
        return self.readings[-1]

    @property
    def text(self) -> str:
        """The last raw reply."""
        return self.replies[-1]

    @property
    def attempts(self) -> int:
        return len(self.replies)

    def require(self, what: str) -> T:
        """The usable reading, else `BackboneError("<what> after N attempts; last reply: ...")`
        (an infrastructure error: a resumed sweep asks again)."""
        if not self.ok:
            raise BackboneError(f"{what} after {self.attempts} attempts; last reply: {self.text[:200]!r}")
        return self.value


def repair_messages(messages: list[Message], text: str, note: str) -> list[Message]:
    """`messages` + the model's own reply + the correction (an empty reply is not replayed)."""
    extra: list[Message] = [{"role": "assistant", "content": text}] if (text or "").strip() else []
    return [*messages, *extra, {"role": "user", "content": note}]


async def ask_until(
    backbone: Backbone,
    messages: list[Message],
    *,
    role: Role,
    read: Callable[[str], T],
    usable: Callable[[T], bool],
    attempts: int,
    protocol: Protocol | None = None,
    repair: Callable[[T, str], str] | None = None,
    **sampling: Any,
) -> Asked[T]:
    """Ask until `usable(read(reply))` or `attempts` calls were made. `repair(reading, reply)`
    writes the correction of a repair turn; without it a retry re-samples the same prompt. No
    correction follows the last attempt. `protocol` is passed to the backbone only when given."""
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1 (got {attempts}): one call is the least a reply needs")
    extra: dict[str, Any] = {"protocol": protocol} if protocol is not None else {}
    asked: Asked[T] = Asked(ok=False)
    prompt = messages
    for attempt in range(attempts):
        c = await backbone.complete(prompt, role=role, attempt=attempt, **extra, **sampling)
        value = read(c.text)
        asked.replies.append(c.text)
        asked.readings.append(value)
        if usable(value):
            asked.ok = True
            break
        if repair is not None and attempt + 1 < attempts:
            note = repair(value, c.text)
            asked.corrections.append({"attempt": attempt + 1, "correction": note})
            prompt = repair_messages(messages, c.text, note)
    return asked
