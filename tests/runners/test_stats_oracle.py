"""The vectorised bootstrap (per-task arrays) gives the numbers of the former implementation,
which re-ran the metric function on every resample: that implementation is kept here as the
oracle and both run on the same seeds over the benchmarks' real metric functions."""

import math
import random
from collections import defaultdict

import numpy as np
import pytest

from benchmarks.alfworld.data import TASK_TYPES
from benchmarks.alfworld.metrics import alfworld_metrics
from benchmarks.memoryarena import metrics as ma_metrics
from benchmarks.memoryarena import travel_score
from benchmarks.tau.metrics import aggregate as tau_aggregate
from runners.analysis.stats import bootstrap_ci, paired_bootstrap


# ------------------------------------------------------------------ the former implementation (oracle)
def _old_by_task(episodes):
    out = defaultdict(list)
    for e in episodes:
        out[str(e.get("task_id"))].append(e)
    return dict(out)


def _old_resample(groups, draw, tag):
    return [{**e, "task_id": f"{e.get('task_id')}~{tag}.{j}"} for j, i in enumerate(draw) for e in groups[i]]


def _old_numeric(d):
    return {
        k: float(v)
        for k, v in d.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }


def _old_interval(values, level):
    a = (1 - level) / 2
    lo, hi = np.percentile(np.asarray(values, dtype=float), [100 * a, 100 * (1 - a)])
    return float(lo), float(hi)


