"""Uncertainty for the tables: task-level bootstrap confidence intervals and paired comparisons.

- `bootstrap_ci`: a percentile bootstrap that resamples **tasks** with replacement, keeping all
  trials of a drawn task together (a cluster bootstrap: trials of one task are not independent
  samples), and recomputes the benchmark's own metric function on each resample, so every
  metric the benchmark reports (rates, pass^k, depth curves) gets an interval the same way.
- `paired_bootstrap`: the same resampling over the tasks two cells share, applied to the
  difference method − reference, so the interval reflects that both were run on the same tasks.
- `sign_test`: the exact two-sided sign test on per-task wins and losses (ties dropped). With one
  binary outcome per task this is the exact McNemar test on the discordant pairs.

Resampled copies get distinct task ids (`<id>~<draw>`), so metric functions that group episodes
by task (pass^k) see a drawn-twice task as two tasks. Random draws come from a seeded numpy
generator: the same records always give the same intervals (tables stay reproducible).
numpy does the resampling and percentiles. The exact binomial tail is an integer sum with
`math.comb` (exact, and it spares every sweep the ~2 s import of scipy.stats); the tests check it
against scipy's `binomtest` where scipy is installed.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Callable, Iterable

import numpy as np

Episodes = list[dict[str, Any]]
MetricFn = Callable[[Episodes], dict[str, Any]]

DEFAULT_RESAMPLES = 1000
LEVEL = 0.95


def by_task(episodes: Iterable[dict[str, Any]]) -> dict[str, Episodes]:
    """Episodes grouped by task id, in first-seen order."""
    out: dict[str, Episodes] = defaultdict(list)
    for e in episodes:
        out[str(e.get("task_id"))].append(e)
    return dict(out)


def _resample(groups: list[Episodes], draw: np.ndarray, tag: int) -> Episodes:
    out: Episodes = []
    for j, i in enumerate(draw):
        for e in groups[i]:
            out.append({**e, "task_id": f"{e.get('task_id')}~{tag}.{j}"})
    return out


def _numeric(d: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))}


def _interval(values: list[float], level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo, hi = np.percentile(np.asarray(values, dtype=float), [100 * a, 100 * (1 - a)])
    return float(lo), float(hi)


def bootstrap_ci(episodes: Episodes, metric_fn: MetricFn, *, resamples: int = DEFAULT_RESAMPLES, level: float = LEVEL,
                 seed: int = 0, metrics: Iterable[str] | None = None) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every numeric metric `metric_fn` returns, resampling tasks
    (trials nested). Metrics undefined on some resamples get an interval from the others; a cell
    with fewer than two tasks gets no intervals (nothing to resample)."""
    groups = list(by_task(episodes).values())
    if len(groups) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for b in range(resamples):
        vals = _numeric(metric_fn(_resample(groups, rng.integers(0, len(groups), len(groups)), b)))
        for k, v in vals.items():
            if wanted is None or k in wanted:
                draws[k].append(v)
    return {k: _interval(v, level) for k, v in draws.items() if len(v) >= max(2, resamples // 2)}


def per_task(episodes: Episodes, metric_fn: MetricFn) -> dict[str, dict[str, float]]:
    """Each task's metrics computed over that task's episodes (its trials) alone."""
    return {tid: _numeric(metric_fn(eps)) for tid, eps in by_task(episodes).items()}


def paired_bootstrap(ours: Episodes, ref: Episodes, metric_fn: MetricFn, *, resamples: int = DEFAULT_RESAMPLES,
                     level: float = LEVEL, seed: int = 0, metrics: Iterable[str] | None = None) -> dict[str, tuple[float, float]]:
    """Interval of metric(ours) − metric(ref) over the tasks both have, resampling those tasks
    jointly (the same draw for both sides)."""
    a, r = by_task(ours), by_task(ref)
    common = [t for t in a if t in r]
    if len(common) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    ga, gr = [a[t] for t in common], [r[t] for t in common]
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for b in range(resamples):
        draw = rng.integers(0, len(common), len(common))
        va, vr = _numeric(metric_fn(_resample(ga, draw, b))), _numeric(metric_fn(_resample(gr, draw, b)))
        for k in va.keys() & vr.keys():
            if wanted is None or k in wanted:
                draws[k].append(va[k] - vr[k])
    return {k: _interval(v, level) for k, v in draws.items() if len(v) >= max(2, resamples // 2)}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value for `wins` vs `losses` (ties already dropped): the
    probability under p = 1/2 of a split at least as uneven. 1.0 when there is no decided pair."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def paired_sign_test(ours: Episodes, ref: Episodes, metric_fn: MetricFn, metric: str, *,
                     higher_is_better: bool = True) -> tuple[int, int, int, float] | None:
    """Per shared task, compare `metric` of ours vs ref (each over that task's trials):
    (wins, losses, ties, exact sign-test p); a win is the better side by the metric's declared
    direction. None when no shared task defines the metric."""
    a, r = per_task(ours, metric_fn), per_task(ref, metric_fn)
    pairs = [(a[t][metric], r[t][metric]) for t in a if t in r and metric in a[t] and metric in r[t]]
    if not pairs:
        return None
    if not higher_is_better:
        pairs = [(-x, -y) for x, y in pairs]
    wins = sum(x > y for x, y in pairs)
    losses = sum(x < y for x, y in pairs)
    return wins, losses, len(pairs) - wins - losses, sign_test(wins, losses)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar test on the discordant counts b (ours right, ref wrong) and c (the reverse):
    the sign test on b vs c."""
    return sign_test(b, c)
