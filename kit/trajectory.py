"""The interaction trajectory as methods without explicit state see it (`trajectory_history`
in FlowState App. B.3): requests, each step's action and the observation it produced."""
from __future__ import annotations

import json

from runners.api import Decision, Observation, Request, RequestOutcome
from runners.tokens import count


class Trajectory:
    def __init__(self) -> None:
        self.requests: list[list[str]] = []  # per request: its lines

    def begin(self, request: Request) -> None:
        self.requests.append([f"## Request {request.index + 1} ({request.request_id})", f"User query: {request.text}"])

    def observe(self, obs: Observation) -> None:
        if not obs.is_empty and self.requests:
            self.requests[-1].append(f"Observation: {obs.as_text(actions=False)}")  # the valid actions are current-turn only

    def act(self, decision: Decision, step: int) -> None:
        if not self.requests:
            return
        if decision.tool_calls:
            calls = json.dumps([{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls], ensure_ascii=False)
            self.requests[-1].append(f"Step {step} action: tool_calls {calls}")
        elif decision.message is not None:
            self.requests[-1].append(f"Step {step} action: assistant_message {json.dumps(decision.message, ensure_ascii=False)}")
        else:
            self.requests[-1].append(f"Step {step} action: none")

    def end(self, outcome: RequestOutcome) -> None:
        if self.requests:
            self.requests[-1].append(f"Final response: {outcome.final_response if outcome.final_response is not None else '(none)'}")

    def render(self, *, current_only: bool = False, max_tokens: int | None = None) -> tuple[str, bool]:
        """Text of the trajectory; with `max_tokens`, the oldest whole lines are dropped until it
        fits (returns whether anything was dropped)."""
        reqs = self.requests[-1:] if current_only else self.requests
        lines = [line for r in reqs for line in r]
        truncated = False
        if max_tokens is not None:
            while lines and count("\n".join(lines)) > max_tokens:
                lines.pop(0)
                truncated = True
        return "\n".join(lines), truncated
