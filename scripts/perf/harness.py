"""Harness overhead, measured side by side in one run (medians; the machine is noisy).

1. `python -m runners.sweep --help` wall time (target < 2 s: heavy imports are lazy).
2. The offline default sweep (`python -m runners.sweep`) wall time (target < 60 s on 2 cores).
3. Per method, the median per-step time spent outside the backbone (harness + method + env),
   with the scripted backbone on the Formal Reasoning fixture.

Run: `python -m scripts.perf.harness [--repeats 3]`."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - t


def step_overheads(method: str) -> list[float]:
    import yaml

    from runners.config import CONF_DIR, validate
    from runners.progress import Progress
    from runners.pool import BackbonePool
    from runners.prepare import prepare_cell
    from runners.run import run_cell
    from runners.records.store import read_jsonl

    load = lambda g, n: yaml.safe_load((CONF_DIR / g / f"{n}.yaml").read_text())  # noqa: E731
    bench = load("benchmark", "memoryarena_math")
    bench["params"]["data_dir"] = "fixtures"
    with tempfile.TemporaryDirectory() as out:
        cfg = validate(
            {
                "method": load("method", method),
                "backbone": load("backbone", "scripted"),
                "benchmark": bench,
                "runner": {**load("runner", "default"), "output_dir": out, "display": "none", "concurrency": 1},
            }
        )
        asyncio.run(run_cell(prepare_cell(cfg), Path(out), BackbonePool(None), Progress("none")))
        recs, _ = read_jsonl(Path(out) / cfg.cell_name / "episodes.jsonl")
    return [s["overhead_s"] for r in recs for q in r["requests"] for s in q["steps"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    py = sys.executable
    helps = [timed([py, "-m", "runners.sweep", "--help"]) for _ in range(a.repeats)]
    print(f"sweep --help: median {statistics.median(helps):.2f} s (target < 2 s)")
    sweeps = []
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory() as out:
            sweeps.append(timed([py, "-m", "runners.sweep", f"runner.output_dir={out}", "runner.display=none"]))
    print(f"offline default sweep: median {statistics.median(sweeps):.2f} s wall (target < 60 s)")
    from runners.config import available

    print(f"{'method':<24} {'steps':>6} {'median ms/step outside backbone':>34}")
    for m in available("method"):
        try:
            xs = [x for _ in range(a.repeats) for x in step_overheads(m)]
        except Exception as e:  # a method whose optional extra is missing
            print(f"{m:<24} skipped ({type(e).__name__}: {str(e)[:60]})")
            continue
        print(f"{m:<24} {len(xs):>6} {1000 * statistics.median(xs):>34.2f}")


if __name__ == "__main__":
    main()
