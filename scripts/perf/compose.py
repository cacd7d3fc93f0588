"""Hydra's compositions with and without the project's shortcuts: `python -m scripts.perf.compose
[--rounds 3] [--loops 10] [--plan experiment=pos_table1 ...] [--plan-runs 5]`.

A sweep composes its config twice at its start (`hydra.main`) and once per cell of its grid
(`runners.sweep.expand_cells`); each composition reads every config file on the way
(runners/hydra_shortcuts.py keeps each file text's parse for the process), and `hydra.main` composes once
more only to read `hydra.mode` (skipped where nothing can set it: `runners.hydra_shortcuts.skip_mode_probe`).
Two measurements, each with
`HARNESS_HYDRA_SHORTCUTS=1` (the default) and `=0` (Hydra as it is) in alternating fresh processes:

- `compose` in a loop: three configs (the default, a method × benchmark, a preset with its
  method), `--loops` times each after one warm-up composition, the process's CPU per composition
  (median), `--rounds` processes each;
- a whole process (both shortcuts): `runners.sweep <--plan overrides> runner.plan=true` (the grid composed, every cell
  validated and planned, nothing run), its CPU (user + system of the child), `--plan-runs` each.

Medians and the ratio cached / uncached are printed. Results: scripts/perf/README.md ("The default
suite and a sweep's start on a slower machine").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CASES = [[], ["method=flowstate", "benchmark=memoryarena_math"], ["experiment=pos_table1", "method=pos"]]

_LOOP = """
import json, statistics, sys, time
from hydra import compose, initialize_config_dir
from runners.config import CONF_DIR
from runners.sweep import register_resolvers
register_resolvers()
cases, loops = json.loads(sys.argv[1]), int(sys.argv[2])
with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
    compose(config_name="config", overrides=[])
    times = []
    for _ in range(loops):
        for o in cases:
            t = time.process_time()
            compose(config_name="config", overrides=o)
            times.append(time.process_time() - t)
print(json.dumps(statistics.median(times) * 1000))
"""


def _env(cached: bool) -> dict[str, str]:
    return os.environ | {"HARNESS_HYDRA_SHORTCUTS": "1" if cached else "0"}


def compose_ms(cached: bool, loops: int) -> float:
    """Median CPU ms of one composition in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _LOOP, json.dumps(CASES), str(loops)],
        cwd=REPO,
        env=_env(cached),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def plan_cpu_s(cached: bool, overrides: list[str], out_dir: Path) -> float:
    """CPU seconds (user + system) of a planning sweep process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, "-m", "runners.sweep", *overrides, "runner.plan=true", f"runner.output_dir={out_dir}"],
        cwd=REPO,
        env=_env(cached),
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"the planning sweep failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per variant for the compose loop")
    ap.add_argument("--loops", type=int, default=10, help="compositions of each of the three configs per process")
    ap.add_argument("--plan", nargs="*", default=["experiment=pos_table1"], help="overrides of the planning sweep")
    ap.add_argument("--plan-runs", type=int, default=5, help="planning sweeps per variant (0: none)")
    a = ap.parse_args(argv)
    print(f"load average before {os.getloadavg()}", flush=True)
    loop: dict[bool, list[float]] = {True: [], False: []}
    for r in range(a.rounds):
        for cached in (True, False) if r % 2 == 0 else (False, True):
            loop[cached].append(compose_ms(cached, a.loops))
            print(f"  compose, {'cached' if cached else 'uncached'}: {loop[cached][-1]:.1f} ms", flush=True)
    plan: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="perf-compose-") as tmp:
        for r in range(a.plan_runs):
            for cached in (True, False) if r % 2 == 0 else (False, True):
                plan[cached].append(plan_cpu_s(cached, a.plan, Path(tmp) / f"r{r}-{int(cached)}"))
                print(f"  plan, {'cached' if cached else 'uncached'}: {plan[cached][-1]:.2f} CPU-s", flush=True)
    print(f"load average after {os.getloadavg()}\n")
    c, u = statistics.median(loop[True]), statistics.median(loop[False])
    print(f"compose (median of {a.rounds} processes): cached {c:.1f} ms, uncached {u:.1f} ms, ratio {c / u:.2f}")
    if a.plan_runs:
        c, u = statistics.median(plan[True]), statistics.median(plan[False])
        print(
            f"`runners.sweep {' '.join(a.plan)} runner.plan=true` (median of {a.plan_runs}): "
            f"cached {c:.2f} CPU-s, uncached {u:.2f} CPU-s, ratio {c / u:.2f}"
        )


if __name__ == "__main__":
    main()
