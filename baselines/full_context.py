"""Full Context: a ReAct agent whose prompt carries the whole interaction history across
requests (FlowState §3.1, App. B.3 layout; baselines.md §1). No truncation by default, as the
paper says "full"; `max_tokens` drops the oldest whole lines (MemoryArena's long-context
memory keeps the last 120,000 tokens) and records a truncation event."""
from __future__ import annotations

from typing import Any

from baselines.agent import SingleCallMethod
from baselines.react import ReactProtocol
from baselines.trajectory import Trajectory
from runners.api import Decision, Message, Observation, Request, RequestOutcome
from runners.prompting import REACT_RULES, system_message, user_message


class FullContext(SingleCallMethod):
    protocol = ReactProtocol()

    def __init__(self, backbone, *, max_tokens: int | None = None, **params: Any) -> None:
        super().__init__(backbone, **params)
        self.max_tokens = max_tokens
        self.trajectory = Trajectory()
        self.t = 0

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.trajectory.begin(request)
        self.t = 0
        self._pending: Observation | None = None

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
        parsed, _ = await self.ask(self.messages(observation.as_text()))
        # The latest observation enters the history once the next action is taken.
        self.trajectory.observe(observation)
        self.trajectory.act(parsed.decision, self.t)
        if self._truncated:
            self._log["history_truncated"] = True
        return parsed.decision

    async def end_request(self, outcome: RequestOutcome) -> None:
        self.trajectory.end(outcome)
