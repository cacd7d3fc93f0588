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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _trim_fn() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


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
