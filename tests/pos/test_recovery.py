"""Recovery composition and target choice (docs/pos.md §9) and config overrides (§11)."""

from __future__ import annotations

import json

import pytest

from pos.config import PosConfig
from pos.health import HealthReport
from pos.recovery import (
    GAP_TEXT,
    GENERIC_TEXT,
    RecoveryConfig,
    build_directive,
    compose,
    cycle_items,
    low_progress,
    recovery_target,
)


def w(x: str) -> dict:
    return {"entities": [{"entity_id": x, "name": x, "entity_type": "t"}], "states": [], "relations": []}


def test_compose_pattern_then_gap():
    s = compose("static", "achievement", "heat the mug", detail='act {"command": "open cabinet 1"}')
    assert (
        s.startswith("Your most recent action changed nothing") and '"act {\\"command\\": \\"open cabinet 1\\"}"' in s
    )
    assert s.endswith(GAP_TEXT["achievement"].format(target="heat the mug"))
    assert "loop of length 3" in compose("cycle", "epistemic", "which cabinet", detail=[], period=3)
    assert "loop of length 2" in compose("cycle", "epistemic", "which cabinet", detail=[], period=None)
    assert compose(None, "epistemic", "x").startswith("Your recent steps have not made progress")
    assert compose("drift", "epistemic", "x", mode="generic") == GENERIC_TEXT


def test_cycle_items_take_the_latest_matching_loop():
    # window projections A B A B C: latest i with proj_i ≈ proj_{i-2} is i = 3 → items 2..3
    window = [{"step": i, "action": f"a{i}", "progress": 0} for i in range(5)]
    snaps = [{"step": -1, "world": w("init")}] + [{"step": i, "world": w(f"s{i}")} for i in range(5)]
    items = cycle_items(window, snaps, [w(x) for x in "ABABC"], 2, 0.15)
    assert [it["step"] for it in items] == [2, 3]
    assert items[0]["world_before"] == w("s1") and items[0]["world_after"] == w("s2") and items[1]["action"] == "a3"


def test_recovery_target_prefers_persistent_and_active_gap():
    gaps = [
        {"target": "find mug", "reason": ""},
        {"target": "heat mug", "reason": ""},
        {"target": "put mug", "reason": ""},
    ]
    ids = ["a:1", "a:2", "a:3"]
    active = {"gap_type": "achievement", "target": "heat mug"}
    assert recovery_target(gaps, ids, ["a:2", "a:3"], active, "achievement")["target"] == "heat mug"
    assert recovery_target(gaps, ids, ["a:3"], active, "achievement")["target"] == "put mug"  # active not persistent
    assert (
        recovery_target(gaps, ids, ["a:9"], {"gap_type": "epistemic", "target": "heat mug"}, "achievement")["target"]
        == "find mug"
    )
    assert recovery_target([], [], [], active, "achievement") is None


def test_low_progress_keeps_last_zero_labels():
    ts = [
        {"step": i, "action": "x", "progress": p, "score": 0.0, "reason": "r", "observation": "o"}
        for i, p in enumerate([0, 1, 0, None, 0, 0, 0])
    ]
    assert [t["step"] for t in low_progress(ts, 4)] == [2, 4, 5, 6] and set(low_progress(ts, 4)[0]) == {
        "step",
        "action",
        "progress",
        "score",
        "reason",
    }


def test_build_directive_needs_dimension_and_active_gap():
    rep = HealthReport(
        window_ready=True,
        health_score=0.0,
        gap_dimension="epistemic",
        trapping_pattern="drift",
        persistent_epistemic_gaps=["e:1"],
    )
    gaps = {"epistemic": [{"target": "where is the mug", "reason": "unseen"}], "achievement": []}
    ids = {"epistemic": ["e:1"], "achievement": []}
    active = {"gap_type": "epistemic", "target": "where is the mug", "reason": "unseen"}
    win = [{"step": 0, "action": "look", "progress": 0}]
    d = build_directive(
        rep,
        gaps=gaps,
        gap_ids=ids,
        active_gap=active,
        window=win,
        snapshots=[],
        projections=[],
        transitions=win,
        action_count=5,
        cfg=RecoveryConfig(),
        epsilon=0.15,
    )
    assert d.recovery_gap == {"gap_type": "epistemic", "target": "where is the mug", "reason": "unseen"}
    assert d.started_at_step == d.applies_from_step == 5 and d.trigger_frontier == {
        "gap_type": "epistemic",
        "target": "where is the mug",
    }
    assert "Drop actions unrelated" in d.instruction and set(d.prompt_view()) >= {
        "instruction",
        "recovery_gap",
        "low_progress_transitions",
    }
    assert (
        build_directive(
            rep,
            gaps=gaps,
            gap_ids=ids,
            active_gap=None,
            window=win,
            snapshots=[],
            projections=[],
            transitions=win,
            action_count=5,
            cfg=RecoveryConfig(),
            epsilon=0.15,
        )
        is None
    )
    assert (
        build_directive(
            rep.model_copy(update={"gap_dimension": None}),
            gaps=gaps,
            gap_ids=ids,
            active_gap=active,
            window=win,
            snapshots=[],
            projections=[],
            transitions=win,
            action_count=5,
            cfg=RecoveryConfig(),
            epsilon=0.15,
        )
        is None
    )


def test_kind_overrides_and_bad_modes():
    cfg = PosConfig(
        kind_overrides={"loca": {"sentinel": {"global_audit_every_steps": 32}}, "rca": {"task_mode": "diagnostic"}}
    )
    assert cfg.for_kind("loca").sentinel.global_audit_every_steps == 32
    assert cfg.for_kind("loca").sentinel.recent_transition_count == 4  # deep merge keeps siblings
    assert cfg.for_kind("rca").task_mode == "diagnostic" and cfg.for_kind("alfworld").task_mode == "execution"
    with pytest.raises(ValueError, match="recovery.mode"):
        RecoveryConfig(mode="clever")
    json.dumps(cfg.model_dump())
