"""What garbage reads as (no decision, the exact errors) and render round-trips of every protocol the
baselines add."""

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
NASTY = [
    "",
    "   ",
    "garbage",
    "{",
    "[]",
    "[1, 2]",
    "null",
    "42",
    '"str"',
    '{"a": 1}',
    "```json\n{}\n```",
    "{" * 5000,
    '{"summary": 3, "detailed": null, "brief": [], "subgoal_met": "yes", "accepted": 1, "task_complete": 0}',
    '<tool_calls>[{"name": oops</tool_calls>',
    "<subgoal></subgoal>",
    "<step_status>nope</step_status>",
    None,
    17,
]


TYPED = json.loads(NASTY[12])
NOT_AN_OBJECT = [
    "garbage",
    "[]",
    "[1, 2]",
    "null",
    "42",
    '"str"',
    "<subgoal></subgoal>",
    "<step_status>nope</step_status>",
]


def aux_errors(cls, text) -> list[tuple[str, str]]:
    """What a JSON reply must record for each NASTY text."""
    if not isinstance(text, str) or not text.strip():
        return [("empty", "empty model output")]
    if text in NOT_AN_OBJECT:
        return [("bad_json", "no JSON object found in the reply")]
    if text in ('{"a": 1}', "```json\n{}\n```"):
        return [("bad_field", f"missing key '{k}'") for k in cls.fields]
    if text == NASTY[12]:  # every key of the right name and the wrong type
        return [
            ("bad_field", f"'{k}' must be {cls.hints[k]}") if k in TYPED else ("bad_field", f"missing key '{k}'")
            for k in cls.fields
        ]
    return [
        ("bad_json", "no JSON object found in the reply (…)")
    ]  # "{", "{" * 5000, a cut-off tool call: JSON that does not close


def short(detail: str) -> str:
    """An error detail with the JSON decoder's own message (in parentheses) left out."""
    return detail if " (" not in detail else detail[: detail.index(" (")] + " (…)"


@pytest.mark.parametrize("cls", AUX)
def test_aux_garbage_gives_no_reply_and_the_exact_errors_and_minimal_render_is_valid(cls):
    p = cls()
    for text in NASTY:
        parsed = p.parse(text)  # never raises
        assert parsed.decision == Decision(), text
        assert [(e.kind, short(e.detail)) for e in parsed.errors] == aux_errors(cls, text), text
        assert parsed.repairs == (
            [{"kind": "fence", "where": "reply", "detail": ""}] if str(text).startswith("```") else []
        ), text
    minimal = p.render(Decision(message=""))  # what the scripted backbone sends for a role with no reference
    parsed = p.parse(minimal)
    assert parsed.ok, parsed.errors
    assert parsed.decision.extras == {"json": p.minimal()} and set(p.minimal()) == set(cls.fields)


@pytest.mark.parametrize("cls", AUX)
def test_aux_wrong_types_are_errors_and_fallback_renders(cls):
    p = cls()
    bad = {k: (1 if t is not int else "x") for k, t in cls.fields.items()}
    wrong = p.parse(json.dumps(bad))
    assert wrong.decision == Decision() and wrong.blocks == {"json": bad}
    assert [(e.kind, e.detail) for e in wrong.errors] == [
        ("bad_field", f"'{k}' must be {cls.hints[k]}") for k in cls.fields
    ]
    good = p.minimal()
    p.fallback = lambda: good
    assert p.parse("prose before " + json.dumps(good) + " prose after").ok  # surrounding prose tolerated
    assert json.loads(p.render(Decision(message="not json"))) == good
    assert json.loads(p.render(Decision(extras={"json": good}))) == good


def test_bool_fields_reject_integers():
    one = AuditorReply().parse('{"accepted": 1, "evidence": "", "summary": ""}')
    assert one.decision == Decision() and [(e.kind, e.detail) for e in one.errors] == [
        ("bad_field", "'accepted' must be true or false")
    ]
    assert AuditorReply().parse('{"accepted": true, "evidence": "", "summary": "", "extra": 1}').ok


# The ReAct error kinds of each NASTY text (Raw's blocks underneath both policies).
REACT_KINDS = (
    [["empty"]] * 2 + [["malformed"]] * 11 + [["bad_json", "missing_block"]] + [["malformed"]] * 2 + [["empty"]] * 2
)


def test_policy_garbage_is_no_action_with_the_exact_errors():
    for text, react in zip(NASTY, REACT_KINDS, strict=True):
        sub = SubgoalProtocol().parse(text)
        assert sub.decision == Decision(), text  # no tool call, no message, no subgoal
        assert [e.kind for e in sub.errors] == react + ["missing_block"], text
        assert sub.errors[-1].detail.startswith("<subgoal> missing or not a non-empty string")
        ex = ExecutorProtocol().parse(text)
        assert ex.decision == Decision(), text  # no tool call, no message, no step_status claim
        if text == "<step_status>nope</step_status>":  # its own block is there, and not JSON
            assert [(e.kind, e.detail) for e in ex.errors] == [
                ("bad_json", "<step_status>: Expecting value: line 1 column 1 (char 0)"),
                ("bad_field", '<step_status> must be {"step_done": bool, "claim": str}'),
            ]
        else:  # the ReAct errors, as the subgoal policy records them before its own
            assert ex.errors == sub.errors[:-1], text


def test_subgoal_round_trip_and_missing_subgoal():
    p = SubgoalProtocol()
    d = Decision(tool_calls=[ToolCall(name="act", arguments={"command": "look"})], extras={"subgoal": "find the key"})
    parsed = p.parse(p.render(d))
    assert parsed.ok and parsed.decision.extras["subgoal"] == "find the key"
    assert parsed.decision.tool_calls[0].arguments == {"command": "look"}
    assert p.parse(p.render(Decision(message=""))).ok  # scripted minimal output has a default subgoal
    bare = p.parse('<tool_calls>[]</tool_calls><assistant_message>{"content": "hi"}</assistant_message>')
    assert bare.decision.message == "hi" and "subgoal" not in bare.decision.extras
    assert [(e.kind, e.detail) for e in bare.errors] == [
        ("missing_block", "<subgoal> missing or not a non-empty string: the current subgoal is kept")
    ]
    plain = p.parse(
        "<subgoal>open the drawer</subgoal><tool_calls>[]</tool_calls>"
        '<assistant_message>{"content": "x"}</assistant_message>'
    )
    assert plain.ok and plain.decision.extras["subgoal"] == "open the drawer"


def test_executor_claim_alone_is_valid():
    p = ExecutorProtocol()
    claim = p.parse('<step_status>{"step_done": true, "claim": "drawer open"}</step_status>')
    assert claim.ok and claim.decision.is_empty and claim.decision.extras == {"step_done": True, "claim": "drawer open"}
    d = Decision(
        tool_calls=[ToolCall(name="act", arguments={"command": "open drawer 1"})],
        extras={"step_done": True, "claim": "c"},
    )
    back = p.parse(p.render(d))
    assert back.ok and back.decision.extras["step_done"] is True and back.decision.tool_calls[0].name == "act"
    assert p.parse(p.render(Decision(message=""))).decision.extras["step_done"] is False
    bad = p.parse('<step_status>{"step_done": "yes"}</step_status>')
    assert not bad.ok and "step_done" not in bad.decision.extras
