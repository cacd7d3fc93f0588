"""Test doubles for PoS: a backbone that answers from per-protocol queues (falling back to the
protocol's minimal valid reply, as the scripted backbone does) and a toy looping environment."""

from __future__ import annotations

import json
from typing import Any

from runners.api import (
    Backbone,
    Completion,
    Decision,
    Environment,
    Message,
    Observation,
    Protocol,
    Reply,
    Request,
    RequestOutcome,
    TaskView,
    ToolCall,
    ToolSpec,
    Usage,
)

LOOK = ToolSpec(
    name="act",
    description="do one household command",
    parameters={"type": "object", "properties": {"command": {"type": "string"}}},
)
TASK = TaskView(
    task_id="toy-1", benchmark="toy", policy="Act in the room.", tools=[LOOK]
)  # no kind: no kind_overrides apply


def act(command: str) -> Decision:
    return Decision(tool_calls=[ToolCall(name="act", arguments={"command": command}, id="c0")])


class QueueBackbone(Backbone):
    """Replies come from `replies[protocol.name]` in order (dicts are JSON-encoded, Decisions
    rendered, strings sent as is); an empty queue gives `protocol.render(Decision(message=""))`."""

    name = model = "queue"

    def __init__(self, replies: dict[str, list[Any]] | None = None) -> None:
        self.replies = {k: list(v) for k, v in (replies or {}).items()}
        self.calls: list[tuple[str, str | None, list[Message]]] = []
        self.sampling: list[tuple[str, str | None, dict[str, Any]]] = []  # (role, protocol, per-call sampling)

    async def complete(
        self, messages: list[Message], *, role: str, protocol: Protocol | None = None, attempt: int = 0, **s: Any
    ) -> Completion:
        pname = protocol.name if protocol else None
        self.calls.append((role, pname, messages))
        self.sampling.append((role, pname, dict(s)))
        queue = self.replies.get(pname or "", [])
        item = queue.pop(0) if queue else Decision(message="")
        if isinstance(item, Decision):
            text = protocol.render(item) if protocol else (item.message or "")
        elif isinstance(item, dict):
            text = json.dumps(item)
        else:
            text = item
        return Completion(text=text, role=role, model="queue", usage=Usage(prompt_tokens=1, completion_tokens=1))

    def payloads(self, pname: str) -> list[dict[str, Any]]:
        """The JSON user payloads sent with a protocol, in order."""
        return [json.loads(m[-1]["content"]) for _, p, m in self.calls if p == pname]


class OneRoomEnv(Environment):
    """A toy task of one request (`request`) and a step budget; subclasses say what acting does."""

    def __init__(self, request: Request, budget: int) -> None:
        self.request, self.budget, self.served = request, budget, False

    def view(self) -> TaskView:
        return TASK

    def step_budget(self) -> int:
        return self.budget

    async def next_request(self) -> Request | None:
        if self.served:
            return None
        self.served = True
        return self.request


class LoopEnv(OneRoomEnv):
    """A room where nothing ever changes: every command answers the same. The reference policy
    keeps looking, so a PoS agent stagnates and must be diagnosed as trapped."""

    def __init__(self, budget: int = 12) -> None:
        super().__init__(
            Request(
                index=0, request_id="toy-1/q1", text="You are in a room with a drawer 1. Your task is to find the key."
            ),
            budget,
        )
        self.turns = 0

    async def act(self, decision: Decision) -> Reply:
        self.turns += 1
        return Reply(observation=Observation(note="Nothing happens."))

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        return RequestOutcome(
            request=Request(index=0, request_id="toy-1/q1", text=""), steps=steps, truncated=truncated
        )

    async def score_task(self) -> dict[str, Any]:
        return {"success": 0, "turns": self.turns}

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        return act("look") if role == "agent" else None
