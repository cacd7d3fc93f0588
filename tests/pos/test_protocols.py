"""PoS protocols: exact key sets, total parsing, and the scripted `render` contract (spec §2.5)."""
from __future__ import annotations

import json

import pytest

from pos.protocols import AuditProtocol, BeliefTextProtocol, DeltaProtocol, InitProtocol, PolicyProtocol, ProgressProtocol
from pos.world import World
from runners.api import Decision, ToolCall

ALL = [InitProtocol, DeltaProtocol, AuditProtocol, ProgressProtocol, BeliefTextProtocol]


@pytest.mark.parametrize("cls", ALL)
def test_render_of_an_empty_reference_is_a_valid_minimal_reply(cls):
    p = cls()
    parsed = p.parse(p.render(Decision(message="")))
    assert parsed.ok and set(parsed.blocks["json"]) == set(p.keys)


def test_minimal_initial_belief_builds():
    obj = json.loads(InitProtocol().render(Decision(message="")))
    w = World().apply({"upsert_entities": obj["entities"], "upsert_states": obj["states"], "upsert_relations": obj["relations"]})
    assert obj["frontier"]["target"] == obj["achievement_gaps"][0]["target"] and "e1" in w.entities


def test_render_prefers_extras_then_json_message_then_fallback():
    p = AuditProtocol()
    issue = {"issues": []}
    assert json.loads(p.render(Decision(extras={"json": {"issues": [1]}}))) == {"issues": [1]}
    assert p.render(Decision(message=json.dumps(issue))) == json.dumps(issue)
    p.fallback = lambda: {"issues": ["fallback"]}
    assert json.loads(p.render(Decision(message="42"))) == {"issues": ["fallback"]}


@pytest.mark.parametrize("text, kind", [("", "empty"), ("no json here", "bad_json"), ("[1, 2]", "bad_json"),
                                        ('{"verdict": "ok"}', "bad_field"), ('{"issues": "none"}', "bad_field"),
                                        ('{"issues": [{"targets": "s1"}]}', "bad_field")])
def test_audit_parse_is_total(text, kind):
    parsed = AuditProtocol().parse(text)
    assert not parsed.ok and parsed.errors[0].kind == kind


def test_audit_reply_with_extra_keys_is_read_as_upstream():
    """upstream beliefSentinel.py reads `payload.get("issues")`: other top-level keys do not matter."""
    parsed = AuditProtocol().parse('{"issues": [], "summary": "consistent", "confidence": 0.9}')
    assert parsed.ok and parsed.blocks["json"] == {"issues": []}


def test_json_in_fences_and_prose_is_accepted():
    parsed = ProgressProtocol().parse('Sure:\n```json\n{"progress": 1, "score": 0.5, "affected_record_ids": ["s1"], "reason": "r"}\n```')
    assert parsed.ok and parsed.blocks["json"]["progress"] == 1


@pytest.mark.parametrize("bad", [{"progress": True}, {"progress": 2}, {"score": -1}, {"affected_record_ids": "s1"}, {"reason": 3}])
def test_progress_field_checks(bad):
    obj = {"progress": 1, "score": 1.0, "affected_record_ids": [], "reason": "r"} | bad
    assert not ProgressProtocol().parse(json.dumps(obj)).ok


def test_delta_gap_and_frontier_checks():
    base = DeltaProtocol().minimal()
    assert DeltaProtocol().parse(json.dumps(base)).ok
    assert not DeltaProtocol().parse(json.dumps(base | {"epistemic_gaps": [{"reason": "no target"}]})).ok
    assert not DeltaProtocol().parse(json.dumps(base | {"frontier": {"gap_type": "other", "target": "x"}})).ok
    assert not DeltaProtocol().parse(json.dumps(base | {"remove_state_ids": [1]})).ok


def test_policy_protocol_round_trip_with_thought():
    """Upstream's policy format: one JSON object {"thought", "action"}; ALFWorld's string action is
    the argument of the task's one single-argument tool."""
    from runners.api import TaskView, ToolSpec
    p = PolicyProtocol()
    act = ToolSpec(name="act", description="d", parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})
    p.configure(TaskView(task_id="t", benchmark="alfworld", kind="alfworld", tools=[act]), 1)
    d = Decision(tool_calls=[ToolCall(name="act", arguments={"command": "go to desk 1"})], extras={"thought": "the mug may be there"})
    text = p.render(d)
    assert json.loads(text) == {"thought": "the mug may be there", "action": "go to desk 1"}
    parsed = p.parse(text)
    assert parsed.ok and parsed.decision.tool_calls[0].arguments == {"command": "go to desk 1"}
    assert parsed.decision.extras["thought"] == "the mug may be there"
    msg = p.parse('{"thought": "t", "message": "done"}')
    assert msg.decision.is_empty and any(e.kind == "violation" for e in msg.errors)  # no message on ALFWorld
    assert p.parse("garbage").errors[0].kind == "bad_json"
    p.configure(TaskView(task_id="t", benchmark="m", kind="formal_math", tools=[]), 1)
    assert p.parse(p.render(Decision(message="2"))).decision.message == "2"
