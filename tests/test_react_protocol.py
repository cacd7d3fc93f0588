"""The ReAct protocol: total parse (property test), render → parse round trip, typed errors."""
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.react import ReactProtocol
from runners.api import Decision, Parsed, ToolCall

P = ReactProtocol()
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_parse_is_total_on_arbitrary_text(text):
    assert isinstance(P.parse(text), Parsed)


@settings(max_examples=200, deadline=None)
@given(json_values, json_values, st.sampled_from(["", "```json\n", "noise "]))
def test_parse_is_total_on_block_shaped_text(calls, message, prefix):
    import json
    text = f"{prefix}<tool_calls>{json.dumps(calls)}</tool_calls><assistant_message>{json.dumps(message)}</assistant_message>"
    assert isinstance(P.parse(text), Parsed)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=8), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)), max_size=3),
       st.none() | st.text(max_size=30))
def test_render_parse_round_trip(calls, message):
    d = Decision(tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls], message=None if calls else message)
    p = P.parse(P.render(d))
    assert [(c.name, c.arguments) for c in p.decision.tool_calls] == calls
    assert p.decision.message == d.message and p.ok


def test_typed_errors():
    assert P.parse("").errors[0].kind == "empty"
    assert P.parse("hello").errors[0].kind == "malformed"
    bad = P.parse('<tool_calls>[{"name": 3}]</tool_calls><assistant_message>{"content": "hi"}</assistant_message>')
    assert bad.decision.message == "hi" and bad.errors[0].kind == "bad_field"
    both = P.parse('<tool_calls>[{"name": "t", "arguments": {}}]</tool_calls><assistant_message>{"content": "x"}</assistant_message>')
    assert both.decision.message is None and both.errors[0].kind == "violation"
    assert both.decision.extras == {"dropped_message": "x"} and "\"x\"" in both.errors[0].detail
    args_str = P.parse('<tool_calls>[{"name": "t", "arguments": "{\\"a\\": 1}"}]</tool_calls><assistant_message>{"content": null}</assistant_message>')
    assert args_str.decision.tool_calls[0].arguments == {"a": 1}
    missing = P.parse('<assistant_message>{"content": "x"}</assistant_message>')
    assert missing.decision.message == "x" and missing.errors[0].kind == "missing_block"
