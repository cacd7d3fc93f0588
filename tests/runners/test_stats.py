"""runners.analysis.stats on hand-computed cases."""

import itertools
import math

import pytest

from runners.analysis.stats import (
    _resample,
    bootstrap_ci,
    mcnemar_exact,
    paired_bootstrap,
    paired_sign_test,
    per_task,
    sign_test,
)


def sr(episodes):
    """Success rate in %, the shape of a benchmark's metric function."""
    return {"SR": 100.0 * sum(e["ok"] for e in episodes) / len(episodes)} if episodes else {"SR": None}


def eps(outcomes):
    """{task: [trial outcomes]} → episode records."""
    return [{"task_id": t, "trial": i, "ok": int(o)} for t, os in outcomes.items() for i, o in enumerate(os)]


def test_sign_test_exact_values():
    # 8 wins, 2 losses: P(X<=2) for Bin(10, 1/2) = (1 + 10 + 45) / 1024; two-sided doubles it
    assert sign_test(8, 2) == pytest.approx(2 * 56 / 1024)
    assert sign_test(2, 8) == pytest.approx(2 * 56 / 1024)
    assert sign_test(5, 5) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)


def test_sign_test_agrees_with_scipy():
    stats = pytest.importorskip(
        "scipy.stats", reason="scipy not installed: the hand-computed cases above still check the sum"
    )
    for w, lo in [(8, 2), (0, 7), (13, 9), (30, 12), (1, 1)]:
        assert sign_test(w, lo) == pytest.approx(stats.binomtest(w, w + lo, 0.5).pvalue)


