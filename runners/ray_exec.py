"""`runner.executor=ray`: every cell of the sweep runs as one Ray task (on an existing cluster
with `runner.ray_address=<address>`, else on a local Ray instance started here).

Each task runs the cell through the same code as a local sweep (`runners.run.run_here` with one
cell: its own store, lock, response-cache connection and transcripts), so records, resume and
tables are exactly those of a local run; the driver then prints the completeness report and
writes the tables of the whole experiment. Hydra's Ray launcher is not used: it launches Hydra
jobs (one process per override combination, like the submitit launcher, which covers that case),
while this executor keeps one `python -m runners.sweep` command and one report. Extra `ray`.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _cell_task(cell: Any, root: str) -> dict[str, Any]:
    """Runs in a Ray worker: one validated cell (a pickled CellConfig), as a local sweep would run it."""
    from runners.run import run_here

    (report,) = asyncio.run(run_here([cell], Path(root), "none"))
    return asdict(report)


def run_cells(cells: list, root: Path, address: str | None = None, num_cpus: int | None = None) -> list:
    """Run `cells` as Ray tasks; returns their CellReports in cell order."""
    try:
        import ray
    except ImportError:
        from runners.config import ConfigError

        raise ConfigError("runner.executor=ray needs Ray: install the `ray` extra (pip install -e '.[ray]')") from None
    from runners.progress import CellReport

    started = not ray.is_initialized()
    if started:
        ray.init(
            address=address,
            num_cpus=num_cpus if address is None else None,
            include_dashboard=False,
            runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},
            log_to_driver=False,
        )
    try:
        task = ray.remote(_cell_task)
        futures = [task.remote(c, str(root)) for c in cells]
        return [CellReport(**r) for r in ray.get(futures)]
    finally:
        if started:
            ray.shutdown()
