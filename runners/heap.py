"""Freed memory handed back to the system while a long run goes on.

A sweep allocates and frees each episode's messages, replies and records (a few hundred episodes in
flight, tens of KB each). CPython frees them, but glibc's allocator keeps the freed pages inside its
heap unless they sit at its very top, so the process's resident memory grew with the number of
episodes run (~35 KB per episode: 567 MB at 10,000 episodes, of which ~200 MB were live), though
nothing stayed alive. `returned_heap` calls glibc's `malloc_trim(0)` (which hands every whole free
page back) once per `interval` seconds from a daemon thread; elsewhere (macOS, musl) it does
nothing. Measured in scripts/perf/README.md (section "Sweep peak memory")."""

from __future__ import annotations

import ctypes
import gc
import ctypes.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _libc(symbol: str) -> Any:
    """The C library's function `symbol` (glibc's `malloc_trim`, `mallinfo2`), or None where it has none."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), symbol)
    except (OSError, AttributeError):
        return None


def _trim_fn() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none."""
    return _libc("malloc_trim")


def release(collect: bool = False) -> bool:
    """Hand the allocator's whole free pages back to the system now; False where that cannot be done.
    `collect`: run the garbage collector first (what only a cycle held is freed too: the sweep's
    event loop, its tasks and their frames, before the end-of-run tables)."""
    if collect:
        gc.collect()
    fn = _trim_fn()
    if fn is None:
        return False
    fn(0)
    return True


@contextmanager
def returned_heap(interval: float = 1.0) -> Iterator[None]:
    """While the block runs, free pages go back to the system every `interval` seconds (a few ms of
    CPU each on a sweep's heap)."""
    fn = _trim_fn()
    if fn is None:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(interval):
            fn(0)

    t = threading.Thread(target=loop, name="returned-heap", daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
        fn(0)


CENSUS_ENV = "HARNESS_MEMORY_CENSUS"


def resident_mb() -> dict[str, int]:
    """This process's VmRSS and VmHWM in MB ({} where /proc is absent)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) // 1024
    except OSError:
        pass
    return out


def census(stage: str, top: int = 25, reset_peak: bool = False) -> None:
    """Measurement switch: with `HARNESS_MEMORY_CENSUS=<file>`, append to that file this process's
    resident size at `stage` and what the collector tracks by type (count, shallow bytes; strings,
    floats and ints are counted inside their containers only), then, when tracemalloc traces
    (`PYTHONTRACEMALLOC=1`), its largest live allocations by line. Unset: nothing is done. The sweep
    calls it as its end-of-run tables start and end (docs/environment.md). `reset_peak`: then set
    the high-water mark (VmHWM) back to the resident size (Linux's `clear_refs`), so that the next
    stage's VmHWM is the peak of what ran between the two (a poller of VmHWM keeps what it saw)."""
    path = os.environ.get(CENSUS_ENV)
    if not path:
        return
    try:
        _census(path, stage, top)
    finally:
        if reset_peak:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass


def _census(path: str, stage: str, top: int) -> None:
    import sys
    import tracemalloc
    from collections import Counter

    count: Counter[str] = Counter()
    size: Counter[str] = Counter()
    for o in gc.get_objects():
        t = type(o).__qualname__
        count[t] += 1
        size[t] += sys.getsizeof(o)
    rss = resident_mb()
    lines = [
        f"== {stage}: VmRSS {rss.get('VmRSS', 0)} MB, VmHWM {rss.get('VmHWM', 0)} MB, "
        f"{sum(count.values()):,} tracked objects, {sum(size.values()) / 1e6:.1f} MB shallow"
    ]
    lines += [f"  {size[t] / 1e6:8.2f} MB {count[t]:>10,}  {t}" for t, _ in size.most_common(top)]
    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot()
        stats = snap.statistics("lineno")
        lines.append(f"  tracemalloc: {sum(s.size for s in stats) / 1e6:.1f} MB live; top by line:")
        lines += [f"  {s.size / 1e6:8.2f} MB {s.count:>10,}  {s.traceback[0]}" for s in stats[:top]]
    with open(path, "a") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        _arena_summary(f)
        f.write(_malloc_summary())


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (k, ctypes.c_size_t)
        for k in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


def _malloc_summary() -> str:
    """glibc's account of its heap (`mallinfo2`): bytes in use, free inside the heap, mapped apart."""
    fn = _libc("mallinfo2")
    if fn is None:
        return ""
    fn.restype = _Mallinfo2
    m = fn()
    return (
        f"  malloc: heap {m.arena / 1e6:.1f} MB, in use {m.uordblks / 1e6:.1f} MB, free in the heap "
        f"{m.fordblks / 1e6:.1f} MB, mmapped {m.hblkhd / 1e6:.1f} MB in {m.hblks} blocks\n"
    )


def _arena_summary(f: Any) -> None:
    """CPython's small-object allocator's own account (`sys._debugmallocstats`, which writes to the C
    stderr) summed into `f`: its arenas, the bytes its live blocks use, what its free blocks keep."""
    import sys
    import tempfile

    debug = getattr(sys, "_debugmallocstats", None)
    if debug is None:
        return
    with tempfile.TemporaryFile("w+") as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            debug()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        keep = (
            "# arenas allocated current",
            "# bytes in allocated blocks",
            "# bytes in available blocks",
            "# bytes lost to",
            "Total ",
        )
        f.write("".join("  pymalloc " + line for line in tmp if line.startswith(keep)))
