"""Test helpers: a backbone answering from a function of (role, messages), every call kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

from runners.api import Backbone, Completion, Observation, Request, TaskView, ToolSpec

Reply = Callable[[str, list[dict[str, Any]]], str]


class FnBackbone(Backbone):
    """Answers each call with `fn(role, messages)` (raw text, so parse paths are exercised)."""

    name = model = "fn"

    def __init__(self, fn: Reply) -> None:
        self.fn = fn
        self.calls: list[dict[str, Any]] = []

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling) -> Completion:
        text = self.fn(role, messages)
        self.calls.append({"role": role, "messages": messages, "text": text})
        return Completion(text=text, role=role, model="fn")

    def of(self, role: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["role"] == role]

    def prompt(self, role: str = "agent", i: int = -1) -> str:
        return self.of(role)[i]["messages"][-1]["content"]


def act(command: str, extra: str = "") -> str:
    """A ReAct reply calling the `act` tool."""
    return (
        f"{extra}<tool_calls>\n{json.dumps([{'name': 'act', 'arguments': {'command': command}}])}\n</tool_calls>\n"
        '<assistant_message>\n{"content": null}\n</assistant_message>'
    )


def tool(name: str, **arguments: Any) -> str:
    return (
        f"<tool_calls>\n{json.dumps([{'name': name, 'arguments': arguments}])}\n</tool_calls>\n"
        '<assistant_message>\n{"content": null}\n</assistant_message>'
    )


def view(benchmark: str = "alfworld") -> TaskView:
    return TaskView(
        task_id="t0",
        benchmark=benchmark,
        policy="Act with the act tool.",
        tools=[
            ToolSpec(
                name="act",
                description="play a command",
                parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
            )
        ],
        kind="alfworld",
        step_budget=50,
    )


def drive(
    method,
    observations: list[str],
    *,
    benchmark: str = "alfworld",
    kind: str = "alfworld",
    query: str = "Your task is to: put a key in the drawer.",
    policy_prompt: str = "project",
):
    """begin_task, begin_request, then one step per observation ('' = empty first observation);
    returns the decisions. The memory mechanisms are checked on the project's tagged layout
    (`policy_prompt: project`); tests/pos_baselines/test_release_interface.py checks the release's."""
    if hasattr(method, "base_cfg"):
        method.base_cfg = method.base_cfg.model_copy(update={"policy_prompt": policy_prompt})

    async def go():
        await method.begin_task(view(benchmark).model_copy(update={"kind": kind}))
        await method.begin_request(Request(index=0, request_id="t0/q1", text=query))
        out = []
        for o in observations:
            out.append(await method.step(Observation(note=o) if o else Observation()))
        return out

    return asyncio.run(go())
