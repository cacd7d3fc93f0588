"""PoS protocols: exact key sets, the exact errors of bad replies, and the scripted `render` contract
(docs/pos.md §2.5)."""

from __future__ import annotations

import json

import pytest

from pos.protocols import (
    AuditProtocol,
    BeliefTextProtocol,
    DeltaProtocol,
    InitProtocol,
    PolicyProtocol,
    ProgressProtocol,
)
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
    w = World().apply(
        {"upsert_entities": obj["entities"], "upsert_states": obj["states"], "upsert_relations": obj["relations"]}
    )
    assert obj["frontier"]["target"] == obj["achievement_gaps"][0]["target"] and "e1" in w.entities


def test_render_prefers_extras_then_json_message_then_fallback():
    p = AuditProtocol()
    issue = {"issues": []}
    assert json.loads(p.render(Decision(extras={"json": {"issues": [1]}}))) == {"issues": [1]}
    assert p.render(Decision(message=json.dumps(issue))) == json.dumps(issue)
    p.fallback = lambda: {"issues": ["fallback"]}
    assert json.loads(p.render(Decision(message="42"))) == {"issues": ["fallback"]}


@pytest.mark.parametrize(
    "text, error, read",
    [
        ("", ("empty", "empty model output"), None),
        ("no json here", ("bad_json", "no JSON object found in the reply"), None),
        ("[1, 2]", ("bad_json", "no JSON object found in the reply"), None),
        ('{"verdict": "ok"}', ("bad_field", "the reply needs an 'issues' list"), None),
        ('{"issues": "none"}', ("bad_field", "'issues' must be a list"), {"issues": "none"}),
        (
            '{"issues": [{"targets": "s1"}]}',
            (
                "bad_field",
                "issues[0] must have exactly the fields ['targets', 'issue_type', 'problem', "
                "'evidence_step', 'evidence_quote', 'evidence', 'suggestion'], got ['targets']",
            ),
            {"issues": [{"targets": "s1"}]},
        ),
    ],
)
def test_audit_errors_are_exact(text, error, read):
    parsed = AuditProtocol().parse(text)
    assert [(e.kind, e.detail) for e in parsed.errors] == [error]
    assert parsed.decision.tool_calls == [] and parsed.decision.message is None
    assert parsed.decision.extras == ({"json": read} if read is not None else {})


def test_audit_reply_with_extra_keys_is_read_as_upstream():
    """upstream beliefSentinel.py reads `payload.get("issues")`: other top-level keys do not matter."""
    parsed = AuditProtocol().parse('{"issues": [], "summary": "consistent", "confidence": 0.9}')
    assert parsed.ok and parsed.blocks["json"] == {"issues": []}


def test_json_in_fences_and_prose_is_accepted():
    parsed = ProgressProtocol().parse(
        'Sure:\n```json\n{"progress": 1, "score": 0.5, "affected_record_ids": ["s1"], "reason": "r"}\n```'
    )
    assert parsed.ok and parsed.blocks["json"]["progress"] == 1


@pytest.mark.parametrize(
    "bad, detail",
    [
        ({"progress": True}, "'progress' must be the integer 0 or 1"),
        ({"progress": 2}, "'progress' must be the integer 0 or 1"),
        ({"score": -1}, "'score' must be a number ≥ 0"),
        ({"affected_record_ids": "s1"}, "'affected_record_ids' must be a list of ID strings"),
        ({"reason": 3}, "'reason' must be a string"),
    ],
)
def test_progress_field_checks(bad, detail):
    obj = {"progress": 1, "score": 1.0, "affected_record_ids": [], "reason": "r"} | bad
    parsed = ProgressProtocol().parse(json.dumps(obj))
    assert [(e.kind, e.detail) for e in parsed.errors] == [("bad_field", detail)]
    assert (
        parsed.decision.extras == {"json": obj} and parsed.decision.tool_calls == [] and parsed.decision.message is None
    )