def test_bootstrap_without_named_metrics_calls_the_metric_once_per_resample_only_when_it_must():
    """Ratio metrics are drawn from per-task arrays whether or not `metrics` names them; a metric
    that is not a ratio (a median) still gets its interval from one call per resample."""
    data = eps({f"t{i}": [i % 2, (i // 2) % 2] for i in range(30)})
    calls = {"ratio": 0, "mixed": 0}

    def ratio(episodes):
        calls["ratio"] += 1
        return sr(episodes)

    def mixed(episodes):
        calls["mixed"] += 1
        oks = sorted(e["ok"] for e in episodes)
        return {**sr(episodes), "median": float(oks[len(oks) // 2]) if oks else None, "label": "x"}

    assert bootstrap_ci(data, ratio, resamples=500) == bootstrap_ci(data, sr, resamples=500, metrics=["SR"])
    assert calls["ratio"] < 100  # no call per resample (500)
    got = bootstrap_ci(data, mixed, resamples=500)
    assert set(got) == {"SR", "median"} and got["SR"] == bootstrap_ci(data, sr, resamples=500)["SR"]
    assert calls["mixed"] >= 500


def test_a_resample_copies_only_the_tasks_it_draws_again():
    """Each draw of a task is a task of its own (distinct ids), but only the second and later
    draws are copies: the first is the records themselves (memory at 100,000 tasks)."""
    import numpy as np

    from runners.analysis.stats import by_task

    groups = [[{"task_id": f"t{i}", "trial": k, "ok": (i + k) % 2} for k in range(2)] for i in range(4)]
    out = _resample(groups, np.array([2, 0, 2, 2, 3]), 7)
    assert [len(g) for g in by_task(out).values()] == [2, 2, 2, 2, 2]  # five tasks of two trials
    firsts = {id(e) for g in (groups[2], groups[0], groups[3]) for e in g}
    assert sum(id(e) in firsts for e in out) == 6 and len(out) == 10  # the two later draws of t2 are copies
    assert all(e["task_id"] == "t2" for e in groups[2])  # the originals untouched


def test_bootstrap_degenerate_and_bounds():
    same = eps({f"t{i}": [1] for i in range(5)})
    assert bootstrap_ci(same, sr) == {"SR": (100.0, 100.0)}  # every resample is all-success
    assert bootstrap_ci(eps({"t0": [1, 0]}), sr) == {}  # one task: nothing to resample
    half = eps({f"t{i}": [i % 2] for i in range(20)})
    lo, hi = bootstrap_ci(half, sr, resamples=2000)["SR"]
    # normal approximation for 20 tasks at p=0.5: ±1.96·sqrt(.25/20) ≈ ±21.9pp around 50
    assert 25 <= lo <= 35 and 65 <= hi <= 75
    assert bootstrap_ci(half, sr, resamples=2000) == bootstrap_ci(half, sr, resamples=2000)  # seeded: reproducible


def test_bootstrap_resamples_tasks_not_trials():
    """Trials nested: two tasks, one always solved (3 trials), one never. A resample draws whole
    tasks, so SR takes only 0, 50 or 100: never a value in between (as a trial-level bootstrap would)."""
    seen = set()

    def record(episodes):
        v = sr(episodes)
        seen.add(v["SR"])
        return v

    bootstrap_ci(eps({"a": [1, 1, 1], "b": [0, 0, 0]}), record, resamples=200)
    assert seen == {0.0, 50.0, 100.0}


def test_resampled_tasks_stay_distinct_for_per_task_metrics():
    """A task drawn twice counts as two tasks (pass^k-style grouping by task id)."""

    def n_tasks(episodes):
        return {"n": float(len({e["task_id"] for e in episodes}))}

    assert bootstrap_ci(eps({"a": [1, 0], "b": [0, 0], "c": [1, 1]}), n_tasks, resamples=50) == {"n": (3.0, 3.0)}


def test_paired_bootstrap_and_sign_test():
    ours = eps({f"t{i}": [1] for i in range(10)})
    ref = eps({f"t{i}": [1 if i < 2 else 0] for i in range(10)})
    lo, hi = paired_bootstrap(ours, ref, sr)["SR"]
    assert 0 < lo <= 80 <= hi <= 100  # the observed +80pp lies inside; all differences are >= 0
    assert paired_sign_test(ours, ref, sr, "SR") == (8, 0, 2, pytest.approx(2 / 256))
    # only shared tasks are paired
    extra = ours + eps({"only_ours": [1]})
    assert paired_sign_test(extra, ref, sr, "SR")[:3] == (8, 0, 2)
    assert paired_bootstrap(ours, eps({"z": [0]}), sr) == {}
    # a metric declared lower-is-better (MetricSpec.higher_is_better=False): the same pairs are 0 wins, 8 losses
    assert paired_sign_test(ours, ref, sr, "SR", higher_is_better=False) == (0, 8, 2, pytest.approx(2 / 256))


def test_paired_difference_is_zero_for_identical_runs():
    runs = eps({f"t{i}": [i % 3 == 0, 1] for i in range(9)})
    assert paired_bootstrap(runs, runs, sr) == {"SR": (0.0, 0.0)}
    assert paired_sign_test(runs, runs, sr, "SR") == (0, 0, 9, 1.0)


def test_per_task_uses_each_tasks_trials():
    pt = per_task(eps({"a": [1, 0, 1, 1], "b": [0]}), sr)
    assert pt == {"a": {"SR": 75.0}, "b": {"SR": 0.0}} and not math.isnan(pt["a"]["SR"])


def _spans(interval, low_q, high_q):
    """`interval` is (s + low_q, s + high_q) for a whole offset s ≥ 0: the metric is worth b on its
    b-th call, and the implementation may call it a few times before the resamples (checking a
    fast path), so the resampled values are s … s + 999 for some s."""
    lo, hi = interval
    s = lo - low_q
    return s >= -1e-9 and abs(s - round(s)) < 1e-6 and hi == pytest.approx(s + high_q)


def test_a_95_interval_spans_the_2_5th_to_97_5th_percentile_of_the_resamples():
    """A metric whose b-th call is worth b makes the resampled values 1,000 consecutive whole
    numbers s … s + 999; numpy's linear percentile of them at q % is s + q / 100 · 999, so the 95 %
    interval is (s + 24.975, s + 974.025), the 90 % one (s + 49.95, s + 949.05)."""

    def counter():
        n = itertools.count()
        return lambda episodes: {"m": float(next(n))}

    tasks = eps({f"t{i}": [1] for i in range(3)})
    assert _spans(bootstrap_ci(tasks, counter(), resamples=1000)["m"], 24.975, 974.025)
    assert _spans(bootstrap_ci(tasks, counter(), resamples=1000, level=0.9)["m"], 49.95, 949.05)
    assert not _spans(bootstrap_ci(tasks, counter(), resamples=1000, level=0.9)["m"], 24.975, 974.025)


def test_a_95_paired_interval_spans_the_2_5th_to_97_5th_percentile_of_the_differences():
    """Ours is worth b on its b-th call and the reference 0: the differences are s … s + 999."""
    n = itertools.count()

    def metric(episodes):
        return {"m": float(next(n)) if episodes[0]["side"] == "ours" else 0.0}

    ours = [{**e, "side": "ours"} for e in eps({f"t{i}": [1] for i in range(3)})]
    ref = [{**e, "side": "ref"} for e in eps({f"t{i}": [0] for i in range(3)})]
    assert _spans(paired_bootstrap(ours, ref, metric, resamples=1000)["m"], 24.975, 974.025)


def test_bootstrap_interval_width_matches_the_normal_approximation():
    """Task values 0 … 19 (one trial each), metric = their mean: the bootstrap standard error is the
    plug-in one, sqrt(((20² − 1) / 12) / 20) = 1.2894, so a 95 % interval is 9.5 ± 1.96 · 1.2894 = ± 2.53
    (a 90 % one would be ± 2.12). 4000 seeded resamples put each end within ~0.1 of that."""
    values = [{"task_id": f"t{i}", "trial": 0, "v": float(i)} for i in range(20)]
    lo, hi = bootstrap_ci(values, lambda es: {"mean": sum(e["v"] for e in es) / len(es)}, resamples=4000)["mean"]
    se = math.sqrt((20**2 - 1) / 12 / 20)
    assert (hi - lo) / 2 == pytest.approx(1.96 * se, abs=0.2)
    assert (lo + hi) / 2 == pytest.approx(9.5, abs=0.2)


def test_shared_evaluations_compute_each_tasks_numbers_once_and_change_none():
    """Inside `shared_evaluations` (a table build) the Wilson check's per-episode numbers, the sign
    tests' per-task numbers and the bootstrap's are computed once and shared; the results are the
    same as without the block."""
    from runners.analysis.stats import binary_rate, shared_evaluations

    a = [{"task_id": f"t{i}", "trial": 0, "ok": i % 3 == 0} for i in range(30)]
    b = [{"task_id": f"t{i}", "trial": 0, "ok": i % 2 == 0} for i in range(30)]
    calls = []

    def rate(eps):
        calls.append(len(eps))
        return {"SR": 100.0 * sum(e["ok"] for e in eps) / len(eps)}

    def work():
        return [
            binary_rate(a, rate, "SR"),
            binary_rate(a, rate, "SR"),  # a second rate of the same cell
            paired_sign_test(a, b, rate, "SR"),
            paired_sign_test(a, b, rate, "SR"),
            bootstrap_ci(a, rate, resamples=200),
        ]

    with shared_evaluations():
        shared = work()
    singles = calls.count(1)
    calls.clear()
    plain = work()
    assert shared == plain and shared[0] == (10, 30) and shared[4]["SR"][0] < 100 / 3 < shared[4]["SR"][1]
    assert singles == 60 and calls.count(1) == 2 * 30 + 2 * 60 + 30  # a's and b's episodes once, not per call
