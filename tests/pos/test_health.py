"""Progress health (docs/pos.md §7–8) on hand-computed windows, and the `python -m pos.health` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pos.health import (
    HealthConfig,
    detect,
    gap_dimension,
    health_score,
    jaccard_distance,
    persistence,
    recurrence,
    signatures,
    stagnation,
    summary,
    verified_window,
    world_distance,
)

REPO = Path(__file__).resolve().parents[2]


def ent(i: str, name: str = "thing", etype: str = "object") -> dict:
    return {"entity_id": i, "entity_type": etype, "name": name}


def world(*ids: str) -> dict:
    """A world with one entity per id (distinct ids ⇒ fully distinct worlds)."""
    return {"entities": [ent(i) for i in ids], "states": [], "relations": []}


def snap(progress, world_ids=("e1",), proj_ids=None, e=(), a=("a:1",)) -> dict:
    w = world(*world_ids)
    return {
        "progress": progress,
        "epistemic_gaps": list(e),
        "achievement_gaps": list(a),
        "world": w,
        "active_gap_world": world(*proj_ids) if proj_ids is not None else w,
    }


# ----------------------------------------------------------------------------- components
def test_persistence_uses_stable_ids_and_first_snapshot_denominator():
    p, keep = persistence([["a:1", "a:2"], ["a:1", "a:2", "a:3"], ["a:1"]])
    assert p == 0.5 and keep == ["a:1"]
    assert persistence([[], ["a:1"]]) == (0.0, [])  # ids_1 empty ⇒ 0
    assert persistence([["e:1"]] * 8) == (1.0, ["e:1"])


def test_stagnation_counts_positive_labels_over_k():
    assert stagnation([0] * 8, 8) == 1.0
    assert stagnation([1, 0, 1, 0, 0, 0, 1, 0], 8) == pytest.approx(5 / 8)


def test_jaccard_and_world_distance_hand_computed():
    assert jaccard_distance(set(), set()) == 0.0
    assert jaccard_distance({"x", "y"}, {"y", "z"}) == pytest.approx(1 - 1 / 3)
    # entities: {e1,e2} vs {e1} → 1/2; states and relations empty on both sides → 0
    assert world_distance(world("e1", "e2"), world("e1")) == pytest.approx(0.5 / 3)


def test_signature_includes_confidence():
    s1 = {
        "state_id": "s1",
        "entity_id": "e1",
        "description": "open",
        "probability": 0.6,
        "source_type": "inferred",
        "reason": "r",
    }
    s2 = dict(s1, probability=0.7)
    assert signatures([s1]) != signatures([s2])
    assert signatures([{"a": "X  Y"}]) == signatures([{"a": "x y"}])  # norm: casefold + whitespace


def test_recurrence_rates_hand_computed():
    # projections A A B A A B A A
    seq = [world(x) for x in "AABAABAA"]
    r, period, rates = recurrence(seq, 0.15, 4)
    # lag 1: pairs (1,0)AA (2,1)BA (3,2)AB (4,3)AA (5,4)BA (6,5)AB (7,6)AA → 3/7
    # lag 2: (2,0)BA (3,1)AA (4,2)AB (5,3)BA (6,4)AA (7,5)AB → 2/6
    # lag 3: (3,0)AA (4,1)AA (5,2)BB (6,3)AA (7,4)AA → 5/5
    # lag 4: (4,0)AA (5,1)BA (6,2)AB (7,3)AA → 2/4
    assert rates == {1: pytest.approx(3 / 7), 2: pytest.approx(2 / 6), 3: 1.0, 4: 0.5}
    assert (r, period) == (1.0, 3)


def test_recurrence_ties_keep_the_smaller_lag():
    r, period, rates = recurrence([world("A")] * 8, 0.15, 4)
    assert rates == {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0} and (r, period) == (1.0, 1)


def test_recurrence_all_zero_has_no_period():
    assert recurrence([world(str(i)) for i in range(8)], 0.15, 4)[:2] == (0.0, None)


def test_recurrence_lags_limited_by_window_length():
    assert set(recurrence([world("A")] * 3, 0.15, 4)[2]) == {1, 2}


def test_gap_dimension_ties_go_to_epistemic_and_needs_current_gaps():
    assert gap_dimension(["e:1"], ["a:1"], 1.0, 1.0) == "epistemic"
    assert gap_dimension(["e:1"], ["a:1"], 0.5, 1.0) == "achievement"
    assert gap_dimension([], ["a:1"], 1.0, 0.2) == "achievement"  # no current epistemic gaps
    assert gap_dimension([], [], 1.0, 1.0) is None


def test_health_formula_and_page_illustration():
    assert health_score(0.5, 0.0, 0.5, 4 / 7) == pytest.approx(1 - 0.5 * 4 / 7)
    assert round(health_score(0.5, 0.0, 0.5, 4 / 7), 2) == 0.71


# ----------------------------------------------------------------------------- boundary cases (§7)
def test_stagnation_without_recurrence_is_trapped():
    # (p, S, R) = (1, 1, 0): the gap persists, no progress, every world different
    rep = detect([snap(0, world_ids=(f"w{i}",)) for i in range(8)])
    assert (rep.persistence_a, rep.stagnation, rep.recurrence) == (1.0, 1.0, 0.0)
    assert rep.health_score == 0.0 and rep.trapped
    assert rep.trapping_pattern is None and summary(rep)["pattern"] == "generic"
    assert rep.gap_dimension == "achievement" and rep.persistent_achievement_gaps == ["a:1"]


def test_recurrence_despite_positive_labels_is_trapped_as_cycle():
    # (1, 0, 1): labels all positive, but the gap-relevant part alternates A/B (period 2)
    snaps = [snap(1, world_ids=(f"w{i}",), proj_ids=("A" if i % 2 else "B",)) for i in range(8)]
    rep = detect(snaps)
    assert rep.stagnation == 0.0 and rep.recurrence == 1.0 and rep.recurrence_period == 2
    assert rep.health_score == 0.0 and rep.trapped and rep.trapping_pattern == "cycle"


def test_progress_before_gap_closure_is_healthy():
    # (1, 0, 0): the gap is still open but every step progresses and nothing recurs
    rep = detect([snap(1, world_ids=(f"w{i}",)) for i in range(8)])
    assert rep.window_ready and rep.health_score == 1.0 and not rep.trapped and rep.trapping_pattern is None


def test_page_illustration_window():
    # P_A = 1/2 (a:2 leaves), S = 1/2, R = 4/7 at lag 1 ⇒ H = 1 − 0.5 · 4/7 ≈ 0.71, healthy
    projs = "AABBCCDD"  # lag-1 hits at i = 1, 3, 5, 7 → 4/7; lag 2: 0; lag 3: 0; lag 4: 0
    snaps = [
        snap(i % 2, world_ids=(f"w{i}",), proj_ids=(projs[i],), a=("a:1", "a:2") if i == 0 else ("a:1",))
        for i in range(8)
    ]
    rep = detect(snaps)
    assert (rep.persistence_a, rep.stagnation, rep.recurrence, rep.recurrence_period) == (
        0.5,
        0.5,
        pytest.approx(4 / 7),
        1,
    )
    assert rep.health_score == pytest.approx(1 - 0.5 * 4 / 7) and not rep.trapped


def test_empty_gap_sets_are_never_trapped():
    rep = detect([snap(0, a=()) for _ in range(8)])
    assert (
        rep.window_ready
        and rep.persistence_a == rep.persistence_e == 0.0
        and rep.health_score == 1.0
        and not rep.trapped
    )


def test_window_shorter_than_k_is_not_ready():
    rep = detect([snap(0) for _ in range(7)] + [snap(None)])
    assert not rep.window_ready and rep.health_score == 1.0 and not rep.trapped


def test_unverified_labels_are_excluded_not_zero():
    # 8 verified positive transitions and unverified ones between them: S stays 0
    snaps = []
    for i in range(8):
        snaps += [snap(1, world_ids=(f"w{i}",)), snap(None, world_ids=("stuck",))]
    assert len(verified_window(snaps, 8)) == 8 and all(s["progress"] == 1 for s in verified_window(snaps, 8))
    rep = detect(snaps)
    assert rep.stagnation == 0.0 and rep.recurrence == 0.0 and not rep.trapped


def test_window_is_the_last_k_verified():
    # 4 old positive labels, then 8 stagnant ones: only the last 8 count
    snaps = [snap(1, world_ids=(f"old{i}",)) for i in range(4)] + [snap(0, world_ids=(f"w{i}",)) for i in range(8)]
    assert detect(snaps).stagnation == 1.0


def test_static_pattern_when_last_two_worlds_match():
    snaps = [snap(0, world_ids=(f"w{i}",)) for i in range(7)] + [snap(0, world_ids=("w6",))]
    rep = detect(snaps)
    assert rep.trapped and rep.trapping_pattern == "static"


@pytest.mark.parametrize("source", ["defaults", "conf/method/pos.yaml"])
def test_worlds_a_ninth_apart_are_a_revisit_and_a_sixth_apart_are_not(source):
    """ε = 0.15 (docs/pos.md §7) for the recurrence rates and for the Static test (§8), in the code's
    defaults and in the PoS config alike. Entities {x, y} vs {x, y, z}: Jaccard distance 1/3, so
    d_W = 1/9 ≈ 0.11 ≤ ε; {x, y} vs {x}: 1/2, so d_W = 1/6 ≈ 0.17 > ε. Every other pair of worlds shares
    no entity (d_W = 1/3)."""
    from runners.config import group_config

    cfg = (
        HealthConfig() if source == "defaults" else HealthConfig(**group_config("method", "pos")["params"]["trapping"])
    )
    assert world_distance(world("x", "y"), world("x", "y", "z")) == pytest.approx(1 / 9)
    assert world_distance(world("x", "y"), world("x")) == pytest.approx(1 / 6)
    head = [snap(0, world_ids=(f"w{i}",)) for i in range(6)]
    near = detect(head + [snap(0, world_ids=("x", "y", "z")), snap(0, world_ids=("x", "y"))], cfg)
    far = detect(head + [snap(0, world_ids=("x",)), snap(0, world_ids=("x", "y"))], cfg)
    # near: one lag-1 hit of 7 pairs; the last two full worlds are within ε, so Static (before Cycle and Drift)
    assert (near.recurrence, near.recurrence_period, near.trapping_pattern) == (pytest.approx(1 / 7), 1, "static")
    # far: no pair within ε: no recurrence and no pattern (the generic constraint)
    assert (far.recurrence, far.recurrence_period, far.trapping_pattern) == (0.0, None, None)
    assert near.trapped and far.trapped  # stagnant with a persistent gap: H = 0 either way


@pytest.mark.parametrize("source", ["defaults", "conf/method/pos.yaml"])
def test_health_just_above_the_threshold_is_not_trapped(source):
    """H ≤ 0.25 is trapped (docs/pos.md §7). Labels 1,1,1,0,0,0,0,0 ⇒ S = 5/8; projections AAAAAABC ⇒ lag-1
    hits 5 of 7 (lag 2: 4/6, lag 3: 3/5, lag 4: 2/4) ⇒ R = 5/7; P_A = 1 ⇒ H = 1 − 5/7 = 2/7 ≈ 0.29."""
    from runners.config import group_config

    cfg = (
        HealthConfig() if source == "defaults" else HealthConfig(**group_config("method", "pos")["params"]["trapping"])
    )
    snaps = [snap(int(i < 3), world_ids=(f"w{i}",), proj_ids=(p,)) for i, p in enumerate("AAAAAABC")]
    rep = detect(snaps, cfg)
    assert (rep.persistence_a, rep.stagnation, rep.recurrence, rep.recurrence_period) == (
        1.0,
        5 / 8,
        pytest.approx(5 / 7),
        1,
    )
    assert rep.health_score == pytest.approx(2 / 7) and rep.health_threshold == 0.25
    assert not rep.trapped and rep.trapping_pattern is None


def test_drift_when_projection_still_but_world_moves_and_ties_pick_lag_one():
    # projections constant (R = 1 at every lag, tie ⇒ period 1, so not a Cycle); worlds all differ
    snaps = [snap(0, world_ids=(f"w{i}",), proj_ids=("P",)) for i in range(8)]
    rep = detect(snaps)
    assert rep.recurrence_period == 1 and rep.trapping_pattern == "drift"


def test_epistemic_dimension_on_tie():
    snaps = [snap(0, world_ids=(f"w{i}",), e=("e:1",), a=("a:1",)) for i in range(8)]
    assert detect(snaps).gap_dimension == "epistemic"


def test_config_checks():
    with pytest.raises(ValueError, match="max_cycle_length"):
        HealthConfig(window_size=4, max_cycle_length=4)
    with pytest.raises(ValueError, match="health_threshold"):
        HealthConfig(health_threshold=1.5)


# ----------------------------------------------------------------------------- command
def _run(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pos.health", "--transitions", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO)},
        timeout=60,
    )


def test_health_command_prints_the_summary(tmp_path):
    f = tmp_path / "w.jsonl"
    f.write_text(
        "\n".join(json.dumps(snap(1, world_ids=(f"w{i}",), proj_ids=("A" if i % 2 else "B",))) for i in range(8)) + "\n"
    )
    out = _run(f)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert {k: got[k] for k in ("P_E", "P_A", "S", "R", "period", "H", "trapped", "pattern")} == {
        "P_E": 0.0,
        "P_A": 1.0,
        "S": 0.0,
        "R": 1.0,
        "period": 2,
        "H": 0.0,
        "trapped": True,
        "pattern": "cycle",
    }


def test_health_command_rejects_bad_progress(tmp_path):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"progress": True, "epistemic_gaps": [], "achievement_gaps": [], "world": world()}) + "\n")
    out = _run(f)
    assert out.returncode == 2 and "bad.jsonl:1" in out.stderr and "'progress' must be 0, 1 or null" in out.stderr


def test_empty_projection_is_used_and_missing_projection_means_full_world():
    empty = [
        dict(snap(1, world_ids=(f"w{i}",)), active_gap_world={"entities": [], "states": [], "relations": []})
        for i in range(8)
    ]
    assert detect(empty).recurrence == 1.0  # empty projections are all equal
    missing = [{k: v for k, v in snap(1, world_ids=(f"w{i}",)).items() if k != "active_gap_world"} for i in range(8)]
    assert detect(missing).recurrence == 0.0  # no Active Gap ⇒ full worlds, all different


def test_trapped_at_exactly_the_health_threshold():
    from pos.health import HealthReport

    at = HealthReport(window_ready=True, health_score=0.25, health_threshold=0.25)
    assert at.trapped  # H <= 0.25 (PoS §8), boundary included
    assert not HealthReport(window_ready=True, health_score=0.2501, health_threshold=0.25).trapped
    assert not HealthReport(window_ready=False, health_score=0.0).trapped
