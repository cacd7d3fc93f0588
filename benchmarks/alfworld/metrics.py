"""ALFWorld scoring as pure functions (docs/alfworld.md §5): success = `won` at episode end;
SR = Σ won / N and per-type SR = won_t / n_t, in percent. Infra errors are not failures:
they are left out (and retried by the sweep); any other episode without a win counts 0."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchmarks.alfworld.data import TASK_TYPES, task_type_of
from benchmarks.memoryarena.metrics import success_rate  # 100 · mean(success); None for no games


def outcomes(episodes: Sequence[Mapping[str, Any]]) -> list[tuple[str, bool]]:
    """(task_type, won) per scored episode; `infra_error` episodes are skipped. The task type
    comes from the task id (the game folder), so episodes that died without scores still count."""
    out = []
    for e in episodes:
        if e.get("status") == "infra_error":
            continue
        scores = e.get("scores") or {}
        out.append((scores.get("task_type") or task_type_of(e["task_id"]), bool(scores.get("success", 0))))
    return out


def alfworld_metrics(episodes: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """{"SR": %, "SR_<task_type>": % for each type present, "n": games, "won": games won}."""
    rows = outcomes(episodes)
    out: dict[str, float | None] = {"n": float(len(rows)), "won": float(sum(w for _, w in rows))}
    sr = success_rate([w for _, w in rows])
    if sr is not None:
        out["SR"] = sr
    for t in TASK_TYPES:
        r = success_rate([w for tt, w in rows if tt == t])
        if r is not None:
            out[f"SR_{t}"] = r
    return out
