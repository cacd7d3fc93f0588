"""MemoryArena metrics as pure functions (FlowState §4.2 / B.5; docs/memoryarena.md §5).

Inputs are per-task lists of 0/1 subtask correctness in subtask order. Outputs are percentages.
Undefined values (no tasks, Acc_1 = 0, K < 2) are None, never a silent 0."""

from __future__ import annotations

from collections.abc import Sequence

from runners.api import MetricSpec

DEPTH_SPECS = (
    MetricSpec(name="Acc_*", kind="rate", label="Acc_k", curve="subtask depth k"),
    MetricSpec(name="K", kind="count", label="deepest depth K"),
    MetricSpec(name="nAUC", kind="rate"),
    MetricSpec(name="DR", kind="other", higher_is_better=False, label="DR (pp per subtask)"),
)
"""The depth-retention metrics every MemoryArena benchmark reports (FlowState §4.2)."""


def success_rate(success: Sequence[bool | int]) -> float | None:
    """SR = 100 · mean_i success_i."""
    return 100.0 * sum(map(bool, success)) / len(success) if success else None


def progress_macro(correct: Sequence[Sequence[int]]) -> float | None:
    """PS = 100 · (1/N) Σ_i c_i / n_i (Shopping, Math, Physics). Tasks with no subtasks are skipped."""
    fr = [sum(c) / len(c) for c in correct if len(c)]
    return 100.0 * sum(fr) / len(fr) if fr else None


def acc_at_depth(correct: Sequence[Sequence[int]]) -> dict[int, float]:
    """Acc_k = 100 · |{i: n_i ≥ k, subtask k correct}| / |{i: n_i ≥ k}|, for k = 1..max n_i."""
    depth = max((len(c) for c in correct), default=0)
    out = {}
    for k in range(1, depth + 1):
        having = [c for c in correct if len(c) >= k]
        out[k] = 100.0 * sum(bool(c[k - 1]) for c in having) / len(having)
    return out


def retention(acc: dict[int, float]) -> dict[int, float] | None:
    """R_k = 100 · Acc_k / Acc_1; None when Acc_1 is 0 or missing."""
    a1 = acc.get(1)
    if not a1:
        return None
    return {k: 100.0 * v / a1 for k, v in sorted(acc.items())}


def nauc(r: dict[int, float] | None) -> float | None:
    """nAUC = (1/(K−1)) Σ_{k=1}^{K−1} (R_k + R_{k+1}) / 2, K = deepest depth; None if K < 2."""
    if not r or len(r) < 2:
        return None
    ks = sorted(r)
    return sum((r[a] + r[b]) / 2 for a, b in zip(ks, ks[1:])) / (len(ks) - 1)


def decline_rate(r: dict[int, float] | None) -> float | None:
    """DR = −(least-squares slope of R_k on k), pp per subtask; None if K < 2."""
    if not r or len(r) < 2:
        return None
    ks = sorted(r)
    kbar = sum(ks) / len(ks)
    rbar = sum(r[k] for k in ks) / len(ks)
    den = sum((k - kbar) ** 2 for k in ks)
    return -sum((k - kbar) * (r[k] - rbar) for k in ks) / den


def depth_metrics(correct: Sequence[Sequence[int]]) -> dict[str, float | None]:
    acc = acc_at_depth(correct)
    r = retention(acc)
    out: dict[str, float | None] = {f"Acc_{k}": v for k, v in acc.items()}
    out.update({"K": float(len(acc)) if acc else None, "nAUC": nauc(r), "DR": decline_rate(r)})
    return out
