"""The task bootstrap's memory is flat in tasks × resamples, with the same draws and intervals as
the whole matrix of resamples gives (runners.analysis.stats)."""

import tracemalloc

import numpy as np
import pytest

from runners.analysis import stats
from runners.analysis.stats import bootstrap_ci, paired_bootstrap


def sr(episodes):
    return {"SR": 100.0 * sum(e["ok"] for e in episodes) / len(episodes)} if episodes else {"SR": None}


def cell(n_tasks, seed):
    rng = np.random.default_rng(seed)
    return [{"task_id": f"t{i}", "trial": 0, "ok": int(v)} for i, v in enumerate(rng.random(n_tasks) < 0.4)]


@pytest.mark.parametrize("n,resamples", [(7, 1), (1001, 37), (300_000, 9)])
def test_the_blocks_are_the_rows_of_one_whole_draw(n, resamples):
    whole = np.random.default_rng(5).integers(0, n, (resamples, n))
    assert np.array_equal(np.concatenate(list(stats._draw_blocks(5, n, resamples))), whole)
    assert all(np.array_equal(a, b) for a, b in zip(stats._draws(5, n, resamples), whole, strict=True))


def whole_matrix_interval(episodes, resamples, seed=0):
    """The interval the bootstrap gave before it went in blocks: every resample's counts at once."""
    groups = list(stats.by_task(episodes).values())
    n = len(groups)
    draws = np.random.default_rng(seed).integers(0, n, (resamples, n))
    counts = np.stack([np.bincount(row, minlength=n) for row in draws]).astype(float)
    ok = np.array([100.0 * g[0]["ok"] for g in groups])
    return stats._interval(counts @ ok / counts.sum(axis=1), stats.LEVEL)


def test_intervals_agree_with_the_whole_matrix_and_repeat_exactly():
    eps = cell(2500, 1)
    got = bootstrap_ci(eps, sr, resamples=400, metrics=["SR"])["SR"]
    assert got == pytest.approx(whole_matrix_interval(eps, 400), abs=1e-12)
    assert bootstrap_ci(cell(2500, 1), sr, resamples=400, metrics=["SR"])["SR"] == got  # the same digits again


def test_the_bootstrap_never_holds_tasks_times_resamples_numbers():
    """10,000 tasks × 1,000 resamples would be 80 MB as a matrix of floats (the counts the
    bootstrap held before it went in blocks); in blocks the peak is the decomposition's per-task
    numbers and one block, whatever the resamples."""
    ours = cell(10_000, 2)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ci = bootstrap_ci(ours, sr, resamples=1000, metrics=["SR"])
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
        stats._memo.clear()
    assert ci["SR"][0] < 100 * np.mean([e["ok"] for e in ours]) < ci["SR"][1]
    assert peak < 40e6, f"bootstrap peak {peak / 1e6:.0f} MB"


def test_a_paired_interval_draws_both_sides_from_one_pass():
    ours, ref = cell(3000, 2), cell(3000, 3)
    got = paired_bootstrap(ours, ref, sr, resamples=300, metrics=["SR"])["SR"]
    groups = [[e] for e in ours], [[e] for e in ref]
    draws = np.random.default_rng(0).integers(0, 3000, (300, 3000))
    counts = np.stack([np.bincount(row, minlength=3000) for row in draws]).astype(float)
    a, r = (np.array([100.0 * g[0]["ok"] for g in side]) for side in groups)
    diff = counts @ a / counts.sum(axis=1) - counts @ r / counts.sum(axis=1)
    assert got == pytest.approx(stats._interval(diff, stats.LEVEL), abs=1e-12)


def test_a_mean_decomposes_without_pair_evaluations_and_a_pooled_rate_still_decomposes():
    rng = np.random.default_rng(4)
    eps = [
        {"task_id": f"t{i}", "trial": tr, "hits": int(rng.integers(0, 4)), "items": 3 + i % 4}
        for i in range(400)
        for tr in range(2)
    ]
    calls = []

    def rates(episodes):
        calls.append(len(episodes))
        return {
            "SR": 100.0 * sum(e["hits"] > 1 for e in episodes) / len(episodes),  # a mean over episodes
            "Pooled": 100.0 * sum(e["hits"] for e in episodes) / sum(e["items"] for e in episodes),
        }

    groups = list(stats.by_task(eps).values())
    stats._memo.clear()
    got = stats._decompose(groups, rates, ["SR"])
    assert "SR" in got and len(calls) <= 400 + 3  # each task alone, then the checks: no pairs
    assert np.array_equal(got["SR"].d, np.full(400, 2.0))
    pooled = stats._decompose(groups, rates, ["Pooled"])["Pooled"]  # weights: the items, found from pairs
    assert len(calls) > 400 + 3
    items = np.array([sum(e["items"] for e in g) for g in groups], dtype=float)
    assert np.allclose(pooled.d / pooled.d[0], items / items[0], rtol=1e-9)
    stats._memo.clear()
