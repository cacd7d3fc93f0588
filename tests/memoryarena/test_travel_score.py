"""Travel scorer (docs/memoryarena.md §5.1) on hand-computed cases, upstream quirks included."""

import copy
import json

import pytest

from benchmarks.memoryarena import travel_score
from benchmarks.memoryarena.loader import FIXTURES

ROW = json.loads((FIXTURES / "group_travel_planner" / "data.jsonl").read_text().splitlines()[0])
BASE = ROW["base_person"]["daily_plans"]


def test_similarity_compares_only_the_common_prefix():
    assert travel_score.similarity("C", "Coco Bambu, Rockford") == 1.0  # upstream quirk: a prefix passes
    assert travel_score.similarity("C", "Coco Bambu, Rockford", prefix_only=False) == pytest.approx(2 / 21)
    assert travel_score.similarity("-", "-") == 1.0 and travel_score.similarity("-", "Coco Bambu, Rockford") == 0.0
    assert travel_score.similarity("", "x") == 0.0 and travel_score.similarity(None, "x") == 0.0
    assert travel_score.similarity("  COCO bambu, rockford ", "Coco Bambu, Rockford") == 1.0


def test_another_flight_with_similar_times_still_passes():
    gold = BASE[0]["transportation"]
    other = "Flight Number: F3573700, from St. Petersburg to Rockford, Departure Time: 16:40, Arrival Time: 18:04"
    assert travel_score.similarity(gold, other) >= travel_score.THRESHOLD  # pitfall 1


def test_parse_days_and_format_round_trip():
    text = travel_score.format_plan("Eric", ROW["answers"][0])
    assert text.startswith("=== Eric's Plan ===\nDay 1:\nCurrent City: from St. Petersburg to Rockford\n")
    days = travel_score.parse_days(text)
    assert [d["day"] for d in days] == [1, 2, 3]
    assert days[0]["transportation"].startswith("Flight Number: F3573659, from")  # split at the first ':'
    assert days[1]["breakfast"] == "Coco Bambu, Rockford" and days[2]["dinner"] == "-"
    assert travel_score.parse_days("no plan here") is None and travel_score.parse_days(None) is None


def test_submission_is_the_last_block_of_that_name():
    a = "=== Eric's Plan ===\nDay 1:\nDinner: A\n=== Emma's Plan ===\nDay 1:\nDinner: B"
    b = "=== Emma's Plan ===\nDay 1:\nDinner: C\n=== Eric's Plan ===\nDay 1:\nDinner: D"
    assert travel_score.parse_days(travel_score.submission("Eric", [a, b]))[0]["dinner"] == "D"
    assert travel_score.parse_days(travel_score.submission("Emma", [a]))[0]["dinner"] == "B"
    assert travel_score.submission("Liam", [a, b]) is None


def test_person_scores_constraint_slots_against_the_base():
    eric = ROW["answers"][0]  # differs from the base only at day 2 breakfast
    assert travel_score.constraint_slots(travel_score.normalise_days(eric), travel_score.normalise_days(BASE)) == [
        (2, "breakfast")
    ]
    assert travel_score.score_person(eric, eric, BASE) == {
        "submitted": True,
        "parsed": True,
        "full_pass": True,
        "constraint_slots": 1,
        "constraint_passed": 1,
    }
    assert travel_score.score_person(eric, BASE, BASE) == {
        "submitted": True,
        "parsed": True,
        "full_pass": False,
        "constraint_slots": 1,
        "constraint_passed": 0,
    }
    missing_day = [d for d in eric if d["days"] != 3]
    assert travel_score.score_person(eric, missing_day, BASE)["full_pass"] is False
    assert travel_score.score_person(eric, None, BASE) == {
        "submitted": True,
        "parsed": False,
        "full_pass": False,
        "constraint_slots": 1,
        "constraint_passed": 0,
    }
    assert travel_score.score_person(eric, None, BASE, present=False)["submitted"] is False


def test_current_city_is_not_scored():
    pred = copy.deepcopy(ROW["answers"][0])
    pred[1]["current_city"] = "Somewhere else"
    assert travel_score.score_person(ROW["answers"][0], pred, BASE)["full_pass"] is True


