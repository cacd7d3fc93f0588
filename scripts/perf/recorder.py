"""Harness CPU per model call without HTTP: `RecordingBackbone(OpenAIBackbone)` with the transport
replaced by an in-process reply, so what is measured is the harness's own work per call (attempt
key, request body, reply parsing and hygiene, usage, the call log and the transcript encoder) and
nothing of the HTTP client, the kernel or the endpoint (those are in scripts/perf/transport.py).

The prompts have Full Context's shape: a system message of ~3 KB that is the same every call and
a user message whose history section grows by one line per call (its last 30 lines are sent).
`--against DIR` also measures the harness checked out at DIR (e.g. `git worktree add /tmp/base
<commit>`): every repeat runs both, each in a fresh process, alternating which goes first; the
medians and their ratio are printed.

Run: `.venv/bin/python -m scripts.perf.recorder [--calls 3000] [--repeats 5] [--against DIR]`."""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import statistics
import time
from typing import Any

from scripts.perf import checkout

REPLY = json.dumps(
    {
        "id": "chatcmpl-0",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": '<tool_calls>[]</tool_calls><assistant_message>{"content": "x"}</assistant_message>',
                },
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 9, "total_tokens": 909},
    }
).encode()


class InProcess:
    """The transport interface of runners/backbones/openai.py answered by `await post(url, body)`."""

    def __init__(self, post: Any) -> None:
        self._post = post

    async def post(self, url: str, body: bytes) -> Any:
        return await self._post(url, body)

    async def aclose(self) -> None:
        return None


class Delayed:
    """Replies handed back `latency` seconds after their request, as an endpoint's would arrive,
    with one timer at a time on the loop (the next reply due), not one per call: the stand-in's
    own waiting adds nothing to the loop's timer heap that a socket's reply would not."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self._due: collections.deque[tuple[float, asyncio.Future[Any], Any]] = collections.deque()
        self._courier: asyncio.Task[None] | None = None

    async def reply(self, value: Any) -> Any:
        """`value`, `latency` seconds from now (0: in a later turn of the loop)."""
        if self.latency <= 0:
            await asyncio.sleep(0)
            return value
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._due.append((loop.time() + self.latency, fut, value))  # the same latency: due in order
        if self._courier is None or self._courier.done():
            self._courier = loop.create_task(self._deliver())
        return await fut

    async def _deliver(self) -> None:
        loop = asyncio.get_running_loop()
        while self._due:
            wait = self._due[0][0] - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            now = loop.time()
            while self._due and self._due[0][0] <= now:
                _, fut, value = self._due.popleft()
                if not fut.done():
                    fut.set_result(value)


def in_process_backbone(post: Any, sampling: dict[str, Any], max_inflight: int) -> Any:
    """An `OpenAIBackbone` whose transport is `await post(url, body)` → `Reply` in this process:
    the backbone's own work per call without an HTTP client, a kernel or an endpoint."""
    from runners.backbones.openai import OpenAIBackbone

    bb = OpenAIBackbone(
        name="fake",
        model="fake-model",
        base_url="http://127.0.0.1:9/v1",
        api_key="EMPTY",
        sampling=sampling,
        extra_body={},
        max_inflight=max_inflight,
    )
    transport = InProcess(post)
    bb._transport = lambda loop=None: transport  # type: ignore[method-assign]  # the in-process stand-in
    return bb


async def us_per_call(calls: int) -> float:
    from runners.backbones.openai import Reply
    from runners.episode import RecordingBackbone

    async def post(url: str, body: bytes) -> Reply:
        return Reply(200, {"content-type": "application/json"}, REPLY)

    bb = in_process_backbone(post, {"temperature": 0.0}, 64)
    system = {
        "role": "system",
        "content": "You are an agent.\n" + "\n".join(f"rule {i}: do thing number {i} carefully" for i in range(80)),
    }
    history: list[str] = []
    rb = RecordingBackbone(bb, [])
    c0 = time.process_time()
    for i in range(calls):
        history.append(f'Step {i} action: assistant_message {{"content": "answer {i}"}}')
        user = (
            "<trajectory_history>\n"
            + "\n".join(history[-30:])
            + "\n</trajectory_history>\n\n<user_query>\nWhat is 2+2?\n</user_query>"
        )
        await rb.complete([system, {"role": "user", "content": user}], role="agent")
        if len(rb.sink) > 64:
            rb.sink.clear()
    return (time.process_time() - c0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--against", metavar="DIR", help="also measure the harness checked out at DIR, alternating with this one"
    )
    ap.add_argument(
        "--harness", metavar="DIR", help=argparse.SUPPRESS
    )  # import runners.* from DIR (a child of --against)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.harness:
        checkout.use(a.harness)
    if a.json:
        us = statistics.median(asyncio.run(us_per_call(a.calls)) for _ in range(a.repeats))
        print(json.dumps({"harness": checkout.location(), "us": us}))
        return
    checkout.compare(
        "scripts.perf.recorder",
        ["--calls", str(a.calls), "--repeats", "1"],
        a.repeats,
        a.against,
        f"harness CPU per call without HTTP ({a.calls} calls, Full Context-shaped prompts)",
    )


if __name__ == "__main__":
    main()
