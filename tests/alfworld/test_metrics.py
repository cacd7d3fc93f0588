"""ALFWorld success rate overall and per task type, in percent (docs/alfworld.md §5)."""

from __future__ import annotations

import pytest

from benchmarks.alfworld.metrics import alfworld_metrics, success_rate

PP = "pick_and_place_simple-Mug-None-Desk-308/trial_T1"
LK = "look_at_obj_in_light-Book-None-DeskLamp-308/trial_T1"


def ep(task_id, success=None, status="ok"):
    scores = {} if success is None else {"success": success, "task_type": task_id.split("-")[0]}
    return {"task_id": task_id, "status": status, "scores": scores}


def test_success_rate():
    assert success_rate([1, 0, 0, 1]) == 50.0 and success_rate([]) is None


def test_overall_and_per_type():
    m = alfworld_metrics([ep(PP, 1), ep(PP, 0), ep(PP, 1), ep(LK, 0)])
    assert m["SR"] == 50.0 and m["n"] == 4 and m["won"] == 2
    assert m["SR_pick_and_place_simple"] == pytest.approx(200 / 3)
    assert m["SR_look_at_obj_in_light"] == 0.0
    assert "SR_pick_two_obj_and_place" not in m  # no games of that type: undefined, not 0


def test_infra_errors_are_left_out_and_harness_errors_count_as_failures():
    m = alfworld_metrics([ep(PP, 1), ep(LK, status="infra_error"), ep(LK, status="harness_error")])
    assert m["n"] == 2 and m["SR"] == 50.0 and m["SR_look_at_obj_in_light"] == 0.0
