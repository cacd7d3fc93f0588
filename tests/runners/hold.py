"""A scripted-backbone `perturb` hook (`backbone.scripted.perturb=tests.runners.hold:hold`) that lets
an interruption test stop a sweep at a known point instead of racing it with sleeps.

It never changes a reply. When the environment names a folder in `HOLD_DIR`, the first model call
made once that sweep's records hold `HOLD_AFTER` episodes (default 2) is held: the hook writes
`<HOLD_DIR>/held` and blocks the sweep's event loop until the sweep's main task has been cancelled
(asyncio does that on Ctrl-C/SIGINT, `runners.run` on SIGTERM), then returns, so the cancellation
unwinds a sweep that is provably still running, with those episodes on disk and the held one
unfinished. Without `HOLD_DIR` (a resumed run, the uninterrupted baseline) it does nothing. A
sweep nobody interrupts is released after `HOLD_MAX_S` (default 300 s) so that a broken test
cannot hang forever."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any


def _records(root: Path) -> int:
    from tests.runners.sweep_helpers import cell_records, record_files

    return sum(len(cell_records(p.parent)) for p in record_files(root))


def _cancelled() -> bool:
    """The sweep's main task (`runners.launch.run_all`) has been asked to cancel."""
    try:
        return any(t.cancelling() for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "run_all")
    except RuntimeError:  # no running loop
        return False


def hold(text: str, *, role: str, protocol: str | None, rng: Any) -> str:
    folder = os.environ.get("HOLD_DIR")
    if not folder:
        return text
    flag = Path(folder) / "held"
    if flag.exists() or _records(Path(os.environ["HOLD_OUTPUT"])) < int(os.environ.get("HOLD_AFTER", "2")):
        return text
    flag.write_text(str(os.getpid()))
    deadline = time.monotonic() + float(os.environ.get("HOLD_MAX_S", "300"))
    while not _cancelled() and time.monotonic() < deadline:
        time.sleep(0.01)  # a signal's Python handler runs between these sleeps, on this (the main) thread
    return text
