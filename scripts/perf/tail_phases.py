"""What the sweep's tail is made of: `python -m scripts.perf.tail_phases [--episodes 2000] [--code DIR]`.

`tail`'s workload (one cell, 256 in flight, 100 ms per call against the shaped loopback endpoint),
one run of the sweep with its end timed: the moments, relative to the last reply, at which the
last cell's store is marked done (compaction, index) and its transcripts closed, the phases the
sweep enters (`runners.interrupts.set_phase`: report, tables), the heap's release, the terminal
summary, `atexit` and the process's end. The sweep runs under a small wrapper (this file with
`--child`, the checkout's code on its path) that wraps those functions; nothing else changes.
`--code DIR`: another checkout's sweep (run from its folder)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def child(argv: list[str]) -> None:
    """The sweep, with its end's steps stamped (`time.monotonic`, one clock with the endpoint's) to $PHASE_LOG."""
    import atexit

    log_file = open(os.environ["PHASE_LOG"], "a", buffering=1)

    def stamp(what: str) -> None:
        log_file.write(f"{time.monotonic():.4f} {what}\n")

    def timed(owner: object, name: str) -> None:
        fn = getattr(owner, name)

        def wrapper(*a: object, **k: object) -> object:
            stamp(f"{name} start")
            try:
                return fn(*a, **k)
            finally:
                stamp(f"{name} end")

        setattr(owner, name, wrapper)

    stamp("start")
    from runners import heap, interrupts
    from runners.records import store, transcripts

    set_phase = interrupts.set_phase

    def phase(phase: str, **facts: Any) -> None:
        stamp(f"phase {phase}")
        set_phase(phase, **facts)

    interrupts.set_phase = phase
    timed(store.CellStore, "mark_done")
    timed(transcripts.TranscriptStore, "close")
    timed(heap, "release")
    import runners.sweep as sweep

    for name in ("print_report", "compact_summary"):
        timed(sweep, name)
    atexit.register(stamp, "atexit")
    sys.argv = ["runners.sweep", *argv]
    sweep.main()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose sweep runs (default: this one)")
    a = ap.parse_args(argv)
    from scripts.perf.inspect_compare import ShapedEndpoint, harness_cmd, harness_env, workload, write_workload

    w = workload(a.episodes, 3000)
    root = Path(tempfile.mkdtemp(prefix="perf-tail-phases-"))
    write_workload(root / "data", w["rows"])
    log = root / "phases.log"
    env = harness_env()
    env |= {"PYTHONPATH": str(a.code.resolve()), "PHASE_LOG": str(log)}
    load = os.getloadavg()
    try:
        with ShapedEndpoint(w, a.latency, 1500) as ep:
            ep.start_run(None)
            cmd = harness_cmd(ep.base_url, root / "data", root / "out", a.concurrency, a.episodes)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *cmd[3:]]  # not `-m`: any checkout
            p = subprocess.run(cmd, cwd=a.code.resolve(), env=env, capture_output=True, text=True)
            end = time.monotonic()
            if p.returncode != 0:
                raise SystemExit(f"the sweep failed ({p.returncode}):\n{p.stderr[-3000:]}")
            first, last = min(ep.arrivals), max(ep.arrivals) + a.latency
        print(
            f"{a.episodes} episodes, {a.concurrency} in flight, code {a.code}; load {load} → {os.getloadavg()}\n"
            f"window {last - first:.2f} s; tail (last reply → exit) {end - last:.2f} s; "
            f"whole / window {(last - first) / (end - first):.3f}\n\nseconds after the last reply:"
        )
        for line in log.read_text().splitlines():
            t, what = line.split(" ", 1)
            if float(t) >= last - 1.0 or what == "atexit":
                print(f"  {float(t) - last:+8.3f}  {what}")
        print(f"  {end - last:+8.3f}  process gone")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main()
