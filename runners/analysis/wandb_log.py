"""Weights & Biases logging (optional `wandb` extra): `runner.wandb=true`.

After a sweep, one W&B run per cell of the sweep (group = experiment, name = cell, config = the
cell's manifest config: no secrets, URL credentials already cut out) logs the cell's metrics,
its token totals by role and #Tok, and episode counts; one more run (job type `report`) logs the
HTML report (`python -m runners.view`) as an artifact, with the summary table. W&B's own
settings apply (`WANDB_MODE=offline` for no network, `WANDB_PROJECT`, `WANDB_ENTITY`, `WANDB_DIR`);
`runner.wandb_project` names the project (default: the experiment's name).

No secret reaches W&B: W&B records the process's command line and, unless told otherwise, its
console; a `user:password` URL or a key given as an override would be in the run files that
`wandb sync` uploads. So while the runs are made `sys.argv` holds the command line with every
credential replaced by `***` (`runners.secrets.redact_secrets`), W&B's console capture is off,
and the config it is given is scrubbed the same way.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

EXTRA_HINT = "pip install -e '.[wandb]'  (or: pip install wandb)"


class WandbUnavailable(RuntimeError):
    pass


def require() -> Any:
    try:
        import wandb
    except ImportError:
        raise WandbUnavailable(
            f"runner.wandb=true needs the wandb package, which comes with the 'wandb' extra: {EXTRA_HINT}; "
            "or run with runner.wandb=false"
        ) from None
    return wandb


def scrubbed(value: Any) -> Any:
    """`value` (a config) with every string's credentials replaced by `***`."""
    from runners.secrets import redact_secrets

    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {scrubbed(k): scrubbed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrubbed(v) for v in value]
    return value


@contextmanager
def scrubbed_argv() -> Iterator[list[str]]:
    """`sys.argv` with its credentials replaced by `***` for the duration (W&B reads it)."""
    from runners.secrets import redact_secrets

    saved = sys.argv
    sys.argv = [redact_secrets(a) for a in saved]
    try:
        yield sys.argv
    finally:
        sys.argv = saved


def _numbers(d: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def log_experiment(
    root: Path, cell_names: list[str] | None = None, project: str | None = None, reference: str = "full_context"
) -> list[str]:
    """Log the sweep's cells and the report; returns the W&B run ids."""
    with scrubbed_argv():
        return _log(root, cell_names, project, reference)


def _log(root: Path, cell_names: list[str] | None, project: str | None, reference: str) -> list[str]:
    wandb = require()
    from runners.api import method_tokens
    from runners.analysis.cells import collect
    from runners.analysis.tables import build_tables
    from runners.analysis.report import build_report

    root = Path(root)
    summaries = collect(root, set(cell_names) if cell_names else None)
    report = build_report(root, reference=reference)
    project = project or os.environ.get("WANDB_PROJECT") or root.name
    wdir = os.environ.get("WANDB_DIR") or str(root / ".wandb")
    Path(wdir).mkdir(parents=True, exist_ok=True)
    # the command line W&B records is the scrubbed one; the console (which it would copy) is not captured
    settings = wandb.Settings(console="off", save_code=False)  # its `args` are read from sys.argv (scrubbed)
    ids = []
    for cs in summaries:
        manifest = cs.manifest  # read with the summary (its records are not read again)
        run = wandb.init(
            project=project,
            group=root.name,
            name=cs.cell,
            job_type="cell",
            dir=wdir,
            reinit="finish_previous",
            settings=settings,
            config={
                "method": cs.method,
                "backbone": cs.backbone,
                "benchmark": cs.benchmark,
                "scripted": cs.scripted,
                "cell": scrubbed(manifest.get("config", {})),
            },
        )
        values = {
            **{f"metrics/{k}": v for k, v in _numbers(cs.metrics).items()},
            **{f"tokens/{r}": n for r, n in cs.tokens_by_role.items()},
            "tokens/method": method_tokens(cs.tokens_by_role),
            "episodes": cs.n_episodes,
            "episodes_expected": cs.n_tasks * cs.trials,
        }
        run.log(values)
        run.summary.update(values)
        ids.append(run.id)
        run.finish()
    header, rows, _ = build_tables(summaries, reference) if summaries else ([], [], [])
    run = wandb.init(
        project=project,
        group=root.name,
        name=f"{root.name}-report",
        job_type="report",
        dir=wdir,
        reinit="finish_previous",
        settings=settings,
    )
    if header:
        run.log({"summary_table": wandb.Table(columns=header, data=rows)})
    art = wandb.Artifact(
        f"{root.name}-report", type="report", description=f"HTML report of experiment {root.name} (runners.view)"
    )
    art.add_file(str(report), name="report.html")
    run.log_artifact(art)
    ids.append(run.id)
    run.finish()
    return ids
