"""The whole process against its in-flight window:
`python -m scripts.perf.tail [--episodes 1024] [--concurrency 256] [--repeats 3] [--against DIR]`.

The sweep as a user runs it (`scripts/perf/inspect_compare.py`'s workload: Full Context on
12-call memoryarena_math-shaped episodes, transcripts on, one cell) against the same loopback
endpoint (100 ms per call, arrivals stamped), as a whole process. Per run: episodes/s in the
window (first request to last reply), episodes/s from the first request to the process's exit
(start-up excluded: the window plus the tail), the tail itself (last reply to exit: the last
cell's compaction, the tables), episodes/s from process start to exit, and the process's CPU
per call from the first request to its exit. `--background-chars` / `--reply-chars` (default
3000 / 1500) change the prompt's and the replies' length. With `--against DIR`
another checkout runs the same episodes in the same rounds (order alternating). Medians of
`--repeats`, load average before and after.

Before each round the machine's speed is measured (`scripts/perf/calibrate.py`: a fixed
pure-Python loop and a loopback round trip, in a fresh process) and printed; the summary gives
their medians and the CPU per call divided by the loop's milliseconds (`CPU/loop`, ×1000), which
changes with the code but much less with the hour: compare that column, not the CPU per call
alone, between runs taken at different times.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from scripts.perf.calibrate import describe, measure_in_child
from scripts.perf.inspect_compare import (
    REPO,
    ShapedEndpoint,
    check_harness_cell,
    harness_cmd,
    harness_env,
    run_one,
    transcripts_on,
    workload,
    write_workload,
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument(
        "--background-chars",
        type=int,
        default=3000,
        help="the first request's background text (the prompt's size); with --reply-chars: what the CPU per "
        "call owes to the texts' length and what to the call itself",
    )
    ap.add_argument("--reply-chars", type=int, default=1500, help="the reasoning tool's reply")
    ap.add_argument("--against", type=Path, help="another checkout, run on the same episodes in the same rounds")
    ap.add_argument(
        "--variant",
        nargs="+",
        metavar="KEY=VALUE",
        help="also run this checkout with these sweep overrides (e.g. "
        "runner.compact_records=false, runner.transcripts=false), in the same rounds: what a part costs",
    )
    a = ap.parse_args(argv)
    codes = (
        {"this": REPO}
        | ({"against": a.against.resolve()} if a.against else {})
        | ({"variant": REPO} if a.variant else {})
    )
    w = workload(a.episodes, a.background_chars)
    root = Path(tempfile.mkdtemp(prefix="perf-tail-"))
    data_dir = write_workload(root / "data", w["rows"])
    env = harness_env()
    rows: dict[str, list[dict[str, float]]] = {label: [] for label in codes}
    yardsticks: list[dict[str, float]] = []
    print(
        f"{a.episodes} episodes, {a.concurrency} in flight, {a.latency * 1000:.0f} ms per call, "
        f"{a.background_chars} background / {a.reply_chars} reply chars; "
        f"load average before {os.getloadavg()}",
        flush=True,
    )
    try:
        with ShapedEndpoint(w, a.latency, a.reply_chars) as ep:
            for rep in range(a.repeats):
                yardsticks.append(measure_in_child())
                print(f"  machine  {describe(yardsticks[-1])}", flush=True)
                for label in list(codes) if rep % 2 == 0 else list(codes)[::-1]:
                    out = root / f"r{rep}-{label}"
                    cmd = harness_cmd(ep.base_url, data_dir, out, a.concurrency, a.episodes) + (
                        a.variant if label == "variant" else []
                    )
                    r = run_one(
                        ep,
                        "harness",
                        cmd,
                        out,
                        a.concurrency,
                        a.episodes,
                        {**env, "PYTHONPATH": str(codes[label])},
                        cwd=codes[label],
                    )
                    check_harness_cell(out, a.episodes, transcripts=label != "variant" or transcripts_on(a.variant))
                    window = a.episodes / r.rate
                    tail = r.wall_s - r.first_request_s - window
                    row = {
                        "window": r.rate,
                        "from_first": a.episodes / (r.wall_s - r.first_request_s),
                        "process": a.episodes / r.wall_s,
                        "tail": tail,
                        "first": r.first_request_s,
                        "wall": r.wall_s,
                        "rss": r.rss_mb,
                        "cpu_ms": r.cpu_ms,
                    }
                    rows[label].append(row)
                    print(
                        f"  {label:<8} window {row['window']:.1f} ep/s, "
                        f"first request → exit {row['from_first']:.1f} ep/s, "
                        f"tail {tail:.2f} s, wall {r.wall_s:.1f} s, CPU/call {r.cpu_ms:.2f} ms, "
                        f"load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
                    shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    loop = med(y["loop_ms"] for y in yardsticks)
    print(
        f"machine (median of {len(yardsticks)}): "
        f"{describe({'loop_ms': loop, 'loopback_us': med(y['loopback_us'] for y in yardsticks)})}"
    )
    print(
        f"\n{'code':>8} {'window ep/s':>12} {'first→exit ep/s':>16} {'ratio':>6} {'tail s':>7} "
        f"{'start→exit ep/s':>16} {'first req s':>12} {'RSS MB':>7} {'CPU/call ms':>12} {'CPU/loop':>9}"
    )
    for label, rs in rows.items():
        m = {k: med(r[k] for r in rs) for k in rs[0]}
        print(
            f"{label:>8} {m['window']:>12.1f} {m['from_first']:>16.1f} "
            f"{med(r['from_first'] / r['window'] for r in rs):>6.2f} "
            f"{m['tail']:>7.2f} {m['process']:>16.1f} {m['first']:>12.2f} {m['rss']:>7.0f} {m['cpu_ms']:>12.2f} "
            f"{m['cpu_ms'] / loop * 1000:>9.1f}"
        )


if __name__ == "__main__":
    main()
