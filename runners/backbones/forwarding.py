"""`Forwarding`: the base of a backbone that wraps another one (`inner`) for an episode or a sweep
(runners.pool.Resampled and InFlight, runners.cache.CachedBackbone, the scripted backbone bound to
an episode)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from runners.api import Backbone, Completion, Message, Protocol, Role


class Forwarding(Backbone):
    """`inner` under the same name and model: every call goes to `inner` as it came. A subclass
    moves the sample index (`sample_index`), wraps each call (`around_call`: count it, refuse
    it), or changes the call and passes it on with `super().complete`; `aclose` leaves `inner`
    open, since it is shared and its owner closes it."""

    def __init__(self, inner: Backbone) -> None:
        self.inner = inner
        self.name, self.model = inner.name, inner.model

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        with self.around_call():
            return await self.inner.complete(
                messages, role=role, protocol=protocol, attempt=self.sample_index(attempt), **sampling
            )

    def sample_index(self, attempt: int) -> int:
        """The sample index `inner` gets for a call asked with `attempt`."""
        return attempt

    def around_call(self) -> AbstractContextManager[None]:
        """Entered around each call to `inner` (raising in it refuses the call)."""
        return nullcontext()

    async def aclose(self) -> None:
        return None  # the inner backbone is shared; its owner (the pool) closes it
