"""Episode throughput vs. concurrency against a fake OpenAI endpoint with fixed server latency.

The fake server (tests/fake_openai.py) runs in its own process and answers every call after
`--latency` seconds (default 100 ms); `--endpoint asyncio` (default) serves from one event loop,
`--endpoint threads` is the threaded test server (a thread per connection), which costs the
shared cores several times more CPU per call. Two workloads, each at 1, 4, 16, 32, 64 concurrent
episodes:

- `synthetic`: an episode = `--calls` (default 3) sequential OpenAIBackbone calls;
- `episodes`:  real episodes (`runners.episode.Episode`, Full Context on the Formal Reasoning
  fixture; agent and judge calls go to the same endpoint).

Each point is the median of `--repeats` runs of `--rounds` × N episodes at concurrency N. With
`--schedule workers` (default) each of N workers runs `--rounds` consecutive episodes, so with
`--rounds` a multiple of the fixture's 3 tasks (4, 6 and 8 calls) every worker runs the same work
and the wall time is the steady state; `--schedule queue` takes the rounds × N episodes from one
queue, whose tail (a few long episodes still running while the other slots are idle) lowers the
ratio whatever the harness does (with 3 rounds: at most 26.2× at 32 and 52.4× at 64 for a
zero-cost harness). The in-flight bound is set to the largest N so that it is not the limit being
measured. Prints episodes/s per N, rate(N)/rate(1) (targets: ≥ 29× at 32, ≥ 50× at 64), the
CPU per episode of the harness (this process) and of the endpoint process, the median latency
of a call as the episode saw it (the endpoint's 100 ms plus sending and reading the reply: what
grows when one event loop has a burst of replies to read, or when other processes hold the cores),
and the speed-up a harness that costs nothing would reach with the same episodes and schedule
(`makespan`: every call one equal call-time).

`--against DIR` measures the harness of another checkout (e.g. `git worktree add /tmp/base <commit>`)
side by side: every repeat runs this checkout and DIR one after the other (each in a fresh process,
same endpoint), and both medians are printed.

`--mode cells` runs whole cells through the sweep's scheduler (`runners.run.Scheduler`, Full
Context × Formal Reasoning fixture, 2 tasks, backbones pointing at the fake endpoint):
4 cells × 8 episodes against 1 cell × 32 episodes, 32 episodes in flight, and the 4 cells run one
after another as the sweep did before (target: 4 × 8 within 1.1× of 1 × 32).

Run: `.venv/bin/python -m scripts.perf.concurrency [--mode all|cells|synthetic|episodes] [--repeats 3]`."""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

from scripts.perf import checkout

if TYPE_CHECKING:
    from runners.backbones.openai import OpenAIBackbone

REPO = Path(__file__).resolve().parents[2]
LEVELS = (1, 4, 16, 32, 64)


@contextmanager
def fake_server(latency_s: float, endpoint: str = "asyncio") -> Iterator[str]:
    """Start `python -m tests.fake_openai` in a subprocess; yield its base URL (its pid: `server_pid`)."""
    global server_pid
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_openai", "--latency", str(latency_s), "--react", "--server", endpoint],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        if not url.startswith("http://"):
            raise RuntimeError(f"fake server did not start (printed {url!r})")
        server_pid = proc.pid
        yield url
    finally:
        server_pid = None
        if proc.stdin:
            proc.stdin.close()  # the server exits when its stdin closes
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


server_pid: int | None = None


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of process `pid`, all its threads (Linux /proc, in 10 ms clock
    ticks); None elsewhere."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def backbone(url: str, max_inflight: int) -> OpenAIBackbone:
    from runners.backbones.openai import OpenAIBackbone

    return OpenAIBackbone(
        name="fake",
        model="fake-model",
        base_url=url,
        api_key="EMPTY",
        sampling={"temperature": 0.0},
        extra_body={},
        max_inflight=max_inflight,
        timeout_s=30,
        max_retries=2,
        backoff_base_s=0.05,
    )


Workload = Callable[[object, int], Awaitable[list[float]]]
"""An episode: `await episode(backbone, i)` runs the i-th one and returns its calls' latencies (s)."""


