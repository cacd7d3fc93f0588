"""How each method scales with episodes in flight: `python -m scripts.perf.methods [--methods
full_context flowstate pos] [--levels 1 32 64 128 256] [--latency 0.1] [--rounds 3] [--repeats 3]`.

Full Context, FlowState and PoS (any `conf/method/` name, with its configured params) on the
Formal Reasoning fixture (memoryarena_math, 3 tasks), each episode a real
`runners.episode.Episode` with the method's real work (prompt building, FlowState's state
updates and disclosure, PoS's belief, Sentinel and health), answered by the
scripted backbone (its oracle: every method takes its reference decisions, no noise) after a fixed
`--latency` per call instead of an HTTP endpoint. What this isolates is the method's and the
episode loop's CPU: the HTTP client, the records' storage and the transcripts are the same for
every method and measured by `tail`, `processes` and `inspect_compare`. Each of N workers runs
`--rounds` consecutive episodes (a multiple of the fixture's 3 tasks: equal work per worker).
Per method and N: episodes/s, the speed-up over N = 1 (ideal: N), CPU per call (this process's
`time.process_time`), calls per episode. Medians of `--repeats`, methods alternating within each
repeat, after one untimed warm-up run per method.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time


def method_of(name: str) -> tuple[type, dict]:
    """The method's class and params as `conf/method/<name>.yaml` declares them (the sweep's registry)."""
    from runners.config import group_config, import_target

    cfg = group_config("method", name)
    return import_target(cfg["_target_"], f"method {name}"), dict(cfg.get("params") or {})


async def run_level(name: str, n: int, rounds: int, latency: float) -> tuple[float, float, int]:
    """(episodes/s, CPU ms per call, calls) of N workers × `rounds` episodes of method `name`."""
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.backbones.scripted import ScriptedBackbone
    from runners.episode import Episode

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    tasks = bench.load_tasks()
    backbone = ScriptedBackbone(name="scripted", model="scripted", latency_s=latency)
    cls, params = method_of(name)
    calls = [0]

    async def worker(j: int) -> None:
        for r in range(rounds):
            i = j * rounds + r
            task = tasks[i % len(tasks)]
            ep = Episode(backbone, cell="perf", task_id=task.task_id, trial=i, seed=i)
            rec = await ep.run(ep.make_env(bench, task), cls(backbone=ep.agent, **params))
            if rec.status != "ok":
                raise RuntimeError(f"{name} {task.task_id}#{i}: {rec.status} {rec.error}")
            calls[0] += sum(rec.calls_by_role.values())

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(j) for j in range(n)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return n * rounds / wall, cpu / calls[0] * 1000, calls[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=["full_context", "flowstate", "pos"])
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 32, 64, 128, 256])
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    levels = sorted(set(a.levels) | {1})
    print(
        f"methods {a.methods}, levels {levels}, {a.latency * 1000:.0f} ms per call, {a.rounds} rounds; "
        f"load average before {os.getloadavg()}",
        flush=True,
    )
    res: dict[tuple[str, int], list[tuple[float, float, int]]] = {}
    for m in a.methods:  # imports, prompt files and first-call caches out of the timed runs
        asyncio.run(run_level(m, 2, 1, 0.0))
    for rep in range(a.repeats):
        for n in levels:
            for m in a.methods if rep % 2 == 0 else a.methods[::-1]:
                r = asyncio.run(run_level(m, n, a.rounds, a.latency))
                res.setdefault((m, n), []).append(r)
                print(f"  {m:<13} N={n:<4} {r[0]:8.1f} ep/s, CPU/call {r[1]:.3f} ms, load {os.getloadavg()[0]:.2f}")
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    print(f"\n{'method':<13} {'N':>4} {'ep/s':>8} {'× N=1':>7} {'ideal':>6} {'CPU/call ms':>11} {'calls/episode':>13}")
    for m in a.methods:
        base = med(r[0] for r in res[(m, 1)])
        for n in levels:
            rs = res[(m, n)]
            rate = med(r[0] for r in rs)
            per_ep = rs[0][2] / (n * a.rounds)
            print(
                f"{m:<13} {n:>4} {rate:>8.1f} {rate / base:>7.1f} {n:>6} {med(r[1] for r in rs):>11.3f} {per_ep:>13.1f}"
            )


if __name__ == "__main__":
    main()
