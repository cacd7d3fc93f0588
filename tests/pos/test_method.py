"""PoS lifecycle details: initialisation audit and repair, gap identities and frontier episodes
across updates, diagnostic-mode progress, multi-request world carry-over (docs/pos.md §2, §3, §6)."""

from __future__ import annotations

import asyncio

from pos.method import PoS
from runners.api import Observation, Request, RequestOutcome
from tests.pos.helpers import TASK, QueueBackbone, act

FIRST = "You are in the middle of a room. You see a drawer 1 and a desk 1."
AGENT = {"entity_id": "e1", "entity_type": "agent", "name": "agent"}
DRAWER = {"entity_id": "e2", "entity_type": "receptacle", "name": "drawer 1"}


def init(states=(), e_gaps=(), a_gaps=("take the key",), frontier=None) -> dict:
    return {
        "goal_specification": "the key is held",
        "entities": [AGENT, DRAWER],
        "states": list(states),
        "relations": [],
        "epistemic_gaps": [{"target": t, "reason": ""} for t in e_gaps],
        "achievement_gaps": [{"target": t, "reason": ""} for t in a_gaps],
        "frontier": frontier,
    }


def delta(states=(), e_gaps=(), a_gaps=("take the key",), frontier=None) -> dict:
    return {
        "remove_state_ids": [],
        "remove_relation_ids": [],
        "upsert_entities": [],
        "upsert_states": list(states),
        "upsert_relations": [],
        "epistemic_gaps": [{"target": t, "reason": ""} for t in e_gaps],
        "achievement_gaps": [{"target": t, "reason": ""} for t in a_gaps],
        "frontier": frontier,
    }


def drive(bb, observations, request_text="Find and take the key.", **params) -> PoS:
    async def go() -> PoS:
        m = PoS(bb, **{"belief_prompts": "project", **params})
        await m.begin_task(TASK)
        await m.begin_request(Request(index=0, request_id="toy-1/q1", text=request_text))
        for o in observations:
            await m.step(Observation(note=o) if o is not None else Observation())
        return m

    return asyncio.run(go())


def test_initialisation_issue_is_repaired_against_the_first_observation():
    wrong = {"state_id": "s1", "entity_id": "e2", "description": "drawer 1 is absent"}
    issue = {
        "targets": ["s1"],
        "issue_type": "external",
        "problem": "the drawer is visible",
        "evidence_step": -1,
        "evidence_quote": "you see a drawer 1",
        "evidence": "first observation",
        "suggestion": "drop s1",
    }
    bb = QueueBackbone({"pos-init": [init([wrong]), init()], "pos-audit": [{"issues": [issue]}, {"issues": []}]})
    m = drive(bb, [FIRST])
    assert m.update_history == [{"step": -1, "status": "repaired", "audit_mode": "local"}]
    assert m.belief.world.states == {} and "repair" in bb.payloads("pos-init")[1]
    assert bb.payloads("pos-audit")[0]["raw_trajectory"] == [{"step": -1, "action": None, "observation": FIRST}]


def test_request_text_is_the_initial_evidence_when_the_first_observation_is_empty():
    """ALFWorld sends the reset observation as the request text and an empty first observation: the
    initialisation audit must still see it as step −1 evidence (§2.1, §5), so a grounded issue is repaired."""
    room = (
        "You are in the middle of a room. Looking quickly around you, you see a drawer 1.\n"
        "Your task is to: find the key."
    )
    wrong = {"state_id": "s1", "entity_id": "e2", "description": "drawer 1 is absent"}
    issue = {
        "targets": ["s1"],
        "issue_type": "external",
        "problem": "the drawer is visible",
        "evidence_step": -1,
        "evidence_quote": "you see a drawer 1",
        "evidence": "reset observation",
        "suggestion": "drop s1",
    }
    bb = QueueBackbone({"pos-init": [init([wrong]), init()], "pos-audit": [{"issues": [issue]}, {"issues": []}]})
    m = drive(bb, [None], request_text=room)
    assert bb.payloads("pos-audit")[0]["raw_trajectory"] == [{"step": -1, "action": None, "observation": room}]
    assert m.update_history[0]["status"] == "repaired" and m.belief.world.states == {}


