"""Test helpers: a scripted backbone driven by a test oracle, with every call recorded."""

from __future__ import annotations

import json
from typing import Any, Callable

from runners.api import (
    Backbone,
    Completion,
    Decision,
    EpisodeScope,
    Oracle,
    Request,
    RequestOutcome,
    TaskView,
    ToolSpec,
)
from runners.backbones.scripted import ScriptedBackbone

Answer = Callable[[str, list[dict[str, Any]]], "Decision | None"]


class FnOracle(Oracle):
    """Reference decisions from a function (role, messages) -> Decision | None."""

    def __init__(self, fn: Answer) -> None:
        self.fn = fn

    def reference(self, role, messages):
        return self.fn(role, messages)


class Recorder(Backbone):
    """Wraps the scripted backbone and keeps (role, messages, sampling, text) of each call."""

    def __init__(self, fn: Answer | None = None) -> None:
        self.inner = ScriptedBackbone()
        self.scope = EpisodeScope(oracle=FnOracle(fn or (lambda role, messages: None)))
        self.name = self.model = "scripted"
        self.calls: list[dict[str, Any]] = []

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling) -> Completion:
        c = await self.inner.complete(
            messages, role=role, protocol=protocol, attempt=attempt, scope=self.scope, **sampling
        )
        self.calls.append({"role": role, "messages": messages, "sampling": sampling, "text": c.text})
        return c

    def roles(self) -> list[str]:
        return [c["role"] for c in self.calls]

    def last(self, role: str) -> dict[str, Any]:
        return [c for c in self.calls if c["role"] == role][-1]


def answer_agent(message: str = "42") -> Answer:
    return lambda role, messages: Decision(message=message) if role == "agent" else None


def task_view(benchmark: str = "memoryarena_math", initial: list[str] | None = None) -> TaskView:
    return TaskView(
        task_id="t0",
        benchmark=benchmark,
        policy="Solve the problems.",
        tools=[ToolSpec(name="reasoning", description="think")],
        kind="formal_math",
        initial_memory=["Initial result: Empty"] if initial is None else initial,
    )


def request(i: int, text: str) -> Request:
    return Request(index=i, request_id=f"t0/q{i + 1}", text=text)


async def first_request(method: Any, text: str, view: TaskView | None = None) -> Request:
    """Begin the task (`task_view()` unless given) and its first request, `text`."""
    await method.begin_task(view or task_view())
    req = request(0, text)
    await method.begin_request(req)
    return req


def outcome(req: Request, memory_text: str, **kw) -> RequestOutcome:
    return RequestOutcome(request=req, final_response="42", steps=1, memory_text=memory_text, **kw)


def user_blocks(messages: list[dict[str, Any]]) -> list[str]:
    """Tags of the top-level blocks of the user message, in order."""
    import re

    text = messages[1]["content"]
    tags, pos = [], 0
    while (m := re.compile(r"<([a-z_]+)>\n").search(text, pos)) is not None:
        tag = m.group(1)
        end = text.find(f"\n</{tag}>", m.end())
        tags.append(tag)
        pos = end + len(tag) + 4 if end >= 0 else len(text)
    return tags


def block_of(messages: list[dict[str, Any]], tag: str) -> str:
    # the outermost block: the first opening to its LAST closing tag within the user message
    text = messages[1]["content"]
    start = text.find(f"<{tag}>\n")
    end = text.rfind(f"\n</{tag}>")
    assert start >= 0 and end > start, f"no <{tag}> block"
    return text[start + len(tag) + 3 : end]


def dumps(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False)
