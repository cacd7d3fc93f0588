"""Full Context: a ReAct agent whose prompt carries the whole interaction history across
requests (FlowState §3.1, App. B.3 layout; docs/baselines.md §1). No truncation by default, as the
paper says "full"; `max_tokens` drops the oldest whole lines (MemoryArena's long-context
memory keeps the last 120,000 tokens) and records a truncation event. [harness choice,
docs/baselines.md §1] When the endpoint reports that the prompt exceeds its context window, the oldest
whole lines are dropped (to 3/4 of the history's tokens, repeatedly) and the call retried; the
cap then stays for the rest of the episode and every step records the event.
`on_context_overflow: error` makes the overflow an infra error instead.
The current request's text is shown once, in `<user_query>` (B.3 does not say the history repeats
it); `repeat_query_in_history: true` also puts it in `<trajectory_history>` (the earlier layout)."""
from __future__ import annotations

from typing import Any

from kit.agent import SingleCallMethod
from kit.react import ReactProtocol
from kit.trajectory import Trajectory
from runners.api import BackboneError, Decision, Message, Observation, Request, RequestOutcome
from kit.prompting import REACT_RULES, system_message, user_message
from runners.tokens import count

OVERFLOW_MODES = ("drop_oldest", "error")


class FullContext(SingleCallMethod):
    protocol = ReactProtocol()

    def __init__(self, backbone, *, max_tokens: int | None = None, on_context_overflow: str = "drop_oldest",
                 repeat_query_in_history: bool = False, **params: Any) -> None:
        super().__init__(backbone, **params)
        if on_context_overflow not in OVERFLOW_MODES:
            raise ValueError(f"on_context_overflow must be one of {', '.join(OVERFLOW_MODES)}, got {on_context_overflow!r}")
        self.max_tokens = max_tokens
        self.on_context_overflow = on_context_overflow
        self.trajectory = Trajectory(repeat_current_query=repeat_query_in_history)  # docs/baselines.md §1
        self.t = 0

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.trajectory.begin(request)
        self.t = 0

    def messages(self, latest: str) -> list[Message]:
        history, truncated = self.trajectory.render(max_tokens=self.max_tokens)
        self._truncated = truncated
        return [
            system_message(instructions=REACT_RULES, policy=self.task.policy, tools=self.task.tools,
                           output_protocol=self.protocol.description()),
            user_message([("trajectory_history", history), ("latest_observation", latest), ("user_query", self.request.text)]),
        ]

    async def step(self, observation: Observation) -> Decision:
        self.t += 1
        latest = observation.as_text()
        overflows = 0
        while True:
            try:
                parsed, _ = await self.ask(self.messages(latest))
                break
            except BackboneError as e:
                if not e.context_overflow or self.on_context_overflow != "drop_oldest":
                    raise
                history_tokens = count(self.trajectory.render(max_tokens=self.max_tokens)[0])
                if history_tokens == 0:
                    raise  # nothing left to drop: the request itself does not fit
                self.max_tokens = (history_tokens * 3) // 4
                overflows += 1
        # The latest observation enters the history once the next action is taken.
        self.trajectory.observe(observation)
        self.trajectory.act(parsed.decision, self.t)
        if self._truncated:
            self._log["history_truncated"] = True
        if overflows:
            self._log["context_overflow"] = {"retries": overflows, "history_cap_tokens": self.max_tokens}
        return parsed.decision

    async def end_request(self, outcome: RequestOutcome) -> None:
        self.trajectory.end(outcome)