def test_gap_ids_frontier_episodes_and_previous_frontier_in_transitions():
    bb = QueueBackbone(
        {
            "pos-init": [
                init(e_gaps=("where is the key",), frontier={"gap_type": "epistemic", "target": "where is the key"})
            ],
            "pos-policy": [act("open drawer 1"), act("take key 1 from drawer 1")],
            "pos-delta": [
                delta(
                    a_gaps=("take key 1",), frontier={"gap_type": "achievement", "target": "take key 1"}
                ),  # epistemic gap closed
                delta(a_gaps=("take the key",)),
            ],
        }
    )
    m = drive(bb, [FIRST, "You open the drawer 1. In it, you see a key 1.", "You pick up the key 1."])
    assert [s["epistemic_gap_ids"] for s in m.snapshots] == [["e:1"], [], []]
    assert [s["achievement_gap_ids"] for s in m.snapshots] == [["a:1"], ["a:1"], ["a:1"]]
    # "take key 1" was stabilised to the old target string, and the proposed frontier resolved to it
    assert bb.payloads("pos-delta")[1]["belief"]["achievement_gaps"] == [{"target": "take the key", "reason": ""}]
    assert m.belief.frontier == {"gap_type": "achievement", "target": "take the key"}
    assert [t["frontier"]["gap_type"] for t in m.transitions] == ["epistemic", "achievement"]  # the previous frontier
    assert [t["frontier_episode"] for t in m.transitions] == [0, 1] and m.frontier_episode == 1
    # the audit of update n=1 is local over the last 4 entries; the Sentinel sees both beliefs and changed IDs
    audit = bb.payloads("pos-audit")[1]
    assert [it["step"] for it in audit["raw_trajectory"]] == [-1, 0] and set(audit["changed_ids"]) == {
        "entities",
        "states",
        "relations",
    }


def test_diagnostic_mode_labels_without_a_progress_call():
    hyp = {
        "state_id": "s1",
        "entity_id": "e2",
        "description": "key inside",
        "source_type": "inferred",
        "probability": 0.8,
        "reason": "drawers hold keys",
    }
    bb = QueueBackbone({"pos-init": [init()], "pos-policy": [act("look"), act("look")], "pos-delta": [delta([hyp])]})
    m = drive(bb, [FIRST, "Nothing happens.", "Nothing happens."], task_mode="diagnostic")
    assert not bb.payloads("pos-progress")
    assert [t["progress"] for t in m.transitions] == [1, 0]  # d = 0.4 > 0.3, then d = 0
    assert (
        m.transitions[0]["affected_record_ids"] == ["s1"]
        and m.transitions[0]["scoring_method"] == "diagnostic_confidence_change"
    )


def test_world_carries_over_to_the_next_request():
    async def go(carry: bool):
        bb = QueueBackbone({"pos-init": [init(), {**init(), "entities": []}]})
        m = PoS(bb, belief_prompts="project", carry_world_across_requests=carry)
        await m.begin_task(TASK)
        for i in range(2):
            r = Request(index=i, request_id=f"toy-1/q{i + 1}", text=f"request {i}")
            await m.begin_request(r)
            await m.step(Observation())
            await m.end_request(RequestOutcome(request=r, final_response=f"answer {i}"))
        return m, bb

    m, bb = asyncio.run(go(True))
    assert "e2" in m.belief.world.entities and m.belief.goal["user_input"] == "request 1"
    carried = bb.payloads("pos-init")[1]["carried_from_earlier_requests"]
    assert "e2" in carried["world"]["entities"] and carried["earlier_requests"] == [
        {"request": "request 0", "final_response": "answer 0"}
    ]
    m, bb = asyncio.run(go(False))
    assert m.belief.world.entities == {} and "carried_from_earlier_requests" not in bb.payloads("pos-init")[1]


