"""Harness CPU per model call through each HTTP client, in one run: `h1` (the default,
runners/backbones/h1.py), `aiohttp` and `httpx` (the former ones), and `none` (no HTTP at all).

The fake endpoint (tests/fake_openai.py) runs in its own process, so the CPU measured here
(`time.process_time()` of this process: every thread, user + system) is the harness's alone:
building the body, the HTTP client, parsing the reply, the in-flight semaphore, the episode
recorder (attempt key) and the response-cache key. Each point runs `--calls` calls at
`--concurrency` in flight through `RecordingBackbone(OpenAIBackbone)`; transports alternate
within each repeat and the medians of `--repeats` are printed with their ratio to aiohttp.
`none` answers every post at once with a canned reply (no socket): the backbone's and the
recorder's own CPU, so `<client> - none` is what the HTTP client itself costs per call.
Target: ≤ 1 ms of harness CPU per call.

Run: `.venv/bin/python -m scripts.perf.transport [--calls 2000] [--concurrency 32] [--repeats 5]
[--transports h1 aiohttp none]`."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import orjson

from runners.backbones.openai import Reply
from scripts.perf.concurrency import fake_server
from scripts.perf.recorder import InProcess

TARGET_MS = 1.0
TRANSPORT_NAMES = ("httpx", "aiohttp", "h1", "none")


def no_network(**_: object) -> InProcess:
    """`--transports none`, the floor: every post answered in the next turn of the loop with one
    canned reply (what the fake endpoint answers), no socket."""
    from tests.fake_openai import FakeOpenAI, react_responder

    payload = FakeOpenAI(react_responder).reply_json({"model": "fake-model", "messages": []})
    reply = Reply(200, {"content-type": "application/json"}, orjson.dumps(payload))

    async def post(url: str, body: bytes) -> Reply:
        await asyncio.sleep(0)
        return reply

    return InProcess(post)


async def cpu_per_call_ms(url: str, transport: str, calls: int, concurrency: int, prompt_words: int) -> float:
    from runners.backbones.openai import TRANSPORTS, OpenAIBackbone
    from runners.episode import RecordingBackbone

    TRANSPORTS.setdefault("none", no_network)
    bb = OpenAIBackbone(
        name="fake",
        model="fake-model",
        base_url=url,
        api_key="EMPTY",
        sampling={"temperature": 0.0},
        extra_body={"thinking": {"type": "disabled"}},
        max_inflight=concurrency,
        timeout_s=30,
        max_retries=2,
        backoff_base_s=0.05,
        transport=transport,
    )
    filler = " ".join(f"w{i}" for i in range(prompt_words))
    sem = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with sem:
            rb = RecordingBackbone(bb, [])
            await rb.complete(
                [
                    {"role": "system", "content": "You are a test agent. " + filler},
                    {"role": "user", "content": f"call {i}"},
                ],
                role="agent",
            )

    await asyncio.gather(*(one(-i - 1) for i in range(concurrency)))  # warm-up: connections, lazy imports
    c0 = time.process_time()
    await asyncio.gather(*(one(i) for i in range(calls)))
    cpu = time.process_time() - c0
    await bb.aclose()
    return cpu / calls * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.01, help="server-side latency per call, seconds")
    ap.add_argument("--prompt-words", type=int, default=400, help="size of the system prompt (a realistic few KB)")
    ap.add_argument("--transports", nargs="+", default=list(TRANSPORT_NAMES), choices=TRANSPORT_NAMES)
    a = ap.parse_args()
    runs: dict[str, list[float]] = {t: [] for t in a.transports}
    with fake_server(a.latency, "threads") as url:  # the endpoint its README numbers were measured with
        for _ in range(a.repeats):
            for t in runs:
                runs[t].append(asyncio.run(cpu_per_call_ms(url, t, a.calls, a.concurrency, a.prompt_words)))
    med = {t: statistics.median(v) for t, v in runs.items()}
    print(
        f"harness CPU per call, {a.calls} calls at {a.concurrency} in flight, "
        f"{a.latency * 1000:.0f} ms endpoint latency, "
        f"medians of {a.repeats}:"
    )
    for t, m in med.items():
        verdict = "OK" if m <= TARGET_MS else "ABOVE TARGET"
        print(
            f"  {t:>8}: {m:.3f} ms  (runs: {', '.join(f'{x:.3f}' for x in runs[t])})  "
            f"{verdict} (target <= {TARGET_MS} ms)"
        )
    for t in med:
        if t != "aiohttp" and "aiohttp" in med:
            print(f"  {t} / aiohttp = {med[t] / med['aiohttp']:.2f}x")


if __name__ == "__main__":
    main()
