"""Parse totality and render round-trips of every protocol the baselines add."""
import json

import pytest

from baselines.pos_baselines.protocols import (
    AuditorReply,
    ChunkSummaryReply,
    ExecutorProtocol,
    ManagerReply,
    SubgoalProtocol,
    SubgoalSummaryReply,
    SummaryReply,
)
from runners.api import Decision, ToolCall

AUX = [SummaryReply, ChunkSummaryReply, SubgoalSummaryReply, ManagerReply, AuditorReply]
NASTY = ["", "   ", "garbage", "{", "[]", "[1, 2]", "null", "42", '"str"', '{"a": 1}', "```json\n{}\n```", "{" * 5000,
         '{"summary": 3, "detailed": null, "brief": [], "subgoal_met": "yes", "accepted": 1, "task_complete": 0}',
         "<tool_calls>[{\"name\": oops</tool_calls>", "<subgoal></subgoal>", "<step_status>nope</step_status>", None, 17]


@pytest.mark.parametrize("cls", AUX)
def test_aux_parse_is_total_and_minimal_render_is_valid(cls):
    p = cls()
    for text in NASTY:
        parsed = p.parse(text)  # never raises
        assert not parsed.ok and parsed.decision.extras == {}
    minimal = p.render(Decision(message=""))  # what the scripted backbone sends for a role with no reference
    parsed = p.parse(minimal)
    assert parsed.ok, parsed.errors
    assert set(parsed.decision.extras["json"]) == set(cls.fields)


@pytest.mark.parametrize("cls", AUX)
def test_aux_wrong_types_are_errors_and_fallback_renders(cls):
    p = cls()
    bad = {k: (1 if t is not int else "x") for k, t in cls.fields.items()}
    assert not p.parse(json.dumps(bad)).ok
    good = p.minimal()
    p.fallback = lambda: good
    assert p.parse("prose before " + json.dumps(good) + " prose after").ok  # surrounding prose tolerated
    assert json.loads(p.render(Decision(message="not json"))) == good
    assert json.loads(p.render(Decision(extras={"json": good}))) == good


def test_bool_fields_reject_integers():
    assert not AuditorReply().parse('{"accepted": 1, "evidence": "", "summary": ""}').ok
    assert AuditorReply().parse('{"accepted": true, "evidence": "", "summary": "", "extra": 1}').ok


@pytest.mark.parametrize("cls", [SubgoalProtocol, ExecutorProtocol])
def test_policy_parse_is_total(cls):
    for text in NASTY:
        cls().parse(text)


def test_subgoal_round_trip_and_missing_subgoal():
    p = SubgoalProtocol()
    d = Decision(tool_calls=[ToolCall(name="act", arguments={"command": "look"})], extras={"subgoal": "find the key"})
    parsed = p.parse(p.render(d))
    assert parsed.ok and parsed.decision.extras["subgoal"] == "find the key"
    assert parsed.decision.tool_calls[0].arguments == {"command": "look"}
    assert p.parse(p.render(Decision(message=""))).ok  # scripted minimal output has a default subgoal
    bare = p.parse('<tool_calls>[]</tool_calls><assistant_message>{"content": "hi"}</assistant_message>')
    assert bare.decision.message == "hi" and "subgoal" not in bare.decision.extras
    assert any(e.kind == "missing_block" for e in bare.errors)
    plain = p.parse('<subgoal>open the drawer</subgoal><tool_calls>[]</tool_calls><assistant_message>{"content": "x"}</assistant_message>')
    assert plain.ok and plain.decision.extras["subgoal"] == "open the drawer"


def test_executor_claim_alone_is_valid():
    p = ExecutorProtocol()
    claim = p.parse('<step_status>{"step_done": true, "claim": "drawer open"}</step_status>')
    assert claim.ok and claim.decision.is_empty and claim.decision.extras == {"step_done": True, "claim": "drawer open"}
    d = Decision(tool_calls=[ToolCall(name="act", arguments={"command": "open drawer 1"})], extras={"step_done": True, "claim": "c"})
    back = p.parse(p.render(d))
    assert back.ok and back.decision.extras["step_done"] is True and back.decision.tool_calls[0].name == "act"
    assert p.parse(p.render(Decision(message=""))).decision.extras["step_done"] is False
    bad = p.parse('<step_status>{"step_done": "yes"}</step_status>')
    assert not bad.ok and "step_done" not in bad.decision.extras
