"""The sweep's per-episode memory, in one process and without a sweep:
`python -m scripts.perf.fold_memory --experiment EXP [--limit N] [--trace]`.

Feeds the finished records of a real sweep's experiment (`real_experiment`'s `EXP/exp<N>/inspect_compare`,
read only: its cells are hard-linked into a scratch folder, where the tables are written) through
`runners.run.TableFold` exactly as the sweep does (each record's line, `TableFold.add`), then builds
the end-of-run tables from the fold (`runners.analysis.tables.aggregate_dir(folded=...)`), as the
sweep's last step does. Prints the resident size (`VmRSS`) and its high-water mark (`VmHWM`) after
each stage, and with `--trace` the largest live allocations (`tracemalloc`) after the fold. Also
measures the scheduler's per-episode bookkeeping at that many episodes (the store's set of finished
(task, trial), the two cost lists, the queue of (task index, trial)) as the sweep holds it.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import shutil
import subprocess
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from runners.heap import resident_mb


def _say(stage: str, t0: float) -> None:
    s = resident_mb()
    cpu = time.process_time() - t0
    print(f"{stage:<44} VmRSS {s['VmRSS']:>5} MB  VmHWM {s['VmHWM']:>5} MB  {cpu:7.1f} s CPU", flush=True)


class _Store:
    """What `TableFold` reads of a cell's store: opened empty, and its finished (task, trial)."""

    def __init__(self) -> None:
        self.idle, self.records_bytes = False, 0
        self.done: set[tuple[Any, int]] = set()


def bookkeeping(n: int) -> None:
    """The scheduler's per-episode structures at `n` episodes, in the forms the sweep keeps."""
    from runners.run import _CellRun  # noqa: F401 (the forms below are those of its fields)

    gc.collect()
    before = resident_mb()["VmRSS"]
    tracemalloc.start()
    done = {(f"formal_reasoning_math-{i:06d}", 0) for i in range(n)}
    a = tracemalloc.get_traced_memory()[0]
    costs = [float(i) * 1e-6 for i in range(n)]
    episode_costs = [float(i) * 1e-6 for i in range(n)]
    b = tracemalloc.get_traced_memory()[0]
    todo = [(i, 0) for i in range(n)]
    c = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(
        f"bookkeeping at {n:,} episodes: finished set {a / 1e6:.1f} MB, two cost lists {(b - a) / 1e6:.1f} MB, "
        f"queue {(c - b) / 1e6:.1f} MB (RSS +{resident_mb()['VmRSS'] - before} MB)"
    )
    del done, costs, episode_costs, todo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--experiment", type=Path, required=True, help="a real_experiment experiment folder (read only)")
    ap.add_argument("--limit", type=int, default=0, help="fold the first N records only (0: all)")
    ap.add_argument("--trace", action="store_true", help="tracemalloc's top allocations after the fold")
    ap.add_argument("--no-tables", action="store_true", help="stop after the fold")
    ap.add_argument(
        "--tables-trace", action="store_true", help="tracemalloc's peak over the tables (what they allocate, exactly)"
    )
    a = ap.parse_args()

    import orjson

    from runners.analysis.tables import aggregate_dir
    from runners.heap import release
    from runners.records.store import cell_dirs, short_process_gc, stream_cell
    from runners.run import TableFold

    t0 = time.process_time()
    _say("imports", t0)
    scratch = Path(tempfile.mkdtemp(prefix="fold_memory_"))
    try:
        root = scratch / a.experiment.name
        root.mkdir()
        for d in cell_dirs(a.experiment):  # hard links: the experiment itself is never written
            subprocess.run(["cp", "-al", str(d), str(root / d.name)], check=True)
        fold = TableFold()
        n = 0
        if a.trace:
            tracemalloc.start(4)
        for d in cell_dirs(root):
            store = _Store()
            fold.start(d.name, store, True)  # type: ignore[arg-type]
            _, stream, _ = stream_cell(d)
            for r in stream:
                fold.add(d.name, orjson.dumps(r))  # the line the sweep wrote, as it hands it to the fold
                store.done.add((r["task_id"], r["trial"]))
                n += 1
                if n % 20000 == 0:
                    _say(f"folded {n:,} records", t0)
                if a.limit and n >= a.limit:
                    break
            del stream
        _say(f"folded {n:,} records (fold held)", t0)
        if a.trace:
            snap = tracemalloc.take_snapshot()
            tracemalloc.stop()
            total = sum(s.size for s in snap.statistics("filename"))
            print(f"tracemalloc: {total / 1e6:.1f} MB live; top by line:")
            for s in snap.statistics("lineno")[:12]:
                print(f"  {s.size / 1e6:8.1f} MB {s.count:>9,}  {s.traceback[0]}")
            del snap
        if a.no_tables:
            return
        gc.collect()
        release()
        _say("before the tables (collected, trimmed)", t0)
        if a.tables_trace:  # what the tables allocate at their peak, counted by Python itself (no RSS noise)
            tracemalloc.start(1)
            base = tracemalloc.get_traced_memory()[0]
        with short_process_gc():
            aggregate_dir(root, out=io.StringIO(), folded=fold.cells())
        if a.tables_trace:
            now, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"tracemalloc over the tables: peak +{(peak - base) / 1e6:.1f} MB, left +{(now - base) / 1e6:.1f} MB")
        _say("tables built", t0)
        del fold
        bookkeeping(n)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"peak (VmHWM) {resident_mb()['VmHWM']} MB over {n:,} folded records; pid {os.getpid()}")


if __name__ == "__main__":
    main()