def synthetic(calls: int) -> Workload:
    async def episode(bb: Any, i: int) -> list[float]:
        history = [{"role": "system", "content": "You are a test agent."}]
        latencies = []
        for t in range(calls):
            history.append({"role": "user", "content": f"episode {i} step {t}"})
            t0 = time.perf_counter()
            c = await bb.complete(history, role="agent")
            latencies.append(time.perf_counter() - t0)
            history.append({"role": "assistant", "content": c.text})
        return latencies

    return episode


def real_episodes() -> Workload:
    from baselines.full_context import FullContext
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.episode import Episode

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    tasks = bench.load_tasks()

    async def episode(bb: Any, i: int) -> list[float]:
        task = tasks[i % len(tasks)]
        ep = Episode(bb, cell="perf", task_id=task.task_id, trial=i, seed=i)
        rec = await ep.run(ep.make_env(bench, task), FullContext(ep.agent))
        if rec.status != "ok":
            raise RuntimeError(f"episode {task.task_id}#{i} failed: {rec.error}")
        calls = [
            *rec.task_calls,
            *(c for r in rec.requests for c in [*r.begin_calls, *(c for s in r.steps for c in s.calls), *r.end_calls]),
        ]
        return [
            c.latency_s for c in calls
        ]  # as the episode saw them: sending, the endpoint's 100 ms, reading the reply

    return episode


Point = tuple[float, float, "float | None", float, float]
"""(episodes/s, harness CPU ms per episode, endpoint CPU ms per episode or None, median call latency ms,
episodes per call-time of a harness that costs nothing: see `makespan`)."""


def makespan(calls: list[int], n: int, rounds: int, schedule: str) -> int:
    """How many call-times the slowest of n slots is busy when every call takes the same time and
    the harness costs nothing (`calls[i]`: the calls of episode i): `workers` gives worker j the
    episodes j·rounds … j·rounds+rounds−1; `queue` hands episodes out in order to whichever slot is free."""
    if schedule == "workers":
        return max(sum(calls[j * rounds : (j + 1) * rounds]) for j in range(n))
    slots = [0] * n
    for c in calls:
        heapq.heapreplace(slots, slots[0] + c)
    return max(slots)


async def rate(
    url: str,
    episode: Workload,
    n: int,
    rounds: int,
    max_inflight: int,
    schedule: str = "workers",
    endpoint_pid: int | None = None,
) -> Point:
    """One run of `rounds * n` episodes with n in flight: n workers of `rounds` consecutive
    episodes, or one shared queue."""
    bb = backbone(url, max_inflight)
    await asyncio.gather(
        *(episode(bb, -1 - j) for j in range(n))
    )  # warm-up: n connections and lazy imports off the clock

    latencies: list[float] = []
    calls = [0] * (rounds * n)

    async def run_one(i: int) -> None:
        lat = await episode(bb, i)
        latencies.extend(lat)
        calls[i] = len(lat)

    if schedule == "workers":

        async def worker(j: int) -> None:
            for k in range(rounds):
                await run_one(j * rounds + k)

        jobs = [worker(j) for j in range(n)]
    else:
        sem = asyncio.Semaphore(n)

        async def one(i: int) -> None:
            async with sem:
                await run_one(i)

        jobs = [one(i) for i in range(rounds * n)]
    e0, c0, t0 = process_cpu_s(endpoint_pid), time.process_time(), time.perf_counter()
    await asyncio.gather(*jobs)
    wall, cpu, e1 = time.perf_counter() - t0, time.process_time() - c0, process_cpu_s(endpoint_pid)
    await bb.aclose()
    done = rounds * n
    endpoint = (e1 - e0) if e0 is not None and e1 is not None else None
    if endpoint is not None and endpoint < 0.1:  # /proc counts 10 ms clock ticks: too few to say
        endpoint = None
    return (
        done / wall,
        cpu / done * 1000,
        endpoint / done * 1000 if endpoint is not None else None,
        statistics.median(latencies) * 1000,
        done / makespan(calls, n, rounds, schedule),
    )