def old_bootstrap_ci(episodes, metric_fn, *, resamples=1000, level=0.95, seed=0, metrics=None):
    groups = list(_old_by_task(episodes).values())
    if len(groups) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    rng = np.random.default_rng(seed)
    draws = defaultdict(list)
    for b in range(resamples):
        vals = _old_numeric(metric_fn(_old_resample(groups, rng.integers(0, len(groups), len(groups)), b)))
        for k, v in vals.items():
            if wanted is None or k in wanted:
                draws[k].append(v)
    return {k: _old_interval(v, level) for k, v in draws.items() if len(v) >= max(2, resamples // 2)}


def old_paired_bootstrap(ours, ref, metric_fn, *, resamples=1000, level=0.95, seed=0, metrics=None):
    a, r = _old_by_task(ours), _old_by_task(ref)
    common = [t for t in a if t in r]
    if len(common) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    ga, gr = [a[t] for t in common], [r[t] for t in common]
    rng = np.random.default_rng(seed)
    draws = defaultdict(list)
    for b in range(resamples):
        draw = rng.integers(0, len(common), len(common))
        va, vr = (
            _old_numeric(metric_fn(_old_resample(ga, draw, b))),
            _old_numeric(metric_fn(_old_resample(gr, draw, b))),
        )
        for k in va.keys() & vr.keys():
            if wanted is None or k in wanted:
                draws[k].append(va[k] - vr[k])
    return {k: _old_interval(v, level) for k, v in draws.items() if len(v) >= max(2, resamples // 2)}


# ------------------------------------------------------------ the benchmarks' metric functions on synthetic records
def formal(episodes):  # benchmarks/memoryarena/formal.py: SR, PS, depth curve (Acc_k, nAUC, DR)
    correct = [e["scores"]["subtask_correct"] for e in episodes]
    out = {
        "SR": ma_metrics.success_rate([e["scores"]["success"] for e in episodes]),
        "PS": ma_metrics.progress_macro(correct),
    }
    out.update(ma_metrics.depth_metrics(correct))
    return out


def travel(episodes):  # benchmarks/memoryarena/travel.py with persons pooling
    agg = travel_score.aggregate([e["scores"]["persons"] for e in episodes], ps_pooling="persons")
    return {k: (100.0 * v if v is not None else None) for k, v in agg.items()}


def tau_pooled(episodes):
    return tau_aggregate(episodes)


def tau_per_task(episodes):
    return tau_aggregate(episodes, count_infra_as_failures=True, action_per_task_mean=True)


def n_tasks(episodes):  # a count, not a ratio: left to the metric function
    return {
        "tasks": float(len({e["task_id"] for e in episodes})),
        "SR": 100.0 * sum(e["scores"]["success"] for e in episodes) / len(episodes),
    }


def records(n_tasks_, trials, seed, *, ragged=False):
    """Records every metric function above can read: scores for formal, travel, τ and ALFWorld."""
    rnd = random.Random(seed)
    out = []
    for t in range(n_tasks_):
        p = rnd.random()
        depth = rnd.randint(1, 5)
        for k in range(trials if not (ragged and t % 7 == 3) else trials - 1):
            sub = [int(rnd.random() < p) for _ in range(depth)]
            persons = [
                {
                    "submitted": rnd.random() < 0.9,
                    "full_pass": rnd.random() < p,
                    "constraint_passed": rnd.randint(0, 4),
                    "constraint_slots": rnd.randint(0, 4),
                    "success": rnd.random() < p,
                }
                for _ in range(rnd.randint(1, 3))
            ]
            for q in persons:
                q["constraint_passed"] = min(q["constraint_passed"], q["constraint_slots"])
            ok = rnd.random() < p
            out.append(
                {
                    "task_id": f"{TASK_TYPES[t % len(TASK_TYPES)]}-{t}",
                    "trial": k,
                    "status": "infra_error" if rnd.random() < 0.05 else "ok",
                    "big": "x" * 50,
                    "scores": {
                        "success": ok,
                        "subtask_correct": sub,
                        "persons": persons,
                        "reward": float(ok),
                        "db_match": rnd.random() < p,
                        "action": {"correct": rnd.randint(0, 3), "count": 3},
                    },
                }
            )
    return out


def close(new, old):
    assert new.keys() == old.keys()
    for k in old:
        assert new[k] == pytest.approx(old[k], abs=1e-9, rel=1e-12), k


FUNCTIONS = [formal, travel, tau_pooled, tau_per_task, alfworld_metrics, n_tasks]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("seed", [0, 7])
def test_bootstrap_ci_matches_former_implementation(fn, seed):
    eps = records(25, 3, seed, ragged=seed == 7)
    close(bootstrap_ci(eps, fn, resamples=300, seed=seed), old_bootstrap_ci(eps, fn, resamples=300, seed=seed))
    wanted = list(_old_numeric(fn(eps)))[:3]
    close(
        bootstrap_ci(eps, fn, resamples=300, seed=seed, metrics=wanted),
        old_bootstrap_ci(eps, fn, resamples=300, seed=seed, metrics=wanted),
    )


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_paired_bootstrap_matches_former_implementation(fn):
    ours, ref = records(30, 2, 1), records(30, 2, 2)[:-5]  # the reference misses a few episodes: only shared tasks pair
    close(
        paired_bootstrap(ours, ref, fn, resamples=300, seed=3),
        old_paired_bootstrap(ours, ref, fn, resamples=300, seed=3),
    )
    wanted = list(_old_numeric(fn(ours)))[:2]
    close(
        paired_bootstrap(ours, ref, fn, resamples=300, seed=3, metrics=wanted),
        old_paired_bootstrap(ours, ref, fn, resamples=300, seed=3, metrics=wanted),
    )


def test_rates_are_computed_from_per_task_arrays_not_per_resample():
    """The table rates (a rate over episodes, over tasks, pooled) never re-run the metric function
    per resample: its calls grow with the tasks, not with tasks × resamples."""
    eps = records(40, 3, 5)
    calls = []

    def counted(episodes):
        calls.append(len(episodes))
        return tau_pooled(episodes)

    got = bootstrap_ci(eps, counted, resamples=2000, metrics=["Pass1", "DB", "ActionAcc"])
    assert set(got) == {"Pass1", "DB", "ActionAcc"}
    assert (
        len(calls) < 200
    )  # per task: alone and beside a reference; three checks. The former implementation: 2,000 calls
    close(got, old_bootstrap_ci(eps, tau_pooled, resamples=2000, metrics=["Pass1", "DB", "ActionAcc"]))
