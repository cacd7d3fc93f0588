"""One sweep process against `runner.processes=N`, and scaling to 1,024 episodes in flight:
`python -m scripts.perf.processes [--levels 64 256 1024] [--processes 1 2] [--latency fixed:0.1 |
lognormal:2:20] [--episodes-per-slot 2] [--repeats 3]`.

The workload is `scripts/perf/inspect_compare.py`'s (Full Context on 12-call
memoryarena_math-shaped episodes with a 3 KB background, transcripts on, records compressed, one
cell), run as a user runs it (`python -m runners.sweep`, a whole process, `runner.processes=P`)
against an endpoint in its own process (one asyncio loop: `tests/fake_openai.py`'s
`serve_asyncio`) whose replies take either a fixed time (`fixed:0.1`, 100 ms: the harness's CPU
is the limit) or a log-normal time (`lognormal:MEDIAN:P99`, e.g. `lognormal:2:20`, a loaded vLLM
server: median 2 s, p99 20 s). Each level N runs `--episodes-per-slot` × N episodes at N in
flight. Per run:

- episodes/s in the window (first request to last reply) and from process start to exit;
- calls/s in the middle half of the run (the requests between the 25th and the 75th percentile
  of arrivals, over the time they took) against the ideal N / (12 × mean reply time) episodes/s:
  what a harness that cost nothing would sustain with N episodes in flight; and the window's
  episodes/s such a harness would reach in a run this long (`finite_bound`, simulated: with
  heavy-tailed replies the run ends with its slowest slot, far below the steady state);
- harness CPU per call: the sweep process and its workers (`wait4` of the launcher counts the
  process tree), from process start to exit, over the calls;
- the load average before and after.

The processes settings alternate within every repeat (order flipped each repeat); medians of
`--repeats`; the ratio P / 1 per level is of the medians. Results: scripts/perf/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scripts.perf.inspect_compare import (
    CALLS_PER_EPISODE,
    LAUNCH,
    REPO,
    check_harness_cell,
    harness_cmd,
    harness_env,
    workload,
    write_workload,
)


def finite_bound(spec: str, n: int, episodes: int, runs: int = 20) -> float:
    """Episodes/s in the window of a harness that costs nothing: `n` slots each running
    `episodes / n` episodes of 12 sequential replies drawn from `spec` (the run ends with its
    slowest slot; with heavy-tailed replies that is far below n / (12 × mean)); median of `runs`
    simulated runs."""
    fn, _ = latency_fn(spec, seed=1)
    per_slot = max(1, round(episodes / n))
    return statistics.median(
        episodes / max(sum(fn() for _ in range(CALLS_PER_EPISODE * per_slot)) for _ in range(n)) for _ in range(runs)
    )


def latency_fn(spec: str, seed: int = 0) -> tuple[Any, float]:
    """(a function drawing one reply's delay, the mean delay) for `fixed:S` or `lognormal:MEDIAN:P99`."""
    kind, *args = spec.split(":")
    if kind == "fixed":
        s = float(args[0])
        return (lambda: s), s
    if kind == "lognormal":
        median, p99 = float(args[0]), float(args[1])
        mu, sigma = math.log(median), math.log(p99 / median) / 2.3263478740408408  # z of the 99th percentile
        rng = random.Random(seed)
        return (lambda: rng.lognormvariate(mu, sigma)), math.exp(mu + sigma * sigma / 2)
    raise SystemExit(f"--latency {spec!r}: use fixed:SECONDS or lognormal:MEDIAN:P99")


# ------------------------------------------------------------------------------ the endpoint process
def serve(episodes: int, spec: str) -> None:
    """The endpoint: prints its URL, then answers stdin commands `reset` and `stats` (a JSON line)."""
    from scripts.perf.inspect_compare import ShapedEndpoint
    from tests.fake_openai import serve_asyncio

    fake = ShapedEndpoint(workload(episodes, 3000), 0.0, 1500)
    fn, _ = latency_fn(spec)
    fake.latency_fn = fn
    log: list[tuple[float, float]] = []
    fake.on_reply = lambda arrived, delay: log.append((arrived, delay))

    def commands() -> None:
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "reset":
                log.clear()
            elif cmd == "stats":
                got = list(log)
                print(json.dumps({"arrivals": [a for a, _ in got], "delays": [d for _, d in got]}), flush=True)
        os._exit(0)

    async def main() -> None:
        threading.Thread(target=commands, daemon=True).start()
        await serve_asyncio(fake, ready=lambda url: print(url, flush=True))

    asyncio.run(main())


class Endpoint:
    def __init__(self, episodes: int, spec: str) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "scripts.perf.processes", "--serve", "--episodes", str(episodes), "--latency", spec],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.p.stdout is not None and self.p.stdin is not None
        self.url = self.p.stdout.readline().strip()
        if not self.url.startswith("http"):
            raise RuntimeError(f"the endpoint did not start: {self.url!r}")

    def _cmd(self, c: str) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()

    def reset(self) -> None:
        self._cmd("reset")

    def stats(self) -> dict[str, list[float]]:
        self._cmd("stats")
        assert self.p.stdout is not None
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        self.p.wait(10)


