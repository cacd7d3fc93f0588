"""Deterministic in-process backbone for tests and the offline demo.

It answers each call by asking the episode's oracle (the environment, handed over explicitly
when the episode binds the backbone: `Backbone.bind(EpisodeScope)`) for the reference decision and
rendering it in the caller's protocol; an unbound scripted backbone has no oracle and answers
empty. Fault injection is seeded by (seed, episode, role, prompt, attempt), so it does not
depend on scheduling order. Every completion it produces carries `scripted=True`, and runs that
use it are labelled as scripted in manifests and tables.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import random
from typing import Any, Callable

from runners.api import Backbone, Completion, Decision, EpisodeScope, Message, Protocol, Role
from runners.backbones.forwarding import Forwarding
from runners.tokens import estimate_usage

MALFORMED = '<tool_calls>[{"name": oops</tool_calls> I think the answer is'
WRONG_ANSWER = "(scripted wrong answer)"


def load_perturb(path: str) -> Callable[..., str]:
    """The function named by "<module>:<function>" (e.g. "runners.backbones.habits:trailing_commas")."""
    mod, sep, fn = path.partition(":")
    if not sep or not mod or not fn:
        raise ValueError(
            f"scripted backbone: perturb must be '<module>:<function>', got {path!r} "
            "(e.g. runners.backbones.habits:trailing_commas; see runners/backbones/habits.py)"
        )
    try:
        func = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise ValueError(
            f"scripted backbone: perturb {path!r} cannot be imported ({type(e).__name__}: {e}); "
            "built-in habits: runners.backbones.habits:<name>"
        ) from None
    if not callable(func):
        raise ValueError(f"scripted backbone: perturb {path!r} is not a function")
    return func


class ScriptedBackbone(Backbone):
    def __init__(
        self,
        *,
        name: str = "scripted",
        model: str = "scripted",
        seed: int = 0,
        malformed_rate: float = 0.0,
        empty_rate: float = 0.0,
        wrong_requests: list[str] | None = None,
        latency_s: float = 0.0,
        perturb: str | None = None,
        perturb_rate: float = 1.0,
    ) -> None:
        for label, rate in (
            ("malformed_rate", malformed_rate),
            ("empty_rate", empty_rate),
            ("perturb_rate", perturb_rate),
        ):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"scripted backbone: {label} must be in [0, 1], got {rate}")
        self.name = name
        self.model = model
        self.seed = seed
        self.malformed_rate = malformed_rate
        self.empty_rate = empty_rate
        self.wrong_requests = set(wrong_requests or [])
        self.latency_s = latency_s  # simulated model latency (resume and concurrency tests)
        self.calls = 0
        # Noisy scripted backbone: `perturb` = "<module>:<function>" with the signature
        # perturb(text, *, role, protocol, rng) -> str (protocol = the caller's Protocol.name);
        # applied to a `perturb_rate` share of calls, drawn from this call's seeded rng (so a
        # re-sample, which has a new attempt number, draws again). Catalogue: runners.backbones.habits.
        self.perturb_path = perturb
        self.perturb_rate = perturb_rate
        self.perturb = load_perturb(perturb) if perturb else None

    def bind(self, scope: EpisodeScope) -> Backbone:
        return _BoundScripted(self, scope)

    def _rng(self, key: str, role: str, messages: list[Message], attempt: int) -> random.Random:
        digest = hashlib.sha256(
            json.dumps([self.seed, key, role, messages, attempt], sort_keys=True, default=str).encode()
        ).hexdigest()
        return random.Random(int(digest[:16], 16))

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        scope: EpisodeScope | None = None,
        **sampling: Any,
    ) -> Completion:
        """The reference decision of `scope.oracle` (the episode binds it: `bind`), rendered in
        `protocol`, faults applied; no scope = no oracle = an empty answer."""
        scope = scope or EpisodeScope()
        self.calls += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        decision = scope.oracle.reference(role, messages) if scope.oracle is not None else None
        if decision is None:
            decision = Decision(message="")
        if role == "agent" and decision.message is not None and scope.request_id in self.wrong_requests:
            decision = decision.model_copy(update={"message": WRONG_ANSWER})
        native = bool(sampling.get("tools")) and protocol is None  # native function calling: calls go in tool_calls
        calls = (
            [c if c.id else c.model_copy(update={"id": f"call_{i}"}) for i, c in enumerate(decision.tool_calls)]
            if native
            else []
        )
        text = protocol.render(decision) if protocol is not None else (decision.message or "")
        rng = self._rng(scope.key, role, messages, attempt)
        draw = rng.random()
        if draw < self.empty_rate + self.malformed_rate:
            text, calls = ("" if draw < self.empty_rate else MALFORMED), []  # a faulty reply carries no native calls
        elif self.perturb is not None and rng.random() < self.perturb_rate:
            text = self.perturb(text, role=role, protocol=protocol.name if protocol is not None else None, rng=rng)
        return Completion(
            text=text,
            role=role,
            model=self.model,
            finish_reason="tool_calls" if calls else "stop",
            usage=estimate_usage(messages, text + "".join(f"{c.name}{c.arguments}" for c in calls)),
            scripted=True,
            tool_calls=calls,
        )


class _BoundScripted(Forwarding):
    """A scripted backbone bound to one episode: answers from that episode's oracle."""

    def __init__(self, inner: ScriptedBackbone, scope: EpisodeScope) -> None:
        super().__init__(inner)
        self.scope = scope

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        return await super().complete(
            messages, role=role, protocol=protocol, attempt=attempt, scope=self.scope, **sampling
        )