def test_aggregate_hand_computed_and_persons_without_slots_skipped_in_sps():
    def p(full, slots, passed, sub=True):
        return {
            "submitted": sub,
            "full_pass": full,
            "constraint_slots": slots,
            "constraint_passed": passed,
        }  # noqa: E731

    g1 = [p(True, 2, 2), p(False, 0, 0)]  # second person has no constraint slot: skipped in sPS
    g2 = [p(False, 4, 1)]
    out = travel_score.aggregate([g1, g2])
    assert out["SR"] == 0.0
    assert out["PS_group"] == pytest.approx((1 / 2 + 0) / 2) and out["PS"] == out["PS_group"]
    assert out["PS_persons"] == pytest.approx(1 / 3)
    assert out["sPS"] == pytest.approx((1.0 + 0.25) / 2)
    assert travel_score.aggregate([g1, g2], ps_pooling="persons")["PS"] == pytest.approx(1 / 3)
    assert travel_score.aggregate([[p(False, 0, 0)]])["sPS"] is None
    assert travel_score.aggregate([]) == {"SR": None, "PS": None, "PS_group": None, "PS_persons": None, "sPS": None}
    with pytest.raises(ValueError, match="ps_pooling"):
        travel_score.aggregate([g1], ps_pooling="tasks")


def test_sr_skips_absent_travellers_unless_strict():
    ok = {"submitted": True, "full_pass": True, "constraint_slots": 0, "constraint_passed": 0}
    none = {"submitted": False, "full_pass": False, "constraint_slots": 1, "constraint_passed": 0}
    assert travel_score.aggregate([[ok, none]])["SR"] == 1.0  # upstream quirk
    assert travel_score.aggregate([[ok, none]], sr_missing="fail")["SR"] == 0.0
    assert travel_score.aggregate([[none]])["SR"] is None  # upstream: a group nobody submitted is not scored
    assert travel_score.aggregate([[ok, none], [none]])["SR"] == 1.0
    assert not travel_score.group_success([none])


# ----------------------------------------------------------------------------- upstream eval.py details
def test_blank_value_never_matches():
    # upstream: `SequenceMatcher(...).ratio() if m else 0.0` with m the common length after strip
    assert travel_score.similarity("-", " ") == 0.0 and travel_score.similarity("  ", "  ") == 0.0
    assert travel_score.similarity("Coco Bambu, Rockford", "   ", prefix_only=False) == 0.0


def test_a_repeated_day_keeps_its_first_occurrence():
    eric = travel_score.normalise_days(ROW["answers"][0])
    wrong = {**eric[0], "dinner": "Somewhere Else Entirely, Nowhere", "accommodation": "Zzz"}
    assert travel_score.person_full_pass(eric, eric + [wrong])  # upstream get_day: first match wins
    assert not travel_score.person_full_pass(eric, [wrong] + eric)


def test_constraint_slots_skip_days_the_base_lacks():
    eric = travel_score.normalise_days(ROW["answers"][0])
    base = [d for d in travel_score.normalise_days(BASE) if d["day"] != 3]
    assert all(day != 3 for day, _ in travel_score.constraint_slots(eric, base))
    assert travel_score.constraint_slots(eric, base) == [(2, "breakfast")]


def test_a_day_missing_from_the_submission_fails_its_constraint_slots():
    base = travel_score.normalise_days(BASE)
    gold = [dict(d) for d in base]
    gold[1]["breakfast"] = "-"  # the member skips the base breakfast on day 2
    assert base[1]["breakfast"] != "-" and travel_score.constraint_slots(gold, base) == [(2, "breakfast")]
    pred = [d for d in gold if d["day"] != 2]  # no day 2 at all
    assert travel_score.score_person(gold, pred, base)["constraint_passed"] == 0  # upstream check_slot_pass: False
    assert travel_score.score_person(gold, gold, base)["constraint_passed"] == 1