# ------------------------------------------------------------------------------------------ one run
def run_one(ep: Endpoint, data_dir: Path, out: Path, level: int, episodes: int, procs: int) -> dict[str, float]:
    cmd = harness_cmd(ep.url, data_dir, out, level, episodes) + [f"runner.processes={procs}"]
    pid_file = out.parent / f"{out.name}.pid"
    env = harness_env()
    ep.reset()
    t0 = time.monotonic()
    with open(out.parent / f"{out.name}.log", "wb") as fh:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", LAUNCH, str(pid_file), *cmd],
            cwd=REPO,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={**env, "PYTHONPATH": str(REPO)},
        )
    t1 = time.monotonic()
    st = ep.stats()
    calls = episodes * CALLS_PER_EPISODE
    if proc.returncode != 0 or len(st["arrivals"]) != calls:
        log = (out.parent / f"{out.name}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"P={procs} N={level}: exit {proc.returncode}, {len(st['arrivals'])}/{calls} calls\n{log}")
    check_harness_cell(out, episodes)
    ru = json.loads(pid_file.read_text().splitlines()[1])
    pairs = sorted(zip(st["arrivals"], st["delays"]))
    start, end = pairs[0][0], max(a + d for a, d in pairs)
    q1, q3 = pairs[len(pairs) // 4][0], pairs[3 * len(pairs) // 4][0]
    return {
        "window": episodes / (end - start),
        "process": episodes / (t1 - t0),
        "middle_calls_s": (len(pairs) // 2) / (q3 - q1),
        "mean_delay": statistics.fmean(d for _, d in pairs),
        "cpu_ms": ru["cpu_s"] / calls * 1000,
        "tail": t1 - end,
        "first": start - t0,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--latency", default="fixed:0.1")
    ap.add_argument("--episodes-per-slot", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--episodes", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.serve:
        return serve(a.episodes, a.latency)
    most = int(max(a.levels) * a.episodes_per_slot)
    _, mean = latency_fn(a.latency)
    root = Path(tempfile.mkdtemp(prefix="perf-procs-"))
    data_dir = write_workload(root / "data", workload(most, 3000)["rows"])
    print(
        f"levels {a.levels}, processes {a.processes}, latency {a.latency} (mean {mean:.3f} s), "
        f"{a.episodes_per_slot:g} episodes per slot; {os.cpu_count()} cores; load average before {os.getloadavg()}",
        flush=True,
    )
    res: dict[tuple[int, int], list[dict[str, float]]] = {}
    ep = Endpoint(most, a.latency)
    try:
        for rep in range(a.repeats):
            for n in a.levels:
                episodes = int(n * a.episodes_per_slot)
                for p in a.processes if rep % 2 == 0 else a.processes[::-1]:
                    out = root / f"r{rep}-n{n}-p{p}"
                    out.mkdir()
                    r = run_one(ep, data_dir, out, n, episodes, p)
                    res.setdefault((n, p), []).append(r)
                    print(
                        f"  N={n:<5} P={p}: window {r['window']:.1f} ep/s, process {r['process']:.1f} ep/s, "
                        f"middle {r['middle_calls_s']:.0f} calls/s, CPU/call {r['cpu_ms']:.2f} ms, "
                        f"tail {r['tail']:.2f} s, load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        ep.close()
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    print(
        f"\n{'N':>5} {'P':>2} {'window ep/s':>11} {'process ep/s':>12} {'process/window':>14} "
        f"{'ideal ep/s':>10} {'middle/ideal':>12} {'finite-run bound':>16} {'CPU/call ms':>11} {'×P=1 (process)':>14}"
    )
    for n in a.levels:
        base = med(r["process"] for r in res[(n, a.processes[0])])
        for p in a.processes:
            rs = res[(n, p)]
            ideal = n / (CALLS_PER_EPISODE * med(r["mean_delay"] for r in rs))
            middle = med(r["middle_calls_s"] for r in rs) / CALLS_PER_EPISODE
            bound = finite_bound(a.latency, n, int(n * a.episodes_per_slot))
            print(
                f"{n:>5} {p:>2} {med(r['window'] for r in rs):>11.1f} {med(r['process'] for r in rs):>12.1f} "
                f"{med(r['process'] / r['window'] for r in rs):>14.2f} {ideal:>10.1f} {middle / ideal:>12.2f} "
                f"{bound:>16.1f} "
                f"{med(r['cpu_ms'] for r in rs):>11.2f} {med(r['process'] for r in rs) / base:>14.2f}"
            )


if __name__ == "__main__":
    main()
