"""The state/memory protocols of the baselines: parse is total, render → parse round-trips, and
render(Decision(message="")) — what the scripted backbone sends when the environment has no
opinion for roles state/memory — is a valid minimal output."""
import json

import pytest

from baselines.mem0_method import Mem0JsonProtocol
from baselines.reasoningbank import ExtractProtocol, JudgeProtocol
from baselines.zipact import StateProtocol, ZipAct, ZipActProtocol
from runners.api import Decision, ToolCall
from tests.baselines.helpers import Recorder

GARBAGE = ["", "   ", "<thought>", "<state>{</state>", "<tool_calls>[{]</tool_calls>", "\x00\xff", "```json\n{,}\n```",
           "<thought>1</thought><tool_calls>5</tool_calls><assistant_message>[]</assistant_message>", "{" * 5000, None]


def owner():
    m = ZipAct(Recorder())
    m.state = {"goal_state": {"current_objective": "x"}}
    return m


@pytest.mark.parametrize("make", [lambda: ZipActProtocol(owner()), lambda: ZipActProtocol(owner(), single_call=True),
                                  lambda: StateProtocol(owner()), JudgeProtocol, ExtractProtocol, Mem0JsonProtocol])
def test_parse_is_total(make):
    p = make()
    for text in GARBAGE:
        parsed = p.parse(text)
        assert parsed is not None


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
