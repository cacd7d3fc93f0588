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


def test_census_writes_nothing_unless_asked(tmp_path, monkeypatch):
    from runners.heap import CENSUS_ENV, census

    monkeypatch.delenv(CENSUS_ENV, raising=False)
    census("tables start")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc")
def test_census_counts_what_is_alive_and_each_stage_gets_its_own_peak(tmp_path, monkeypatch):
    """`HARNESS_MEMORY_CENSUS`: each stage's resident size and live objects by type; after a stage
    with `reset_peak`, the next stage's VmHWM is the peak of what ran between them only."""
    import re

    from runners.heap import CENSUS_ENV, census

    out = tmp_path / "census.txt"
    monkeypatch.setenv(CENSUS_ENV, str(out))

    class Marker:
        pass

    kept = [Marker() for _ in range(50_000)]
    big = bytearray(150_000_000)
    big[::4096] = b"x" * len(big[::4096])  # resident, not only reserved
    del big
    census("after a large block", reset_peak=True)
    census("then nothing large")
    text = out.read_text()
    stages = re.findall(r"== (.+?): VmRSS (\d+) MB, VmHWM (\d+) MB", text)
    assert [s[0] for s in stages] == ["after a large block", "then nothing large"]
    first, second = (int(s[2]) for s in stages)
    assert first - second > 100, text  # the 150 MB block's peak is not the second stage's
    assert re.search(r"\s50,0\d\d  .*Marker$", text, re.M), text  # the live objects counted by type
    assert "pymalloc # arenas allocated current" in text or not hasattr(__import__("sys"), "_debugmallocstats")
    assert len(kept) == 50_000
