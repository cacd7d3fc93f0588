"""Travel scorer (memoryarena.md §5.1) on hand-computed cases, upstream quirks included."""
import copy
import json

import pytest

from benchmarks.memoryarena import travel_score as S
from benchmarks.memoryarena.loader import FIXTURES

ROW = json.loads((FIXTURES / "group_travel_planner" / "data.jsonl").read_text().splitlines()[0])
BASE = ROW["base_person"]["daily_plans"]


def test_similarity_compares_only_the_common_prefix():
    assert S.similarity("C", "Coco Bambu, Rockford") == 1.0  # upstream quirk: a prefix passes
    assert S.similarity("C", "Coco Bambu, Rockford", prefix_only=False) == pytest.approx(2 / 21)
    assert S.similarity("-", "-") == 1.0 and S.similarity("-", "Coco Bambu, Rockford") == 0.0
    assert S.similarity("", "x") == 0.0 and S.similarity(None, "x") == 0.0
    assert S.similarity("  COCO bambu, rockford ", "Coco Bambu, Rockford") == 1.0


def test_another_flight_with_similar_times_still_passes():
    gold = BASE[0]["transportation"]
    other = "Flight Number: F3573700, from St. Petersburg to Rockford, Departure Time: 16:40, Arrival Time: 18:04"
    assert S.similarity(gold, other) >= S.THRESHOLD  # pitfall 1


def test_parse_days_and_format_round_trip():
    text = S.format_plan("Eric", ROW["answers"][0])
    assert text.startswith("=== Eric's Plan ===\nDay 1:\nCurrent City: from St. Petersburg to Rockford\n")
    days = S.parse_days(text)
    assert [d["day"] for d in days] == [1, 2, 3]
    assert days[0]["transportation"].startswith("Flight Number: F3573659, from")  # split at the first ':'
    assert days[1]["breakfast"] == "Coco Bambu, Rockford" and days[2]["dinner"] == "-"
    assert S.parse_days("no plan here") is None and S.parse_days(None) is None


def test_submission_is_the_last_block_of_that_name():
    a = "=== Eric's Plan ===\nDay 1:\nDinner: A\n=== Emma's Plan ===\nDay 1:\nDinner: B"
    b = "=== Emma's Plan ===\nDay 1:\nDinner: C\n=== Eric's Plan ===\nDay 1:\nDinner: D"
    assert S.parse_days(S.submission("Eric", [a, b]))[0]["dinner"] == "D"
    assert S.parse_days(S.submission("Emma", [a]))[0]["dinner"] == "B"
    assert S.submission("Liam", [a, b]) is None


def test_person_scores_constraint_slots_against_the_base():
    eric = ROW["answers"][0]  # differs from the base only at day 2 breakfast
    assert S.constraint_slots(S.normalise_days(eric), S.normalise_days(BASE)) == [(2, "breakfast")]
    assert S.score_person(eric, eric, BASE) == {"submitted": True, "full_pass": True, "constraint_slots": 1, "constraint_passed": 1}
    assert S.score_person(eric, BASE, BASE) == {"submitted": True, "full_pass": False, "constraint_slots": 1, "constraint_passed": 0}
    missing_day = [d for d in eric if d["days"] != 3]
    assert S.score_person(eric, missing_day, BASE)["full_pass"] is False
    assert S.score_person(eric, None, BASE) == {"submitted": False, "full_pass": False, "constraint_slots": 1, "constraint_passed": 0}


def test_current_city_is_not_scored():
    pred = copy.deepcopy(ROW["answers"][0])
    pred[1]["current_city"] = "Somewhere else"
    assert S.score_person(ROW["answers"][0], pred, BASE)["full_pass"] is True


def test_aggregate_hand_computed_and_persons_without_slots_skipped_in_sps():
    p = lambda full, slots, passed, sub=True: {"submitted": sub, "full_pass": full, "constraint_slots": slots, "constraint_passed": passed}  # noqa: E731
    g1 = [p(True, 2, 2), p(False, 0, 0)]   # second person has no constraint slot: skipped in sPS
    g2 = [p(False, 4, 1)]
    out = S.aggregate([g1, g2])
    assert out["SR"] == 0.0
    assert out["PS_group"] == pytest.approx((1 / 2 + 0) / 2) and out["PS"] == out["PS_group"]
    assert out["PS_persons"] == pytest.approx(1 / 3)
    assert out["sPS"] == pytest.approx((1.0 + 0.25) / 2)
    assert S.aggregate([g1, g2], ps_pooling="persons")["PS"] == pytest.approx(1 / 3)
    assert S.aggregate([[p(False, 0, 0)]])["sPS"] is None
    assert S.aggregate([]) == {"SR": None, "PS": None, "PS_group": None, "PS_persons": None, "sPS": None}
    with pytest.raises(ValueError, match="ps_pooling"):
        S.aggregate([g1], ps_pooling="tasks")


def test_sr_skips_unsubmitted_travellers_unless_strict():
    ok = {"submitted": True, "full_pass": True, "constraint_slots": 0, "constraint_passed": 0}
    none = {"submitted": False, "full_pass": False, "constraint_slots": 1, "constraint_passed": 0}
    assert S.aggregate([[ok, none]])["SR"] == 1.0          # upstream quirk
    assert S.aggregate([[ok, none]], sr_missing="fail")["SR"] == 0.0
    assert S.aggregate([[none]])["SR"] == 0.0               # nobody submitted: not a success
