"""`scripts.perf.sweep_parts`: the whole sweep in one process with an in-process reply, priced per
thread and per part, and the stand-in's `Delayed` replies (one timer at a time, in order, late by
the latency)."""

import asyncio
import json
import subprocess
import sys
import time

from scripts.perf.recorder import Delayed
from tests.runners.sweep_helpers import REPO


def _variant(name: str) -> dict:
    p = subprocess.run(
        [sys.executable, "-m", "scripts.perf.sweep_parts", "--harness", str(REPO), "--json", "--variant", name]
        + ["--episodes", "6", "--concurrency", "3", "--latency", "0.01"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_sweeps_cpu_is_split_by_thread_and_a_switched_off_part_is_gone():
    full = _variant("all")
    assert full["calls"] == 6 * 12 and full["us"] > 0
    parts = full["parts"]
    threads = {k: v for k, v in parts.items() if k.startswith("thread ")}
    # the writer threads of the records and of the transcripts ran, beside the event loop
    assert threads["thread main (event loop)"] > 0
    assert threads["thread transcripts"] > 0 and threads["thread store-writer"] > 0
    # every thread's CPU from the first call on adds up to the process's (within the clocks' grain)
    assert abs(sum(threads.values()) - full["us"]) < 0.1 * full["us"]
    assert any(k.startswith("fn CellStore._line") for k in parts)  # a timed function was called
    bare = _variant("no_transcripts")
    assert bare["calls"] == full["calls"]
    assert "thread transcripts" not in bare["parts"]  # runner.transcripts=false reached the sweep


def test_delayed_replies_come_back_late_by_the_latency_in_order_with_one_timer():
    async def main() -> tuple[list[int], list[float], int]:
        d = Delayed(0.05)
        loop = asyncio.get_running_loop()
        t0 = time.monotonic()
        done: list[int] = []
        at: list[float] = []

        async def one(i: int) -> None:
            await asyncio.sleep(i * 0.005)
            v = await d.reply(i)
            done.append(v)
            at.append(time.monotonic() - t0 - i * 0.005)

        tasks = [asyncio.ensure_future(one(i)) for i in range(5)]
        await asyncio.sleep(0.03)  # every request waits: the loop holds the courier's timer only
        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        await asyncio.gather(*tasks)
        return done, at, timers

    done, at, timers = asyncio.run(main())
    assert done == [0, 1, 2, 3, 4]
    assert min(at) >= 0.05 - 0.002 and max(at) < 0.5
    assert timers == 1