def test_an_unparsed_plan_fails_the_group_but_an_absent_traveller_is_skipped():
    gold, base = ROW["answers"], BASE
    unparsed = travel_score.score_group(gold, [gold[0], gold[1], None], base)  # upstream writes plan: null → fails
    assert unparsed[2] == {**unparsed[2], "submitted": True, "parsed": False, "full_pass": False}
    assert travel_score.aggregate([unparsed])["SR"] == 0.0
    absent = travel_score.score_group(gold, [gold[0], gold[1]], base)  # not in the submission → skipped
    assert absent[2]["submitted"] is False
    assert (
        travel_score.aggregate([absent])["SR"] == 1.0
        and travel_score.aggregate([absent], sr_missing="fail")["SR"] == 0.0
    )
    # upstream eval.py: PS and sPS also count only persons present in the submission
    assert travel_score.aggregate([absent])["PS_persons"] == 1.0 and travel_score.aggregate([absent])["sPS"] == 1.0
    assert travel_score.aggregate([absent], sr_missing="fail")["PS_persons"] == pytest.approx(2 / 3)


def test_sps_is_averaged_per_group_not_pooled_over_persons():
    def p(passed, slots):
        return {
            "submitted": True,
            "full_pass": False,
            "constraint_slots": slots,
            "constraint_passed": passed,
        }  # noqa: E731

    out = travel_score.aggregate([[p(2, 2), p(2, 2), p(2, 2)], [p(1, 4)]])
    assert out["sPS"] == pytest.approx((1.0 + 0.25) / 2)  # pooled over persons would be (3 + 0.25) / 4


# ----------------------------------------------------------------------------- threshold and slots
def test_a_slot_passes_at_similarity_0_7_and_fails_just_below():
    """§5.1: a slot matches at similarity ≥ 0.7. Day 2's dinner is "Chaophraya, Rockford" (20 characters)."""
    gold = ROW["answers"][0]

    def with_dinner(value):
        pred = copy.deepcopy(gold)
        pred[1]["dinner"] = value
        return pred

    at = "Chaophraya, Ro" + "xyzuvw"  # one matching block of 14 of 20 characters: 2·14 / 40 = 0.70
    below = "Chaophraya, R" + "xyzuvwq"  # 13 of 20: 0.65 (the rest shares no letter with "ockford")
    assert travel_score.similarity(gold[1]["dinner"], at) == 0.7
    assert travel_score.similarity(gold[1]["dinner"], below) == pytest.approx(0.65)
    assert travel_score.score_person(gold, with_dinner(at), BASE)["full_pass"] is True
    assert travel_score.score_person(gold, with_dinner(below), BASE)["full_pass"] is False
    # the same threshold decides a constraint slot: day 2 breakfast is Eric's one slot
    eric_slot = copy.deepcopy(gold)
    eric_slot[1]["breakfast"] = "Coco Bambu, R" + "xyzuvwq"  # 13 of 20 → 0.65: the constraint slot is missed
    assert travel_score.score_person(gold, eric_slot, BASE)["constraint_passed"] == 0
    eric_slot[1]["breakfast"] = "Coco Bambu, Ro" + "xyzuvw"  # 14 of 20 → 0.70: met, the threshold included
    assert travel_score.score_person(gold, eric_slot, BASE)["constraint_passed"] == 1


@pytest.mark.parametrize(
    "day,slot",
    [(2, "breakfast"), (2, "lunch"), (2, "dinner"), (2, "accommodation"), (1, "transportation"), (2, "attraction")],
)
def test_each_of_the_six_slots_is_scored(day, slot):
    """A wrong value in any one of the six slots fails the person (and `current_city` alone does not)."""
    gold = ROW["answers"][0]
    pred = copy.deepcopy(gold)
    assert pred[day - 1][slot] != "-"
    pred[day - 1][slot] = "Zzyzx Quwqk"  # shares no prefix letter with any gold value: similarity 0
    assert travel_score.score_person(gold, pred, BASE)["full_pass"] is False


def test_an_attraction_that_differs_from_the_base_is_a_constraint_slot():
    base = travel_score.normalise_days(BASE)
    gold = [dict(d) for d in base]
    gold[2]["attraction"] = "Rockford Art Museum, Rockford;"
    assert base[2]["attraction"][:1].lower() != "r"  # differs from the base's value from the first letter
    assert travel_score.constraint_slots(gold, base) == [(3, "attraction")]
    assert travel_score.score_person(gold, gold, base)["constraint_passed"] == 1
    assert travel_score.score_person(gold, base, base)["constraint_passed"] == 0
