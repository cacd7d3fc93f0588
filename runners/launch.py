"""Where a sweep's cells run: in this process (runners.run.run_here's scheduler), or, with
`runner.processes` > 1, as worker processes each running its share of every cell
(runners/procs.py), whose workers run `run_here` on their share. The sweep (runners/sweep.py)
calls `run_all`; runners/ray_exec.py runs each cell as a Ray task instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.config import CellConfig
from runners.procs import processes_for, run_processes
from runners.progress import Progress
from runners.run import TableFold, unwind_on_sigterm, ready, run_prepared
from runners.pool import preflight
from runners.access import check_access


async def run_all(
    cells: list[CellConfig],
    root: Path,
    display: str,
    progress: Progress | None = None,
    fold: TableFold | None = None,
) -> list[Any]:
    """Every cell checked and prepared here (what is missing listed at once, every backbone built,
    every endpoint reached), then run through one scheduler in this process, or through
    `runner.processes` worker processes. `progress`: the display to feed (default: a new one of
    `display`); `fold`: where this process's scheduler keeps the finished episodes' numbers for
    the end-of-run tables (`runners.run.TableFold`; worker processes fold nothing)."""
    from runners import interrupts

    unwind_on_sigterm()
    interrupts.set_phase("loading")
    prepared, pool = ready(cells, root)
    n_proc = processes_for([p.cfg for p in prepared])
    try:
        await preflight(pool, cells[0].runner.preflight_s)  # a dead endpoint fails here, naming its URL
        await check_access(pool, cells[0].runner.check_access)  # a refused key or unknown model (runners/access.py)
        if n_proc > 1:  # worker processes, each its share of every cell; this process shows and counts
            await pool.aclose()
            return await run_processes([p.cfg for p in prepared], root, display, n_proc)
        return await run_prepared(prepared, cells, root, pool, display, progress, fold)
    finally:
        await pool.aclose()
