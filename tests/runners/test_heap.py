"""runners.heap: a sweep's freed memory goes back to the system while it runs (glibc keeps freed
pages in its heap otherwise, so the resident memory grew with the episodes run)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runners.heap import _trim_fn, returned_heap


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(_trim_fn() is None or not Path("/proc/self/status").exists(), reason="needs glibc and /proc")
def test_freed_pages_return_while_the_block_runs():
    # A fragmented heap as a sweep leaves it: many mid-sized blocks (what episodes' texts are), one
    # in 64 kept alive, the rest freed. The kept ones pin the heap's top, so glibc keeps the freed
    # pages below it resident unless they are handed back.
    blocks = [bytearray(2000) for _ in range(60_000)]  # ~120 MB, each through malloc
    kept = blocks[::64]
    del blocks
    before = _rss_mb()
    with returned_heap(interval=0.05):
        time.sleep(0.3)  # a few passes of the thread
        during = _rss_mb()
    assert kept  # alive to here
    assert before - during > 60, (before, during)


def test_release_with_collect_frees_what_only_a_cycle_held():
    """Before the end-of-run tables the sweep frees its finished event loop's cycles too (the
    collector may be paused or frozen there: `short_process_gc`)."""
    import gc
    import weakref

    from runners.heap import release

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: reference counting alone never frees it
    gone = weakref.ref(a)
    was = gc.isenabled()
    gc.disable()
    try:
        del a, b
        release()
        assert gone() is not None  # a plain trim leaves the cycle alive
        release(collect=True)
        assert gone() is None
    finally:
        if was:
            gc.enable()
