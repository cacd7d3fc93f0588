"""The four-block protocol (spec §2.2): total parse, typed errors, render → parse round-trip."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from flowstate.protocol import FlowStateProtocol
from runners.api import Decision, ToolCall

P = FlowStateProtocol()
VARIANTS = [FlowStateProtocol(), FlowStateProtocol(with_focus=False), FlowStateProtocol(with_delta=False)]
TAGS = ["<state_focus>", "</state_focus>", "<state_delta>", "</state_delta>", "<tool_calls>", "</tool_calls>",
        "<assistant_message>", "</assistant_message>", "{", "}", "[", "]", '"', ":", ",", "null", "```json", "```"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(TAGS), st.text(max_size=20)), max_size=30))
def test_parse_is_total(pieces):
    for p in VARIANTS:
        out = p.parse("".join(pieces))
        assert out.decision is not None and all(e.kind for e in out.errors)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_is_total_on_any_text(text):
    P.parse(text)


def test_typed_errors():
    assert P.parse("").errors[0].kind == "empty"
    assert P.parse("hello").errors[0].kind == "malformed"
    out = P.parse('<state_focus>oops</state_focus><tool_calls>[]</tool_calls><assistant_message>{"content": "hi"}</assistant_message>')
    kinds = {e.kind for e in out.errors}
    assert {"bad_json", "missing_block"} <= kinds and out.decision.message == "hi"
    out = P.parse('<state_focus>[]</state_focus><state_delta>[3]</state_delta><tool_calls>[{"name": "t", "arguments": {}}]</tool_calls><assistant_message>{"content": "x"}</assistant_message>')
    assert out.decision.message is None and len(out.decision.tool_calls) == 1
    assert {"violation", "bad_field"} <= {e.kind for e in out.errors}
    # spec §2.2: the dropped message is logged with the violation, not lost
    assert [e.detail for e in out.errors if e.kind == "violation"][0].endswith('dropped: "x"')


def test_nonempty_rule():
    empty = P.parse(P.render(Decision(extras={"state_focus": [], "state_delta": []})))
    assert not FlowStateProtocol.nonempty(empty)
    # spec §2.2: all-empty output is a typed protocol error (kept in the log when the step ends a no-op)
    assert [e.kind for e in empty.errors] == ["empty"]
    for variant in VARIANTS[1:]:
        assert [e.kind for e in variant.parse(variant.render(Decision(extras={"state_focus": [], "state_delta": []}))).errors] == ["empty"]
    focus_only = P.parse(P.render(Decision(extras={"state_focus": [{"target_id": "a", "reason": "r"}], "state_delta": []})))
    assert FlowStateProtocol.nonempty(focus_only) and focus_only.decision.is_empty


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8)
ids = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12).map(str.strip).filter(bool)
refs = st.lists(st.fixed_dictionaries({"rel": st.sampled_from(["supports", "derives", "follows", "supersedes"]), "state_id": ids}), max_size=3)
add_op = st.fixed_dictionaries({"state_set": st.sampled_from(["knowledge", "judgements", "preferences"]), "operation": st.just("add"),
                                "state_id": ids, "summary": st.text(max_size=20), "value": json_values, "refs": refs})
upd_op = st.fixed_dictionaries({"operation": st.just("update"), "state_id": ids}, optional={"summary": st.text(max_size=10), "value": json_values})
rem_op = st.fixed_dictionaries({"operation": st.just("remove"), "state_id": ids})
focus = st.lists(st.fixed_dictionaries({"target_id": ids, "reason": st.text(max_size=20)}), max_size=3)
calls = st.lists(st.builds(lambda n, a: (n, a), st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.dictionaries(st.text(max_size=5), json_values, max_size=3)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(focus, st.lists(st.one_of(add_op, upd_op, rem_op), max_size=4), calls, st.one_of(st.none(), st.text(max_size=40)))
def test_render_parse_round_trip(f, delta, cs, msg):
    if cs:
        msg = None  # a decision is tool calls or a message, never both
    d = Decision(tool_calls=[ToolCall(name=n, arguments=a, id=f"call-{i}") for i, (n, a) in enumerate(cs)], message=msg,
                 extras={"state_focus": f, "state_delta": delta})
    assert P.parse(P.render(d)).decision == d
    # ok unless the step is all-empty, which eq. 3 forbids and the parse records as a typed error
    assert P.parse(P.render(d)).ok == bool(f or delta or cs or msg is not None)


def test_scripted_render_adds_unique_decision_node():
    p = FlowStateProtocol()
    d = Decision(message="S_n = (1 - r^n)/(1 - r)")
    p.context = {"salt": "q1:1", "raw_ids": ["obs-1-1-0"]}
    a = p.parse(p.render(d)).decision.extras["state_delta"]
    p.context = {"salt": "q1:2", "raw_ids": []}
    b = p.parse(p.render(d)).decision.extras["state_delta"]
    assert a[0]["value"] == {"final_answer": d.message} and a[0]["refs"] == [{"rel": "derives", "state_id": "obs-1-1-0"}]
    assert a[0]["state_id"] != b[0]["state_id"]
    no_isu = FlowStateProtocol(with_delta=False)
    text = no_isu.render(d)
    assert "state_delta" not in text and json.loads(text.split("<assistant_message>")[1].split("</assistant_message>")[0]) == {"content": d.message}
