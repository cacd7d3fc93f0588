"""τ³ aggregate metrics as pure functions (docs/tau-bench.md §7.5, §10; FlowState §11.2):
pass^k, success (Pass^1), DB accuracy and reference-action accuracy, all in percent."""

from __future__ import annotations

from collections import defaultdict
from math import comb
from typing import Any, Iterable, Mapping, Sequence


def pass_hat_k(num_trials: int, success_count: int, k: int) -> float:
    """τ-bench pass^k for one task: C(c, k) / C(n, k)."""
    if not 1 <= k <= num_trials:
        raise ValueError(f"pass^k needs 1 <= k <= trials, got k={k}, trials={num_trials}")
    if not 0 <= success_count <= num_trials:
        raise ValueError(f"success count {success_count} outside 0..{num_trials}")
    return comb(success_count, k) / comb(num_trials, k)


def pass_hat_ks(successes_by_task: dict[str, list[bool]]) -> dict[int, float]:
    """Mean over tasks of pass^k, for k = 1 … the smallest trial count of any task."""
    if not successes_by_task:
        return {}
    kmax = min(len(v) for v in successes_by_task.values())
    return {
        k: sum(pass_hat_k(len(v), sum(v), k) for v in successes_by_task.values()) / len(successes_by_task)
        for k in range(1, kmax + 1)
    }


def pct(xs: Iterable[float]) -> float | None:
    xs = list(xs)
    return 100.0 * sum(xs) / len(xs) if xs else None


def action_accuracy(checks: list[tuple[int, int]], *, per_task_mean: bool = False) -> float | None:
    """Matched / gold actions over episodes, pooled (default) or as the mean of per-episode
    proportions (switch). Episodes without gold actions contribute nothing. `checks` = (correct, count)."""
    checks = [(c, n) for c, n in checks if n]
    if not checks:
        return None
    if per_task_mean:
        return 100.0 * sum(c / n for c, n in checks) / len(checks)
    return 100.0 * sum(c for c, _ in checks) / sum(n for _, n in checks)


def aggregate(
    episodes: Sequence[Mapping[str, Any]], *, count_infra_as_failures: bool = False, action_per_task_mean: bool = False
) -> dict[str, float | None]:
    """Headline τ³ metrics over episode records (`scores` as written by `TauEnv.score_task`).
    Infrastructure/harness errors are dropped unless `count_infra_as_failures` (§7.6)."""
    rows = []
    for e in episodes:
        s = e.get("scores") or {}
        if e.get("status", "ok") != "ok" or "reward" not in s:
            if not count_infra_as_failures:
                continue
            s = {"success": False, "db_match": False, "action": None}
        rows.append((str(e.get("task_id")), s))
    by_task: dict[str, list[bool]] = defaultdict(list)
    for tid, s in rows:
        by_task[tid].append(bool(s.get("success")))
    out: dict[str, float | None] = {
        "Pass1": pct(bool(s.get("success")) for _, s in rows),
        "DB": pct(bool(s.get("db_match")) for _, s in rows),
        "ActionAcc": action_accuracy(
            [((s.get("action") or {}).get("correct", 0), (s.get("action") or {}).get("count", 0)) for _, s in rows],
            per_task_mean=action_per_task_mean,
        ),
        "avg_reward": (sum(float(s.get("reward", 0.0)) for _, s in rows) / len(rows)) if rows else None,
        "episodes": float(len(rows)),
    }
    ks = pass_hat_ks(by_task)
    if len(ks) > 1:
        out.update({f"pass^{k}": 100.0 * v for k, v in ks.items()})
    return out
