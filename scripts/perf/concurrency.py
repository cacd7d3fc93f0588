"""Episode throughput vs. concurrency against a fake OpenAI endpoint with fixed server latency.

The fake server (tests/fake_openai.py) runs in its own process so that its threads do not
compete with the client for the GIL, and answers every call after `--latency` seconds
(default 100 ms). Two workloads, each measured at 1, 4, 16, 32, 64 concurrent episodes:

- `synthetic`: an episode = `--calls` (default 3) sequential OpenAIBackbone calls;
- `episodes`:  real episodes (`runners.episode.Episode`, Full Context on the Formal Reasoning
  fixture; agent and judge calls go to the same endpoint).

Each point is the median of `--repeats` runs of `--rounds` × N episodes at concurrency N.
The in-flight bound is set to the largest N so that it is not the limit being measured.
Prints episodes/s per N and rate(32)/rate(1) (target ≥ 20×, ideal 32×).

Run: `PYTHONPATH=. .venv/bin/python -m scripts.perf.concurrency [--mode both] [--repeats 3]`."""
from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Awaitable, Callable, Iterator

REPO = Path(__file__).resolve().parents[2]
LEVELS = (1, 4, 16, 32, 64)


@contextmanager
def fake_server(latency_s: float) -> Iterator[str]:
    """Start `python -m tests.fake_openai` in a subprocess; yield its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", "--latency", str(latency_s), "--react"],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        if not url.startswith("http://"):
            raise RuntimeError(f"fake server did not start (printed {url!r})")
        yield url
    finally:
        if proc.stdin:
            proc.stdin.close()  # the server exits when its stdin closes
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def backbone(url: str, max_inflight: int):
    from runners.backbones.openai import OpenAIBackbone

    return OpenAIBackbone(name="fake", model="fake-model", base_url=url, api_key="EMPTY", sampling={"temperature": 0.0},
                          extra_body={}, max_inflight=max_inflight, timeout_s=30, max_retries=2, backoff_base_s=0.05)


def synthetic(calls: int) -> Callable[[object, int], Awaitable[None]]:
    async def episode(bb, i: int) -> None:
        history = [{"role": "system", "content": "You are a test agent."}]
        for t in range(calls):
            history.append({"role": "user", "content": f"episode {i} step {t}"})
            c = await bb.complete(history, role="agent")
            history.append({"role": "assistant", "content": c.text})
    return episode


def real_episodes() -> Callable[[object, int], Awaitable[None]]:
    from baselines.full_context import FullContext
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.episode import Episode

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    tasks = bench.load_tasks()

    async def episode(bb, i: int) -> None:
        task = tasks[i % len(tasks)]
        ep = Episode(bb, cell="perf", task_id=task.task_id, trial=i, seed=i)
        rec = await ep.run(ep.make_env(bench, task), FullContext(ep.agent))
        if rec.status != "ok":
            raise RuntimeError(f"episode {task.task_id}#{i} failed: {rec.error}")
    return episode


async def rate(url: str, episode, n: int, rounds: int, max_inflight: int) -> float:
    """Episodes per second running `rounds * n` episodes with at most n in flight."""
    bb = backbone(url, max_inflight)
    sem = asyncio.Semaphore(n)

    async def one(i: int) -> None:
        async with sem:
            await episode(bb, i)

    await episode(bb, -1)  # warm-up: connection set-up and lazy imports off the clock
    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(rounds * n)))
    wall = time.perf_counter() - t0
    await bb.aclose()
    return rounds * n / wall


def curve(url: str, episode, levels: tuple[int, ...], rounds: int, repeats: int) -> dict[int, float]:
    out = {}
    for n in levels:
        runs = [asyncio.run(rate(url, episode, n, rounds, max(levels))) for _ in range(repeats)]
        out[n] = statistics.median(runs)
    return out


def report(title: str, rates: dict[int, float]) -> None:
    print(f"\n{title}")
    print(f"{'concurrent':>10}  {'episodes/s':>10}  {'speed-up':>8}")
    for n, r in rates.items():
        print(f"{n:>10}  {r:>10.2f}  {r / rates[1]:>7.1f}x")
    if 32 in rates:
        ratio = rates[32] / rates[1]
        verdict = "OK (target >= 20x)" if ratio >= 20 else "BELOW TARGET (>= 20x)"
        print(f"rate(32)/rate(1) = {ratio:.1f}x  {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("synthetic", "episodes", "both"), default="both")
    ap.add_argument("--latency", type=float, default=0.1, help="server-side latency per call, seconds")
    ap.add_argument("--calls", type=int, default=3, help="sequential calls per synthetic episode")
    ap.add_argument("--rounds", type=int, default=3, help="episodes per run = rounds x concurrency")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    a = ap.parse_args()
    levels = tuple(sorted(set(a.levels) | {1}))
    print(f"fake endpoint latency {a.latency * 1000:.0f} ms; medians of {a.repeats} runs of {a.rounds} x N episodes")
    with fake_server(a.latency) as url:
        if a.mode in ("synthetic", "both"):
            report(f"synthetic episodes ({a.calls} sequential calls each)", curve(url, synthetic(a.calls), levels, a.rounds, a.repeats))
        if a.mode in ("episodes", "both"):
            report("real episodes (Episode.run: Full Context x Formal Reasoning fixture, agent + judge calls)",
                   curve(url, real_episodes(), levels, a.rounds, a.repeats))


if __name__ == "__main__":
    main()
