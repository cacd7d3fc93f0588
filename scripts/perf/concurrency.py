"""Episode throughput vs. concurrency against a fake OpenAI endpoint with fixed server latency.

The fake server (tests/fake_openai.py) runs in its own process so that its threads do not
compete with the client for the GIL, and answers every call after `--latency` seconds
(default 100 ms). Two workloads, each measured at 1, 4, 16, 32, 64 concurrent episodes:

- `synthetic`: an episode = `--calls` (default 3) sequential OpenAIBackbone calls;
- `episodes`:  real episodes (`runners.episode.Episode`, Full Context on the Formal Reasoning
  fixture; agent and judge calls go to the same endpoint).

Each point is the median of `--repeats` runs of `--rounds` × N episodes at concurrency N.
The in-flight bound is set to the largest N so that it is not the limit being measured.
Prints episodes/s per N and rate(N)/rate(1) (targets: ≥ 29× at 32, ≥ 50× at 64).

`--mode cells` runs whole cells through the sweep's scheduler (`runners.run.Scheduler`, Full
Context × Formal Reasoning fixture, 2 tasks, backbones pointing at the fake endpoint):
4 cells × 8 episodes against 1 cell × 32 episodes, 32 episodes in flight, and the 4 cells run one
after another as the sweep did before (target: 4 × 8 within 1.1× of 1 × 32).

Run: `.venv/bin/python -m scripts.perf.concurrency [--mode all|cells|synthetic|episodes] [--repeats 3]`."""
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

    await asyncio.gather(*(episode(bb, -1 - j) for j in range(n)))  # warm-up: n connections and lazy imports off the clock
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


TARGETS = {32: 29.0, 64: 50.0}


def report(title: str, rates: dict[int, float]) -> None:
    print(f"\n{title}")
    print(f"{'concurrent':>10}  {'episodes/s':>10}  {'speed-up':>8}")
    for n, r in rates.items():
        print(f"{n:>10}  {r:>10.2f}  {r / rates[1]:>7.1f}x")
    for n, target in TARGETS.items():
        if n in rates:
            ratio = rates[n] / rates[1]
            verdict = f"OK (target >= {target:g}x)" if ratio >= target else f"BELOW TARGET (>= {target:g}x)"
            print(f"rate({n})/rate(1) = {ratio:.1f}x  {verdict}")


def cell_configs(url: str, out: str, n_cells: int, trials: int) -> list:
    import yaml

    from runners.config import CONF_DIR, validate

    load = lambda g, n: yaml.safe_load((CONF_DIR / g / f"{n}.yaml").read_text())  # noqa: E731
    bench = load("benchmark", "memoryarena_math")
    bench["params"]["data_dir"] = "fixtures"
    runner = {**load("runner", "default"), "output_dir": out, "display": "none", "concurrency": 32, "cache": False,
              "limit": 2, "trials": trials}
    return [validate({"method": load("method", "full_context"), "benchmark": bench, "runner": runner, "roles": {"judge": "agent", "tool": "agent"},
                      "backbone": {"name": f"fake{i}", "kind": "openai", "model": "fake-model", "base_url": url,
                                   "api_key_env": None, "max_inflight": 64, "timeout_s": 30}}) for i in range(n_cells)]


async def sweep_wall(url: str, n_cells: int, trials: int, serial: bool = False) -> float:
    import tempfile

    from runners.progress import Progress
    from runners.run import BackbonePool, Scheduler, prepare_cells

    with tempfile.TemporaryDirectory() as out:
        cells = cell_configs(url, out, n_cells, trials)
        pool = BackbonePool(None)
        prepared = prepare_cells(cells)
        t0 = time.perf_counter()
        if serial:  # the former sweep: each cell awaited before the next starts
            for p in prepared:
                await Scheduler(Path(out), pool, Progress("none"), 32).run([p])
        else:
            await Scheduler(Path(out), pool, Progress("none"), 32).run(prepared)
        wall = time.perf_counter() - t0
        await pool.aclose()
    return wall


def cells_report(url: str, repeats: int) -> None:
    asyncio.run(sweep_wall(url, 1, 2))  # warm-up
    runs: dict[str, list[float]] = {"1 cell x 32": [], "4 cells x 8": [], "4 cells x 8, one after another": []}
    for _ in range(repeats):
        runs["1 cell x 32"].append(asyncio.run(sweep_wall(url, 1, 16)))
        runs["4 cells x 8"].append(asyncio.run(sweep_wall(url, 4, 4)))
        runs["4 cells x 8, one after another"].append(asyncio.run(sweep_wall(url, 4, 4, serial=True)))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print("\ncells through one scheduler (Full Context x Formal Reasoning, 32 episodes in flight), medians of", repeats)
    for k, m in med.items():
        print(f"  {k:<32} {m:6.2f} s  {m / med['1 cell x 32']:.2f}x")
    ratio = med["4 cells x 8"] / med["1 cell x 32"]
    print(f"4 x 8 / 1 x 32 = {ratio:.2f}x  " + ("OK (target <= 1.1x)" if ratio <= 1.1 else "ABOVE TARGET (<= 1.1x)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("synthetic", "episodes", "both", "cells", "all"), default="all")
    ap.add_argument("--latency", type=float, default=0.1, help="server-side latency per call, seconds")
    ap.add_argument("--calls", type=int, default=3, help="sequential calls per synthetic episode")
    ap.add_argument("--rounds", type=int, default=3, help="episodes per run = rounds x concurrency")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    a = ap.parse_args()
    levels = tuple(sorted(set(a.levels) | {1}))
    print(f"fake endpoint latency {a.latency * 1000:.0f} ms; medians of {a.repeats} runs of {a.rounds} x N episodes")
    with fake_server(a.latency) as url:
        if a.mode in ("cells", "all"):
            cells_report(url, a.repeats)
        if a.mode in ("synthetic", "both", "all"):
            report(f"synthetic episodes ({a.calls} sequential calls each)", curve(url, synthetic(a.calls), levels, a.rounds, a.repeats))
        if a.mode in ("episodes", "both", "all"):
            report("real episodes (Episode.run: Full Context x Formal Reasoning fixture, agent + judge calls)",
                   curve(url, real_episodes(), levels, a.rounds, a.repeats))


if __name__ == "__main__":
    main()