@pytest.mark.parametrize(
    "change, detail, kept",
    [
        (
            {"epistemic_gaps": [{"reason": "no target"}]},
            "epistemic_gaps[0] needs a non-empty string 'target'",
            {"epistemic_gaps": []},
        ),
        (
            {"frontier": {"gap_type": "other", "target": "x"}},
            '\'frontier\' must be null or {"gap_type": "epistemic"|"achievement", "target": str}',
            {"frontier": None},
        ),
        ({"remove_state_ids": [1]}, "'remove_state_ids' must be a list of ID strings", {"remove_state_ids": [1]}),
    ],
)
def test_delta_gap_and_frontier_checks(change, detail, kept):
    base = DeltaProtocol().minimal()
    good = DeltaProtocol().parse(json.dumps(base))
    assert good.errors == [] and good.decision.extras == {"json": base}
    parsed = DeltaProtocol().parse(json.dumps(base | change))
    assert [(e.kind, e.detail) for e in parsed.errors] == [("bad_field", detail)]
    assert parsed.decision.extras == {"json": base | kept}  # a bad gap is dropped, a bad frontier is no frontier


def test_policy_protocol_round_trip_with_thought():
    """Upstream's policy format: one JSON object {"thought", "action"}; ALFWorld's string action is
    the argument of the task's one single-argument tool."""
    from runners.api import TaskView, ToolSpec

    p = PolicyProtocol()
    act = ToolSpec(
        name="act",
        description="d",
        parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    )
    p.configure(TaskView(task_id="t", benchmark="alfworld", kind="alfworld", tools=[act]), 1)
    d = Decision(
        tool_calls=[ToolCall(name="act", arguments={"command": "go to desk 1"})],
        extras={"thought": "the mug may be there"},
    )
    text = p.render(d)
    assert json.loads(text) == {"thought": "the mug may be there", "action": "go to desk 1"}
    parsed = p.parse(text)
    assert parsed.ok and parsed.decision.tool_calls[0].arguments == {"command": "go to desk 1"}
    assert parsed.decision.extras["thought"] == "the mug may be there"
    msg = p.parse('{"thought": "t", "message": "done"}')
    assert msg.decision == Decision(extras={"thought": "t"})  # no message on ALFWorld
    assert [(e.kind, e.detail) for e in msg.errors] == [
        ("violation", "a message is not an action on this task"),
        ("bad_field", 'no executable "action" in the reply'),
    ]
    assert [(e.kind, e.detail) for e in p.parse("garbage").errors] == [
        ("bad_json", "no JSON object found in the reply")
    ]
    p.configure(TaskView(task_id="t", benchmark="m", kind="formal_math", tools=[]), 1)
    assert p.parse(p.render(Decision(message="2"))).decision.message == "2"


def test_audit_reply_records_the_readers_repairs():
    parsed = AuditProtocol().parse('<think>check</think>```json\n{"issues": [],}\n```')
    assert (
        parsed.ok and parsed.decision.extras == {"json": {"issues": []}} and parsed.thinking == ["<think>check</think>"]
    )
    assert [r["kind"] for r in parsed.repairs] == ["thinking_dropped", "fence", "trailing_comma"]


def test_policy_action_field_synonyms_are_recorded_as_repairs():
    """Repairs made while the actions are read (after the object itself) reach the parse result."""
    from runners.api import TaskView, ToolSpec

    p = PolicyProtocol()
    p.configure(TaskView(task_id="t", benchmark="rca", kind="rca", tools=[ToolSpec(name="query", description="d")]), 1)
    parsed = p.parse('{"thought": "t", "action": {"tool": "query", "args": {"q": 1}}}')
    assert parsed.ok and parsed.decision == Decision(
        tool_calls=[ToolCall(name="query", arguments={"q": 1}, id="call-0")], extras={"thought": "t"}
    )
    assert [(r["where"], r["detail"]) for r in parsed.repairs] == [
        ("tool call #0", "'tool' read as 'name'"),
        ("tool call #0", "'args' read as 'arguments'"),
    ]