def curve(
    url: str,
    episode: Workload,
    levels: tuple[int, ...],
    rounds: int,
    repeats: int,
    schedule: str = "workers",
    endpoint_pid: int | None = None,
) -> dict[int, Point]:
    """Per level: the medians over `repeats` runs of each figure."""
    return {
        n: medians(
            [asyncio.run(rate(url, episode, n, rounds, max(levels), schedule, endpoint_pid)) for _ in range(repeats)]
        )
        for n in levels
    }


def medians(runs: list[Point]) -> Point:
    ends = [r[2] for r in runs if r[2] is not None]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        statistics.median(ends) if ends else None,
        statistics.median(r[3] for r in runs),
        statistics.median(r[4] for r in runs),
    )


TARGETS = {32: 29.0, 64: 50.0}


def report(title: str, points: dict[int, Point]) -> None:
    print(f"\n{title}")
    print(
        f"{'concurrent':>10}  {'episodes/s':>10}  {'speed-up':>8}  {'harness CPU/ep':>14}  "
        f"{'endpoint CPU/ep':>15}  {'median call':>11}"
        f"  {'zero-cost harness':>17}"
    )
    base, ideal = points[1][0], points[1][4]
    for n, (r, cpu, ecpu, lat, best) in points.items():
        e = f"{ecpu:.2f} ms" if ecpu is not None else "-"
        print(
            f"{n:>10}  {r:>10.2f}  {r / base:>7.1f}x  {cpu:>11.2f} ms  {e:>15}  {lat:>8.1f} ms  {best / ideal:>16.1f}x"
        )
    for n, target in TARGETS.items():
        if n in points:
            ratio = points[n][0] / base
            verdict = f"OK (target >= {target:g}x)" if ratio >= target else f"BELOW TARGET (>= {target:g}x)"
            print(f"rate({n})/rate(1) = {ratio:.1f}x  {verdict}")


def cell_configs(url: str, out: str, n_cells: int, trials: int) -> list:
    import yaml

    from runners.config import CONF_DIR, validate

    load = lambda g, n: yaml.safe_load((CONF_DIR / g / f"{n}.yaml").read_text())  # noqa: E731
    bench = load("benchmark", "memoryarena_math")
    bench["params"]["data_dir"] = "fixtures"
    runner = {
        **load("runner", "default"),
        "output_dir": out,
        "display": "none",
        "concurrency": 32,
        "cache": False,
        "limit": 2,
        "trials": trials,
    }
    return [
        validate(
            {
                "method": load("method", "full_context"),
                "benchmark": bench,
                "runner": runner,
                "roles": {"judge": "agent", "tool": "agent"},
                "backbone": {
                    "name": f"fake{i}",
                    "kind": "openai",
                    "model": "fake-model",
                    "base_url": url,
                    "api_key_env": None,
                    "max_inflight": 64,
                    "timeout_s": 30,
                },
            }
        )
        for i in range(n_cells)
    ]


async def sweep_wall(url: str, n_cells: int, trials: int, serial: bool = False) -> float:
    import tempfile

    from runners.progress import Progress
    from runners.pool import BackbonePool
    from runners.prepare import prepare_cells
    from runners.run import Scheduler

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


WORKLOADS = {"synthetic": lambda a: synthetic(a.calls), "episodes": lambda a: real_episodes()}


def titles(a: argparse.Namespace) -> dict[str, str]:
    how = (
        f"{a.rounds} consecutive episodes per worker"
        if a.schedule == "workers"
        else f"{a.rounds} x N episodes from one queue"
    )
    return {
        "synthetic": f"synthetic episodes ({a.calls} sequential calls each; {how})",
        "episodes": f"real episodes (Episode.run: Full Context x Formal Reasoning fixture, agent + judge calls; {how})",
    }


