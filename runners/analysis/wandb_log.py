"""Weights & Biases logging (optional `wandb` extra): `runner.wandb=true`.

After a sweep, one W&B run per cell of the sweep (group = experiment, name = cell, config = the
cell's manifest config: no secrets, URL credentials already cut out) logs the cell's metrics,
its token totals by role and #Tok, and episode counts; one more run (job type `report`) logs the
HTML report (`python -m runners.view`) as an artifact, with the summary table. W&B's own
settings apply (`WANDB_MODE=offline` for no network, `WANDB_PROJECT`, `WANDB_ENTITY`, `WANDB_DIR`);
`runner.wandb_project` names the project (default: the experiment's name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def _numbers(d: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def log_experiment(
    root: Path, cell_names: list[str] | None = None, project: str | None = None, reference: str = "full_context"
) -> list[str]:
    """Log the sweep's cells and the report; returns the W&B run ids."""
    wandb = require()
    from runners.api import method_tokens
    from runners.analysis.cells import collect
    from runners.analysis.tables import build_tables
    from runners.records.store import load_cell
    from runners.analysis.report import build_report

    root = Path(root)
    summaries = collect(root, set(cell_names) if cell_names else None)
    report = build_report(root, reference=reference)
    project = project or os.environ.get("WANDB_PROJECT") or root.name
    wdir = os.environ.get("WANDB_DIR") or str(root / ".wandb")
    Path(wdir).mkdir(parents=True, exist_ok=True)
    ids = []
    for cs in summaries:
        manifest, _ = load_cell(root / cs.cell)
        run = wandb.init(
            project=project,
            group=root.name,
            name=cs.cell,
            job_type="cell",
            dir=wdir,
            reinit="finish_previous",
            config={
                "method": cs.method,
                "backbone": cs.backbone,
                "benchmark": cs.benchmark,
                "scripted": cs.scripted,
                "cell": manifest.get("config", {}),
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
