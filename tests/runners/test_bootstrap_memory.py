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


def test_a_table_builds_keep_each_episodes_numbers_in_under_150_bytes():
    """Inside a table build (`shared_evaluations`) the Wilson check's per-episode numbers are kept
    for the sign tests and the bootstrap to reuse: ~90 bytes an episode (a key tuple, a list and an
    entry per episode took ~370: 37 MB at 100,000 episodes), and the answer is the same as without."""
    n = 20_000
    eps = cell(n, 3)
    plain = stats.binary_rate(eps, sr, "SR")
    with stats.shared_evaluations():
        tracemalloc.start()
        got = stats.binary_rate(eps, sr, "SR")
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert got == plain and got[1] == n
        assert stats.binary_rate(eps, sr, "SR") == plain  # the kept numbers, read back
    assert held / n < 150, f"{held / n:.0f} bytes an episode"


def test_a_cells_intervals_draw_no_resamples_when_no_rate_prints_them():
    """A share of episodes prints Wilson's interval, an undefined rate none: `cell_ci` runs no
    bootstrap when every rate is one of those, and the same one as before when another rate needs it."""
    from runners.analysis import cells
    from runners.api import MetricSpec

    eps = [{**e, "progress": (i % 7) / 7} for i, e in enumerate(cell(400, 4))]

    def metrics(es):
        return {
            "SR": 100.0 * sum(e["ok"] for e in es) / len(es),
            "PS": 100.0 * sum(e["progress"] for e in es) / len(es),
            "NA": None,
        }

    def summary(names):
        specs = tuple(MetricSpec(name=m, kind="rate", table=True) for m in names)
        return cells.CellSummary(
            cell="c", method="m", backbone="b", benchmark="x", scripted=False, n_episodes=len(eps),
            n_tasks=len(eps), trials=1, metrics=metrics(eps), table_metrics=list(names), specs=specs,
            episodes=eps, metric_fn=metrics,
        )  # fmt: skip

    asked = []
    real = cells.bootstrap_ci

    def spy(*a, **k):
        asked.append(sorted(k["metrics"]))
        return real(*a, **k)

    mp = pytest.MonkeyPatch()
    mp.setattr(cells, "bootstrap_ci", spy)
    try:
        only_binary = cells.cell_ci(summary(["SR", "NA"]), resamples=200)
        both = cells.cell_ci(summary(["SR", "PS", "NA"]), resamples=200)
    finally:
        mp.undo()
    assert asked == [["NA", "PS", "SR"]]  # every rate, as before: the same matrix products, the same bits
    whole = real(eps, metrics, resamples=200, metrics=["SR", "PS", "NA"])
    assert both["PS"] == whole["PS"] and both["SR"] == only_binary["SR"] != whole["SR"]
    assert set(both) == {"SR", "PS"} and set(only_binary) == {"SR"}


def test_a_cells_intervals_walk_the_episodes_once_per_rate():
    """`cell_ci` asks whether each rate is a share of episodes once (`binary_rate` scores every
    episode on its own) and hands the answer to `rate_interval`, instead of asking again there."""
    from runners.analysis import cells
    from runners.api import MetricSpec

    eps = cell(300, 3)
    singles = []

    def metrics(es):
        if len(es) == 1:
            singles.append(es[0]["task_id"])
        return {"SR": 100.0 * sum(e["ok"] for e in es) / len(es), "PR": 50.0 * sum(e["ok"] for e in es) / len(es)}

    specs = tuple(MetricSpec(name=m, kind="rate", table=True) for m in ("SR", "PR"))
    summary = cells.CellSummary(
        cell="c", method="m", backbone="b", benchmark="x", scripted=False, n_episodes=len(eps),
        n_tasks=len(eps), trials=1, metrics=metrics(eps), table_metrics=["SR", "PR"], specs=specs,
        episodes=eps, metric_fn=metrics,
    )  # fmt: skip
    got = cells.cell_ci(summary, resamples=200)
    # one walk per rate (`binary_rate`; PR scores 50: not a share) and the bootstrap's one for PR
    assert len(singles) == 3 * len(eps)
    assert got["SR"] == stats.wilson_interval(sum(e["ok"] for e in eps), len(eps))
    assert summary.ci_kind == {"SR": "wilson", "PR": "bootstrap"}
