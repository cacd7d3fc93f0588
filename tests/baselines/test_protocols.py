"""The state/memory protocols of the baselines: what garbage reads as (no decision, typed errors),
render → parse round-trips, and
render(Decision(message="")) — what the scripted backbone sends when the environment has no
opinion for roles state/memory — is a valid minimal output."""

import json

import pytest

from baselines.mem0_method import Mem0JsonProtocol
from baselines.reasoningbank import ExtractProtocol, JudgeProtocol
from baselines.zipact import StateProtocol, ZipAct, ZipActProtocol
from runners.api import Decision, ToolCall
from tests.baselines.helpers import Recorder

GARBAGE = [
    "",
    "   ",
    "<thought>",
    "<state>{</state>",
    "<tool_calls>[{]</tool_calls>",
    "\x00\xff",
    "```json\n{,}\n```",
    "<thought>1</thought><tool_calls>5</tool_calls><assistant_message>[]</assistant_message>",
    "{" * 5000,
    None,
]


def owner():
    m = ZipAct(Recorder())
    m.state = {"goal_state": {"current_objective": "x"}}
    return m


def kinds(parsed) -> list[str]:
    return [e.kind for e in parsed.errors]


# Per GARBAGE item: the error kinds the ZipAct actor records ("missing_block" after "malformed" is
# the missing <thought>); single_call adds what it finds wrong with <state>. No garbage ever
# becomes a tool call or a message.
ACTOR_KINDS = [
    ["empty"],
    ["empty"],
    ["malformed"],
    ["malformed", "missing_block"],
    ["bad_json", "missing_block", "missing_block"],
    ["malformed", "missing_block"],
    ["malformed", "missing_block"],
    ["bad_field", "bad_field"],
    ["malformed", "missing_block"],
    ["empty"],
]
SINGLE_EXTRA = [
    [],
    [],
    ["missing_block"],
    ["bad_json"],
    ["missing_block"],
    ["missing_block"],
    ["missing_block"],
    ["missing_block"],
    ["missing_block"],
    [],
]


@pytest.mark.parametrize("single_call", [False, True])
def test_zipact_actor_reads_garbage_as_no_decision_with_typed_errors(single_call):
    m = owner()
    p = ZipActProtocol(m, single_call=single_call)
    for text, want, extra in zip(GARBAGE, ACTOR_KINDS, SINGLE_EXTRA):
        got = p.parse(text)
        assert got.decision.tool_calls == [] and got.decision.message is None, text
        assert kinds(got) == want + (extra if single_call else []), text
        assert got.decision.extras == (
            {} if want == ["empty"] else {"thought": "1" if text.startswith("<thought>1") else None}
        )
    assert [(e.kind, e.detail) for e in p.parse(GARBAGE[7]).errors][:2] == [
        ("bad_field", "<tool_calls> must be a JSON list"),
        ("bad_field", '<assistant_message> must be {"content": string|null}'),
    ]
    assert m.state == {"goal_state": {"current_objective": "x"}}  # parsing never touches the owner's state


def test_zipact_state_reply_garbage_is_an_error_and_no_state():
    p = StateProtocol(owner())
    for text in GARBAGE:
        got = p.parse(text)
        if (
            text == "```json\n{,}\n```"
        ):  # fenced JSON with a trailing comma: the (empty) object is read, repairs recorded
            assert (
                got.ok
                and got.blocks == {"state": {}}
                and [r["kind"] for r in got.repairs] == ["fence", "trailing_comma"]
            )
            continue
        empty = not (text or "").strip()
        assert got.blocks == {"state": None} and got.decision == Decision(), text
        assert kinds(got) == ["bad_json"] and got.errors[0].detail.startswith(
            "empty state output" if empty else "state is not JSON: "
        ), text


def test_reasoningbank_and_mem0_replies_keep_the_text_and_flag_only_what_is_unusable():
    for text in GARBAGE:
        raw = text if isinstance(text, str) else ""
        blank = not raw.strip()
        judge = JudgeProtocol().parse(text)
        assert judge.decision == Decision(message=raw) and judge.blocks == {
            "success": False
        }  # no "success" in any of them
        assert [(e.kind, e.detail) for e in judge.errors] == (
            [("empty", "empty judge reply (read as fail)")] if blank else []
        )
        extract = ExtractProtocol().parse(text)
        assert extract.blocks == {"items": [] if blank else [raw.strip()]}  # no blank line in any of them: one item
        assert [(e.kind, e.detail) for e in extract.errors] == (
            [("empty", "no memory items extracted")] if blank else []
        )
        mem0 = Mem0JsonProtocol().parse(text)  # mem0 reads the JSON itself: the text goes through unchanged
        assert mem0.decision == Decision(message=raw) and kinds(mem0) == ["bad_json"], text
    assert Mem0JsonProtocol().parse('{"facts": []}').errors == []


@pytest.mark.parametrize("single_call", [False, True])
def test_zipact_render_parse_round_trip(single_call):
    m = owner()
    p = ZipActProtocol(m, single_call=single_call)
    d = Decision(tool_calls=[ToolCall(name="reasoning", arguments={"input": "x"})], extras={"thought": "need the sum"})
    parsed = p.parse(p.render(d))
    assert parsed.ok and parsed.decision.tool_calls[0].arguments == {"input": "x"}
    assert parsed.blocks["thought"] == "need the sum"
    if single_call:
        assert parsed.blocks["state"] == m.state
    minimal = p.parse(p.render(Decision(message="")))
    assert minimal.ok and minimal.decision.message == ""


def test_minimal_renders_are_valid():
    m = owner()
    assert StateProtocol(m).parse(StateProtocol(m).render(Decision(message=""))).blocks["state"] == m.state
    assert JudgeProtocol().parse(JudgeProtocol().render(Decision(message=""))).blocks["success"] is False
    assert ExtractProtocol().parse(ExtractProtocol().render(Decision(message=""))).blocks["items"] == []
    assert json.loads(Mem0JsonProtocol().render(Decision(message=""))) == {"facts": [], "memory": []}
