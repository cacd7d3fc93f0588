"""LongHorizon-Harness: manager → executor (fresh context) → auditor rounds."""

import json

from baselines.pos_baselines.lhh import FINALIZE, LongHorizonHarness
from tests.pos_baselines.helpers import FnBackbone, act, drive


def scripted(executor, audits=None, manager=None):
    ex, au = iter(executor), iter(audits or [])
    n = {"m": 0}

    def fn(role, messages):
        if role == "agent":
            return next(ex)
        sys = messages[0]["content"]
        if "manager" in sys:
            n["m"] += 1
            return json.dumps(
                manager(n["m"])
                if manager
                else {
                    "remaining_work": "rest",
                    "next_step": f"STEP-{n['m']}",
                    "done_criterion": f"CRIT-{n['m']}",
                    "task_complete": False,
                }
            )
        return next(au)

    return fn


def verdict(ok, summary="", evidence=""):
    return json.dumps({"accepted": ok, "evidence": evidence, "summary": summary})


def test_round_cap_audit_and_fresh_executor_context():
    bb = FnBackbone(
        scripted([act(f"c{i}") for i in range(5)], [verdict(True, "VERIFIED-1"), verdict(False, evidence="EVID-2")])
    )
    m = LongHorizonHarness(bb, executor_max_actions=2)
    drive(m, ["", "o1", "o2", "o3", "o4"])
    assert [c["role"] for c in bb.calls] == [
        "state",
        "agent",
        "agent",
        "state",
        "state",
        "agent",
        "agent",
        "state",
        "state",
        "agent",
    ]
    audit = bb.of("state")[1]["messages"][-1]["content"]
    assert "Observation: o2" in audit and "c1" in audit and "(no claim" in audit  # raw round trajectory, not a claim
    p3 = bb.prompt("agent", 2)  # first executor turn of round 2
    assert "VERIFIED-1" in p3 and "STEP-2" in p3 and "c0" not in p3 and "(none yet in this round)" in p3
    manager3 = bb.of("state")[4]["messages"][-1]["content"]
    assert "EVID-2" in manager3 and "VERIFIED-1" in manager3
    assert m.request_log()["failure_evidence"] == ["Step 'STEP-2' not verified: EVID-2"]


def test_claim_without_action_closes_round_in_the_same_step():
    claim = '<step_status>{"step_done": true, "claim": "drawer open"}</step_status>'
    bb = FnBackbone(scripted([act("open drawer"), claim, act("take key")], [verdict(True, "drawer is open")]))
    m = LongHorizonHarness(bb)
    decisions = drive(m, ["", "You open the drawer."])
    assert decisions[1].tool_calls[0].arguments == {"command": "take key"}
    assert [c["role"] for c in bb.calls] == ["state", "agent", "agent", "state", "state", "agent"]
    assert "drawer open" in bb.of("state")[1]["messages"][-1]["content"]
    assert m.request_log()["rounds"][0]["accepted"] is True and "drawer is open" in bb.prompt()


def test_max_rounds_stops_without_calls():
    bb = FnBackbone(scripted([act("a")] * 3, [verdict(True, "ok")] * 3))
    m = LongHorizonHarness(bb, executor_max_actions=1, max_rounds=2)
    decisions = drive(m, ["", "o1", "o2", "o3"])
    n = len(bb.calls)
    assert decisions[2].is_empty and decisions[3].is_empty and m.step_log()["stopped"] == "max_rounds"
    assert n == 2 + 2 + 2  # two rounds: manager, executor, auditor each


def test_completion_needs_submission_on_diagnostic_benchmarks():
    done = lambda i: {"remaining_work": "", "next_step": "x", "done_criterion": "y", "task_complete": True}  # noqa: E731
    bb = FnBackbone(scripted([act("a")], manager=done))
    m = LongHorizonHarness(bb, kind_overrides={"rca": {"complete_requires_submission": True}})
    drive(m, [""], benchmark="rca100", kind="rca")
    assert m.step_log()["completion_refused"] and FINALIZE not in bb.prompt()
    bb = FnBackbone(scripted([act("a")], manager=done))
    drive(LongHorizonHarness(bb), [""], benchmark="alfworld")
    assert FINALIZE in bb.prompt()
