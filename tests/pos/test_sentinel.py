"""Belief Sentinel and the audited update pipeline (docs/pos.md §5, §6), driven through `PoS.step`
with a queue backbone: caught-and-repaired contradictions, ungrounded issues, rejections that
keep the last valid belief, malformed replies recorded as protocol errors."""

from __future__ import annotations

import asyncio

import pytest

from pos.method import PoS
from pos.updater import ContextFailure
from pos.sentinel import SentinelConfig, audit_scope, confidence_change, diagnostic_progress, ground_issue, truncate
from pos.world import World
from runners.api import Observation, Request
from tests.pos.helpers import TASK, QueueBackbone, act

OPEN_OBS = "You open the drawer 1. The drawer 1 is open. In it, you see a key 1."
DRAWER = {"entity_id": "e2", "entity_type": "receptacle", "name": "drawer 1"}


def delta(states, *, entities=(DRAWER,), remove=()) -> dict:
    return {
        "remove_state_ids": list(remove),
        "remove_relation_ids": [],
        "upsert_entities": list(entities),
        "upsert_states": list(states),
        "upsert_relations": [],
        "epistemic_gaps": [],
        "achievement_gaps": [{"target": "take the key", "reason": "not held"}],
        "frontier": {"gap_type": "achievement", "target": "take the key"},
    }


OPEN = {"state_id": "s1", "entity_id": "e2", "description": "drawer 1 is open"}
CLOSED = {"state_id": "s2", "entity_id": "e2", "description": "drawer 1 is closed"}


def issue(quote: str, step: int = 0, targets=("s2",)) -> dict:
    return {
        "issues": [
            {
                "targets": list(targets),
                "issue_type": "external",
                "problem": "s2 says closed, the observation says open",
                "evidence_step": step,
                "evidence_quote": quote,
                "evidence": "observation of step 0",
                "suggestion": "remove s2",
            }
        ]
    }


def run_two_steps(bb: QueueBackbone, **params) -> PoS:
    """Initialise (fallback belief), act once, then process that action's observation."""

    async def go() -> PoS:
        m = PoS(bb, **{"belief_prompts": "project", **params})
        await m.begin_task(TASK)
        await m.begin_request(Request(index=0, request_id="toy-1/q1", text="Find the key. You see a drawer 1."))
        await m.step(Observation())
        await m.step(Observation(note=OPEN_OBS))
        return m

    return asyncio.run(go())


def test_contradictory_update_is_caught_and_repaired():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED]), delta([OPEN])],
            "pos-audit": [{"issues": []}, issue("The drawer 1 is open")],
        }
    )  # first audit: initialisation
    m = run_two_steps(bb)
    log = m.step_log()
    assert (
        log["update"]["status"] == "repaired"
        and log["audit"]["verdict"] == "issue"
        and log["re_audit"]["verdict"] == "clean"
    )
    assert set(m.belief.world.states) == {"s1"}
    repair = bb.payloads("pos-delta")[1]["repair"]
    assert repair["issue"]["targets"] == ["s2"] and repair["audit_mode"] == "local" and repair["base_step"] == -1
    assert bb.payloads("pos-delta")[1]["transition"]["action"] == "open drawer 1"
    # the delta model never sees raw history: only the belief and this transition
    assert set(bb.payloads("pos-delta")[0]) == {"belief", "transition", "mode_example"}


def test_sentinel_reads_full_belief_contexts_with_health():
    """§3/§5/§6: belief_before and the candidate (and the progress model's beliefs) are the full
    structured context: goal, world, gaps, health, frontier, frontier_gap, step."""
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")], "pos-delta": [delta([OPEN])]})
    run_two_steps(bb)
    keys = {"goal", "world", "epistemic_gaps", "achievement_gaps", "health", "frontier", "frontier_gap", "step"}
    audit, progress = bb.payloads("pos-audit")[1], bb.payloads("pos-progress")[0]
    for ctx in (audit["belief_before"], audit["candidate_belief"], progress["belief_before"], progress["belief_after"]):
        assert set(ctx) == keys and ctx["health"]["health_threshold"] == 0.25 and ctx["health"]["window_ready"] is False
    assert bb.payloads("pos-delta")[0]["belief"]["health"] == audit["belief_before"]["health"]


def test_quote_not_in_cited_step_is_not_an_issue():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED])],
            "pos-audit": [{"issues": []}, issue("the drawer 1 is locked")],
        }
    )
    m = run_two_steps(bb)
    log = m.step_log()
    assert log["update"]["status"] == "validated" and log["audit"]["verdict"] == "clean"
    assert "not found in step 0" in log["audit"]["discarded"][0]["why"]
    assert set(m.belief.world.states) == {"s1", "s2"}  # committed: the issue did not count
    assert len(bb.payloads("pos-delta")) == 1  # no repair


