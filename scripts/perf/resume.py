"""A finished experiment resumed with nothing to run:
`python -m scripts.perf.resume [--episodes 1000 10000] [--repeats 3] [--against DIR]`.

Runs one sweep per size to the end (the toy benchmark × Full Context with the scripted backbone,
`runner.trials` = episodes / 4, transcripts off so that building is quick), then times, as whole
processes, the same sweep command again (every episode is on disk: nothing to run, the tables
written again), the sizes alternating inside each repeat. With `--against DIR` another checkout
resumes its own copy of each experiment (the same records; its resume may rewrite them) in the
same rounds. Prints medians, the peak RSS, the load average before and after, and the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scripts.perf.analysis import timed  # one measuring helper for the perf scripts

REPO = Path(__file__).resolve().parents[2]


def sweep(out: Path, episodes: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={out}",
        "runner.display=none",
        "benchmark=toy",
        "method=full_context",
        f"runner.trials={max(1, episodes // 4)}",
        "runner.concurrency=64",
        "runner.transcripts=false",
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--against", type=Path, help="another checkout, resuming its own copy of each experiment in the same rounds"
    )
    ap.add_argument("--keep", type=Path, help="build the experiments here and keep them (reused when present)")
    a = ap.parse_args(argv)
    codes = {"this": REPO} | ({"against": a.against.resolve()} if a.against else {})
    times: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        root = a.keep or Path(d)
        outs: dict[tuple[str, int], Path] = {}
        for n in a.episodes:
            built = root / f"built{n}"
            if not (built / "offline_demo" / "tables" / "summary.md").exists():
                t0 = time.perf_counter()
                timed(sweep(built, n), REPO)
                print(f"built {n} episodes in {time.perf_counter() - t0:.1f} s", flush=True)
            for label in codes:
                outs[label, n] = root / f"{label}{n}"
                shutil.rmtree(outs[label, n], ignore_errors=True)
                shutil.copytree(built, outs[label, n])
        for (label, n), out in outs.items():  # a first resume each (writes what a resume writes), not counted
            timed(sweep(out, n), codes[label])
        print(f"load average before: {os.getloadavg()}", flush=True)
        for r in range(a.repeats):
            for n in a.episodes:
                for label, code in codes.items():
                    times.setdefault((label, n), []).append(timed(sweep(outs[label, n], n), code))
            print(f"round {r + 1}/{a.repeats} done, load average {os.getloadavg()}", flush=True)
        print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    print(f"\n{'code':>8} {'episodes':>9} {'median s':>9} {'runs s':>24} {'CPU s':>7} {'peak RSS MB':>12}")
    for (label, n), runs in times.items():
        print(
            f"{label:>8} {n:>9} {med(w for w, _, _ in runs):>9.2f} {', '.join(f'{w:.2f}' for w, _, _ in runs):>24} "
            f"{med(c for _, _, c in runs):>7.2f} {max(m for _, m, _ in runs):>12.0f}"
        )
    sizes = sorted(a.episodes)
    for label in codes:
        if len(sizes) > 1:
            lo, hi = med(w for w, _, _ in times[label, sizes[0]]), med(w for w, _, _ in times[label, sizes[-1]])
            print(f"{label}: resume at {sizes[-1]} / at {sizes[0]} episodes = {hi / lo:.2f}×")
    if a.against:
        for n in sizes:
            for i, unit in ((0, "wall"), (2, "CPU")):
                t, o = med(r[i] for r in times["this", n]), med(r[i] for r in times["against", n])
                print(f"resume at {n} ({unit}): this {t:.2f} s vs against {o:.2f} s = {o / t:.1f}× less")


if __name__ == "__main__":
    main()