def against(a: argparse.Namespace, url: str, workloads: list[str], levels: tuple[int, ...]) -> None:
    """This checkout and `a.against`, alternating per repeat, each run in a fresh process."""
    sides = {"this checkout": str(REPO), f"--against {a.against}": str(Path(a.against).resolve())}
    runs: dict[tuple[str, str], dict[int, list]] = {(w, s): {n: [] for n in levels} for w in workloads for s in sides}
    for r in range(a.repeats):
        for side, path in sides.items() if r % 2 == 0 else reversed(list(sides.items())):  # alternate who goes first
            for w in workloads:
                args = [
                    "--url",
                    url,
                    "--mode",
                    w,
                    "--levels",
                    *map(str, levels),
                    "--repeats",
                    "1",
                    "--rounds",
                    str(a.rounds),
                    "--calls",
                    str(a.calls),
                    "--schedule",
                    a.schedule,
                ] + (["--endpoint-pid", str(server_pid)] if server_pid else [])
                out = checkout.measure("scripts.perf.concurrency", path, args)
                for n, point in out["points"].items():
                    runs[(w, side)][int(n)].append(point)
    for w in workloads:
        for side in sides:
            points = {n: medians(v) for n, v in runs[(w, side)].items()}
            report(f"{titles(a)[w]} -- {side}, medians of {a.repeats}", points)
        this, other = (runs[(w, s)] for s in sides)
        for n in levels:
            if n != 1:
                ratio = lambda v: statistics.median(p[0] for p in v[n]) / statistics.median(p[0] for p in v[1])  # noqa: E731
                print(f"  speed-up at {n}: this checkout {ratio(this):.1f}x, {a.against} {ratio(other):.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("synthetic", "episodes", "both", "cells", "all"), default="all")
    ap.add_argument("--latency", type=float, default=0.1, help="server-side latency per call, seconds")
    ap.add_argument("--calls", type=int, default=3, help="sequential calls per synthetic episode")
    ap.add_argument("--rounds", type=int, default=3, help="episodes per run = rounds x concurrency")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    ap.add_argument(
        "--schedule",
        choices=("workers", "queue"),
        default="workers",
        help=(
            "workers: each of N workers runs --rounds consecutive episodes; "
            "queue: N slots take rounds x N episodes from one queue"
        ),
    )
    ap.add_argument(
        "--endpoint",
        choices=("asyncio", "threads"),
        default="asyncio",
        help="the fake endpoint's server (tests/fake_openai.py)",
    )
    ap.add_argument(
        "--against", metavar="DIR", help="also measure the harness checked out at DIR, alternating with this one"
    )
    ap.add_argument(
        "--harness", metavar="DIR", help=argparse.SUPPRESS
    )  # import runners.* etc. from DIR (used by --against)
    ap.add_argument("--url", help=argparse.SUPPRESS)  # the endpoint of the parent (a child of --against)
    ap.add_argument("--endpoint-pid", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    levels = tuple(sorted(set(a.levels) | {1}))
    if a.harness:
        checkout.use(a.harness)
    if a.json:  # one workload against --url, as JSON (a child of --against)
        w = "episodes" if a.mode == "episodes" else "synthetic"
        points = curve(a.url, WORKLOADS[w](a), levels, a.rounds, a.repeats, a.schedule, a.endpoint_pid)
        print(json.dumps({"harness": checkout.location(), "points": {n: list(p) for n, p in points.items()}}))
        return
    print(
        f"fake endpoint ({a.endpoint}) latency {a.latency * 1000:.0f} ms; medians of {a.repeats} runs; "
        f"schedule {a.schedule}"
    )
    if a.mode in ("episodes", "both", "all") and a.schedule == "workers" and a.rounds % 3:
        print(f"note: --rounds {a.rounds} is not a multiple of the fixture's 3 tasks: workers run different work")
    workloads = [w for w in ("synthetic", "episodes") if a.mode in (w, "both", "all")]
    with fake_server(a.latency, a.endpoint) as url:
        if a.against:
            against(a, url, workloads, levels)
            return
        if a.mode in ("cells", "all"):
            cells_report(url, a.repeats)
        for w in workloads:
            report(titles(a)[w], curve(url, WORKLOADS[w](a), levels, a.rounds, a.repeats, a.schedule, server_pid))


if __name__ == "__main__":
    main()