def test_multi_action_turn_gets_one_update_per_action():
    from runners.api import Decision, ToolCall, ToolResult

    two = Decision(
        tool_calls=[
            ToolCall(name="query", arguments={"q": "cpu"}, id="c1"),
            ToolCall(name="query", arguments={"q": "disk"}, id="c2"),
        ]
    )
    bb = QueueBackbone({"pos-init": [init()], "pos-policy": [two, act("look")]})

    async def go(limit):
        m = PoS(bb, belief_prompts="project", max_actions_per_turn=limit)
        await m.begin_task(TASK)
        await m.begin_request(Request(index=0, request_id="toy-1/q1", text="Find the fault."))
        first = await m.step(Observation())
        m.first_log = m.step_log()
        obs = Observation(
            tool_results=[
                ToolResult(call_id=c.id, name=c.name, content=f"{c.arguments['q']} ok") for c in first.tool_calls
            ],
            note="2 queries used",
        )
        await m.step(obs)
        return m, first

    m, first = asyncio.run(go(3))
    assert len(first.tool_calls) == 2 and m.action_count == 3
    assert [(t["step"], t["action"]) for t in m.transitions] == [
        (0, '{"name": "query", "arguments": {"q": "cpu"}}'),
        (1, '{"name": "query", "arguments": {"q": "disk"}}'),
    ]  # upstream's action form
    assert (
        m.transitions[0]["observation"] == "[call-0] query -> cpu ok"
        and m.transitions[1]["observation"] == "[call-1] query -> disk ok\n2 queries used"
    )
    latest = bb.calls[-1][2][-1]["content"]  # the policy prompt of the second turn: only the last action's observation
    assert "disk ok" in latest and "cpu ok" not in latest
    bb.replies["pos-init"], bb.replies["pos-policy"] = [init()], [two, act("look")]
    m, first = asyncio.run(go(1))
    assert len(first.tool_calls) == 1 and len(m.transitions) == 1
    assert (
        m.transitions[0]["observation"] == "[call-0] query -> cpu ok\n2 queries used"
    )  # one action: the whole observation
    assert m.first_log["policy"]["dropped_actions"][0]["arguments"] == {"q": "disk"}


# ----------------------------------------------------------------------------- §11 sampling, §4 forced submission
def test_sampling_per_role_follows_the_released_configs():
    """§11: temperature 0 for every role; policy max 512 tokens on ALFWorld and 4096 elsewhere; belief
    model 4096; Sentinel 512 on ALFWorld/LOCA and 4096 on RCA-100/ClinDiag (merged per task kind). These are
    the project's own values (`request_settings: project`, and the fallback without the release files); the
    release's run configs themselves are checked in test_release_run_configs.py."""
    import yaml
    from pathlib import Path

    params = yaml.safe_load((Path(__file__).resolve().parents[2] / "conf/method/pos.yaml").read_text())["params"]
    expect = {
        "alfworld": (512, 4096, 512),
        "loca": (4096, 4096, 512),
        "rca": (4096, 4096, 4096),
        "clindiag": (4096, 4096, 4096),
    }
    for kind, (agent, state, sentinel) in expect.items():
        bb = QueueBackbone({"pos-init": [init()], "pos-policy": [act("look"), act("look")]})

        async def go() -> None:
            m = PoS(bb, **{"belief_prompts": "project", **params, "request_settings": "project"})
            await m.begin_task(TASK.model_copy(update={"kind": kind}))
            await m.begin_request(Request(index=0, request_id="toy-1/q1", text="Find the key."))
            await m.step(Observation(note=FIRST))
            await m.step(Observation(note="Nothing happens."))

        asyncio.run(go())
        seen = {(role, p): s for role, p, s in bb.sampling}
        want = {"agent": agent, "state": state, "sentinel": sentinel}
        assert {role for role, _ in seen} == {"agent", "state", "sentinel"}
        for (role, p), s in seen.items():
            assert s == {
                "temperature": 0,
                "max_completion_tokens": want[role],
                "response_format": {"type": "json_object"},
            }, (kind, role, p, s)


def test_forced_submission_directive_on_the_last_turn_only():
    async def go(forced: bool) -> QueueBackbone:
        bb = QueueBackbone({"pos-init": [init()], "pos-policy": [act("look")] * 3})
        m = PoS(bb, belief_prompts="project", forced_submission=forced)
        await m.begin_task(TASK.model_copy(update={"step_budget": 3}))
        await m.begin_request(Request(index=0, request_id="toy-1/q1", text="Find the key."))
        for o in (FIRST, "Nothing happens.", "Nothing happens."):
            await m.step(Observation(note=o))
        return bb

    prompts = [msgs[-1]["content"] for _, p, msgs in asyncio.run(go(True)).calls if p == "pos-policy"]
    assert ["<forced_submission>" in p for p in prompts] == [False, False, True]
    assert prompts[-1].index("<forced_submission>") > prompts[-1].index("<action_contract>")
    assert not any(
        "<forced_submission>" in msgs[-1]["content"] for _, p, msgs in asyncio.run(go(False)).calls if p == "pos-policy"
    )