def test_quote_from_another_step_is_not_an_issue():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED])],
            "pos-audit": [{"issues": []}, issue("Find the key", step=0)],
        }
    )  # the task text is not step 0's evidence
    assert run_two_steps(bb).step_log()["update"]["status"] == "validated"


def test_lenient_sentinel_reply_validates_the_update():
    """An extra top-level key and a string evidence_step: upstream discards the issue as ungrounded
    (its step lookup finds nothing) and validates the candidate; the update is not rejected."""
    reply = issue("The drawer 1 is open") | {"verdict": "one issue"}
    reply["issues"][0]["evidence_step"] = "0"
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED])],
            "pos-audit": [{"issues": [], "note": "init looks fine"}, reply],
        }
    )
    m = run_two_steps(bb)
    log = m.step_log()
    assert log["update"]["status"] == "validated" and log["audit"]["verdict"] == "clean"
    assert "not an integer trajectory step" in log["audit"]["discarded"][0]["why"]
    assert set(m.belief.world.states) == {"s1", "s2"} and not log["protocol_errors"]
    assert len(bb.payloads("pos-delta")) == 1  # no repair: the issue did not count


def test_issue_that_survives_repair_is_rejected_and_old_belief_kept():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED]), delta([OPEN, CLOSED])],
            "pos-audit": [{"issues": []}, issue("The drawer 1 is open"), issue("the drawer 1 is open")],
        }
    )
    m = run_two_steps(bb)
    assert m.step_log()["update"]["status"] == "rejected"
    assert m.belief.world.states == {} and "e2" not in m.belief.world.entities
    assert m.pending_issues and m.pending_issues[0]["issue"]["targets"] == ["s2"]
    # a rejected update still yields a transition and a snapshot, and is still scored
    assert m.transitions[-1]["step"] == 0 and m.snapshots[-1]["step"] == 0 and m.transitions[-1]["progress"] == 0


def test_malformed_sentinel_rejects_the_candidate():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN])],
            "pos-audit": [{"issues": []}, "the update looks fine", {"issues": [{"targets": ["s1"]}]}],
        }
    )
    m = run_two_steps(bb)
    log = m.step_log()
    assert log["update"]["status"] == "rejected" and log["audit"]["verdict"] == "failed"
    kinds = [(e["call"], e["kind"]) for e in log["protocol_errors"]]
    assert ("audit", "bad_json") in kinds and ("audit", "bad_field") in kinds
    assert m.belief.world.states == {}


def test_malformed_deltas_become_protocol_errors_and_keep_the_belief():
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")], "pos-delta": ["not json", {"upsert_states": []}]})
    m = run_two_steps(bb, context_failure="keep_belief")
    log = m.step_log()
    assert log["update"]["status"] == "rejected"
    assert [(e["call"], e["kind"]) for e in log["protocol_errors"]][:2] == [
        ("delta", "bad_json"),
        ("delta", "bad_field"),
    ]
    assert m.belief.achievement_gaps[0]["target"] == "complete the current request"  # initial belief kept


def test_unusable_delta_is_a_context_failure_by_default():
    """§2.5: after one re-ask (and one build re-ask) the belief model has failed; the case errors."""
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")], "pos-delta": ["not json", {"upsert_states": []}]})
    with pytest.raises(ContextFailure, match="delta, step 0.*2 call"):
        run_two_steps(bb)


def test_unusable_repair_is_a_context_failure_by_default():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED]), "garbage", "garbage"],
            "pos-audit": [{"issues": []}, issue("The drawer 1 is open")],
        }
    )
    with pytest.raises(ContextFailure, match="delta_repair"):
        run_two_steps(bb)
    m = run_two_steps(
        QueueBackbone(
            {
                "pos-policy": [act("open drawer 1")],
                "pos-delta": [delta([OPEN, CLOSED]), "garbage", "garbage"],
                "pos-audit": [{"issues": []}, issue("The drawer 1 is open")],
            }
        ),
        context_failure="keep_belief",
    )
    assert m.step_log()["update"]["status"] == "rejected" and m.pending_issues[0]["issue"]["targets"] == ["s2"]


def test_pending_issue_is_the_one_left_after_the_re_audit():
    """§5: issues that remain after the repair's re-audit go to pending_issues (not the first one)."""
    second = issue("the drawer 1 is open", targets=("s1",))
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED]), delta([OPEN, CLOSED])],
            "pos-audit": [{"issues": []}, issue("The drawer 1 is open"), second],
        }
    )
    m = run_two_steps(bb)
    assert m.step_log()["update"]["status"] == "rejected" and m.pending_issues == [
        {"step": 0, "issue": second["issues"][0]}
    ]


