"""What a sweep really leaves, for the analysis benchmarks:
`python -m scripts.perf.real_experiment --episodes 10000 --out DIR`.

The sweep as a user runs it (`scripts/perf/inspect_compare.py`'s workload: Full Context on 12-call
memoryarena_math-shaped episodes, every task distinct, transcripts on) against the shaped loopback
endpoint answering at once, so each episode leaves its own ~33 KB record (compressed as the sweep
compresses it) and its own transcript, as a real sweep does. `analysis` and `report_load` measure
`runners.aggregate` and `runners.view` on these experiments (before 2026-12-06 they replicated the
offline demo's ~9 KB plain records under new task ids, every copy pointing at the same few
transcripts: 2.1× less work for aggregate and 4.4× less for the view than real output of the same
size). An experiment already under `DIR/exp<N>` is reused.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from scripts.perf.inspect_compare import (
    REPO,
    ShapedEndpoint,
    harness_cmd,
    harness_env,
    workload,
    write_workload,
)

EXPERIMENT = "inspect_compare"  # the experiment name harness_cmd gives


def real_experiment(root: Path, n: int, concurrency: int = 256, code: Path = REPO, trials: int = 1) -> Path:
    """`root/exp<n>/inspect_compare`: the experiment of a sweep of `n` episodes (made once); with
    `trials` > 1, `n / trials` distinct tasks run `trials` times each (`root/exp<n>x<trials>`): the
    same number of episodes over a dataset `trials` times smaller (tasks of ~3.7 KB each; since
    2026-12-07 the sweep reads them lazily, `runners.api.JsonlTasks`, and holds ~100 bytes a task)."""
    if trials < 1 or n % trials:
        raise SystemExit(f"--trials {trials} must divide --episodes {n}")
    out = Path(root) / (f"exp{n}" if trials == 1 else f"exp{n}x{trials}")
    exp = out / EXPERIMENT
    if any((d / "DONE").exists() for d in exp.glob("*__*")) and (exp / "tables").is_dir():
        return exp
    w = workload(n // trials, 3000)
    data = write_workload(Path(root) / (f"data{n}" if trials == 1 else f"data{n}x{trials}"), w["rows"])
    env = harness_env()
    env["PYTHONPATH"] = str(code)
    t0 = time.perf_counter()
    peak = [0]
    hwm = [0]  # the sweep's own resident high-water mark (/proc/PID/status VmHWM), kB
    pid: list[int] = []
    stop = threading.Event()

    def watch() -> None:  # the records on disk while the sweep runs (plain and compressed), every 0.2 s
        while not stop.wait(0.2):
            peak[0] = max(peak[0], records_bytes(exp))
            if pid:
                hwm[0] = max(hwm[0], high_water_kb(pid[0]))

    with ShapedEndpoint(w, 0.0, 1500) as ep:
        ep.start_run(None)  # keeps no request bodies: 12 an episode would be gigabytes at 100,000 episodes
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with tempfile.TemporaryFile() as err:
            p = subprocess.Popen(
                harness_cmd(ep.base_url, data, out, concurrency, n // trials) + [f"runner.trials={trials}"],
                cwd=code,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            pid.append(p.pid)
            _, status, usage = os.wait4(p.pid, 0)
            stop.set()
            watcher.join()
            if os.waitstatus_to_exitcode(status) != 0:
                err.seek(0)
                raise RuntimeError(f"the sweep of {n} episodes failed: {err.read().decode()[-3000:]}")
    final = records_bytes(exp)
    print(
        f"made a real experiment of {n} episodes in {time.perf_counter() - t0:.0f} s (CPU "
        f"{usage.ru_utime + usage.ru_stime:.0f} s, peak RSS {hwm[0] / 1024:.0f} MB (its own, VmHWM read every "
        f"0.2 s; the child's ru_maxrss, {usage.ru_maxrss / 1024:.0f} MB, counts this driver's pages copied at "
        f"fork: the workload's rows); records on disk: peak "
        f"{peak[0] / 1e6:.1f} MB, final {final / 1e6:.1f} MB = {peak[0] / max(final, 1):.2f}x; load "
        f"{os.getloadavg()[0]:.1f}): {exp}",
        flush=True,
    )
    return exp


def high_water_kb(pid: int) -> int:
    """The resident high-water mark of process `pid` (its own memory since its exec: VmHWM), kB; 0
    once it has exited. The sweep's `ru_maxrss` from `wait4` is no measure of the sweep here: Linux
    keeps the high-water mark of the memory a child had before its exec, which is this driver's,
    copied at fork (2 GB of rows at 100,000 tasks; 523 MB at 30,000, for any sweep code)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def records_bytes(exp: Path) -> int:
    """Bytes of the experiment's record files now (`episodes.jsonl`, `.zst`, `.xz`)."""
    total = 0
    for f in exp.glob("*/episodes.jsonl*"):
        try:
            total += f.stat().st_size
        except FileNotFoundError:  # compressed and removed meanwhile
            pass
    return total


def sizes(exp: Path) -> dict[str, int]:
    """Bytes of the experiment's records (compressed and plain), transcripts and everything."""
    out = {"records": 0, "transcripts": 0, "all": 0}
    for f in exp.rglob("*"):
        if f.is_file():
            n = f.stat().st_size
            out["all"] += n
            out["records"] += n if f.name.startswith("episodes.jsonl") else 0
            out["transcripts"] += n if f.name.startswith("transcripts.") else 0
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, nargs="+", default=[1000])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--code", type=Path, default=REPO, help="the checkout whose sweep makes them (default: this one)")
    ap.add_argument(
        "--trials", type=int, default=1, help="each task run this many times (episodes / trials distinct tasks)"
    )
    a = ap.parse_args(argv)
    print(f"load average before {os.getloadavg()}")
    for n in a.episodes:
        exp = real_experiment(a.out, n, code=a.code.resolve(), trials=a.trials)
        s = sizes(exp)
        print(
            f"{n} episodes: records {s['records'] / n:,.0f} B/episode, transcripts {s['transcripts'] / n:,.0f} "
            f"B/episode, all files {s['all'] / 1e6:.1f} MB"
        )
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
