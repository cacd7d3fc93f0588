"""MemoryArena metrics (FlowState §4.2 / B.5) on hand-computed examples."""

import math

import pytest

from benchmarks.memoryarena import metrics


def test_sr_ps_macro_micro():
    correct = [[1, 0, 1], [0, 1], [1, 1, 1, 0]]
    assert metrics.success_rate([1, 1, 0]) == pytest.approx(200 / 3)
    # macro: (2/3 + 1/2 + 3/4) / 3
    assert metrics.progress_macro(correct) == pytest.approx(100 * (2 / 3 + 1 / 2 + 3 / 4) / 3)


def test_empty_sets_are_undefined_not_zero():
    assert metrics.success_rate([]) is None
    assert metrics.progress_macro([]) is None
    assert metrics.acc_at_depth([]) == {}
    assert metrics.depth_metrics([]) == {"K": None, "nAUC": None, "DR": None}


def test_acc_k_counts_only_tasks_that_reach_k():
    correct = [[1, 0, 1], [0, 1], [1, 1, 1, 0]]
    acc = metrics.acc_at_depth(correct)
    assert acc == {1: pytest.approx(200 / 3), 2: pytest.approx(200 / 3), 3: 100.0, 4: 0.0}


def test_retention_nauc_dr_hand_computed():
    acc = {1: 80.0, 2: 60.0, 3: 40.0}
    r = metrics.retention(acc)
    assert r == {1: 100.0, 2: 75.0, 3: 50.0}
    # trapezoids: (100+75)/2 + (75+50)/2 = 150, / (K-1 = 2) = 75
    assert metrics.nauc(r) == pytest.approx(75.0)
    # slope of 100,75,50 over k=1..3 is -25 → DR = 25 pp per subtask
    assert metrics.decline_rate(r) == pytest.approx(25.0)


def test_all_zero_curve_and_short_tasks():
    assert metrics.retention({1: 0.0, 2: 0.0}) is None  # Acc_1 = 0: R_k undefined
    assert metrics.nauc(None) is None and metrics.decline_rate(None) is None
    single = metrics.depth_metrics([[1], [0]])  # K = 1: no area, no slope
    assert single["K"] == 1 and single["nAUC"] is None and single["DR"] is None
    flat = metrics.retention({1: 50.0, 2: 50.0, 3: 50.0, 4: 50.0})
    assert metrics.nauc(flat) == pytest.approx(100.0) and metrics.decline_rate(flat) == pytest.approx(0.0)


def test_rising_curve_gives_negative_dr():
    r = metrics.retention({1: 25.0, 2: 50.0})
    assert r == {1: 100.0, 2: 200.0}
    assert metrics.decline_rate(r) == pytest.approx(-100.0)
    assert math.isclose(metrics.nauc(r), 150.0)


def test_depth_metrics_defined_from_two_depths():
    out = metrics.depth_metrics([[1, 1], [1, 0]])  # Acc = {1: 100, 2: 50} → R = {1: 100, 2: 50}
    assert out["K"] == 2 and out["Acc_2"] == 50.0
    assert out["nAUC"] == pytest.approx(75.0) and out["DR"] == pytest.approx(50.0)