def test_delta_that_fails_to_build_gets_one_more_ask():
    bad = delta([{"state_id": "s1", "entity_id": "e9", "description": "x"}])
    bb = QueueBackbone({"pos-policy": [act("open drawer 1")], "pos-delta": [bad, delta([OPEN])]})
    m = run_two_steps(bb)
    assert m.step_log()["update"]["status"] == "validated" and set(m.belief.world.states) == {"s1"}
    assert "owner entity 'e9'" in bb.payloads("pos-delta")[1]["build_error"]


def test_no_consistency_skips_audits_but_keeps_progress():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN, CLOSED])],
            "pos-progress": [{"progress": 1, "score": 1.0, "affected_record_ids": ["s1"], "reason": "opened"}],
        }
    )
    m = run_two_steps(bb, sentinel={"consistency_enabled": False})
    assert not bb.payloads("pos-audit") and m.step_log()["update"]["status"] == "unaudited"
    assert m.transitions[-1]["progress"] == 1 and m.transitions[-1]["affected_record_ids"] == ["s1"]


def test_progress_label_checks_make_it_unverified():
    bb = QueueBackbone(
        {
            "pos-policy": [act("open drawer 1")],
            "pos-delta": [delta([OPEN])],
            "pos-progress": [
                {"progress": True, "score": 1, "affected_record_ids": [], "reason": "r"},
                {"progress": 1, "score": 1, "affected_record_ids": ["s7"], "reason": "r"},
            ],
        }
    )
    m = run_two_steps(bb)
    assert m.transitions[-1]["progress"] is None
    assert "did not change" in m.step_log()["protocol_errors"][-1]["detail"]


def test_audit_scope_local_global_and_initial():
    cfg = SentinelConfig()
    traj = [{"step": i} for i in range(-1, 12)]
    assert audit_scope(traj[:1], 0, cfg, initial=True) == ("local", traj[:1])
    assert audit_scope(traj, 3, cfg) == ("local", traj[-4:])
    assert audit_scope(traj, 8, cfg) == ("global", traj)
    assert audit_scope(traj, 32, SentinelConfig(global_audit_every_steps=32))[0] == "global"
    assert audit_scope(traj, 3, SentinelConfig(local_audit_every_steps=2)) == (None, [])


def test_truncation_and_json_escaped_quotes():
    long = "a" * 3000 + "MIDDLE" + "b" * 3000
    t = truncate(long, 6000)
    assert t.startswith("a" * 3000) and t.endswith("b" * 3000) and "MIDDLE" not in t and "[truncated]" in t
    items = [{"step": 0, "action": "go", "observation": "line one\nline two"}]
    base = {"targets": ["s1"], "evidence_step": 0}
    assert (
        ground_issue({**base, "evidence_quote": "LINE ONE\\nline two"}, items, {"s1"}) is None
    )  # JSON-escaped newline
    assert ground_issue({**base, "evidence_quote": "line one\nline two"}, items, {"s1"}) is not None
    assert "targets" in ground_issue({**base, "targets": ["s9"], "evidence_quote": "line"}, items, {"s1"})
    assert "scope" in ground_issue({**base, "evidence_step": 4, "evidence_quote": "line"}, items, {"s1"})


def test_diagnostic_confidence_change_hand_computed():
    w0 = World().apply(
        {
            "upsert_entities": [{"entity_id": "e1", "entity_type": "svc", "name": "db"}],
            "upsert_states": [
                {
                    "state_id": "s1",
                    "entity_id": "e1",
                    "description": "disk full",
                    "source_type": "inferred",
                    "probability": 0.6,
                },
                {"state_id": "s2", "entity_id": "e1", "description": "up"},
            ],
        }
    )
    # s1 becomes observed (contributes its old 0.6), s3 new inferred 0.2 → d = 0.5·(0.6 + 0.2) = 0.4
    w1 = w0.apply(
        {
            "upsert_states": [
                {"state_id": "s1", "entity_id": "e1", "description": "disk full"},
                {
                    "state_id": "s3",
                    "entity_id": "e1",
                    "description": "cpu hot",
                    "source_type": "inferred",
                    "probability": 0.2,
                },
            ]
        }
    )
    d, affected = confidence_change(w0, w1)
    assert d == pytest.approx(0.4) and affected == ["s1", "s3"]
    assert diagnostic_progress(w0, w1, 0.3)["progress"] == 1
    # exactly at the threshold is not progress (strict): 0.5·0.6 = 0.3
    w2 = w0.apply({"upsert_states": [{"state_id": "s1", "entity_id": "e1", "description": "disk full"}]})
    assert confidence_change(w0, w2)[0] == 0.3 and diagnostic_progress(w0, w2, 0.3)["progress"] == 0
