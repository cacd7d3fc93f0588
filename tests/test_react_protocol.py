"""The ReAct protocol: the exact decision, errors and repairs of each kind of reply (property tests
with an oracle, and a table), render → parse round trip."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.react import ReactProtocol
from runners.api import Decision, ToolCall

P = ReactProtocol()
# Text with no tag, backslash, fence or quote in it, so the expected reading is plain to compute.
words = st.text(st.characters(whitelist_categories=("L", "N", "Zs"), whitelist_characters=".,:;!?'()-"), max_size=10)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | words,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(words, c, max_size=3),
    max_leaves=10,
)
names = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)
args = st.dictionaries(words, json_values, max_size=3)


def errors(parsed) -> list[tuple[str, str]]:
    return [(e.kind, e.detail) for e in parsed.errors]


def repairs(parsed) -> list[tuple[str, str, str]]:
    return [(r["kind"], r["where"], r["detail"]) for r in parsed.repairs]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400).filter(lambda t: "<" not in t))
def test_text_without_blocks_decides_nothing(text):
    got = P.parse(text)
    assert got.decision == Decision() and got.blocks == {} and got.repairs == []
    assert errors(got) == [
        ("empty", "empty model output") if not text.strip() else ("malformed", "no protocol block found")
    ]


# One <tool_calls> item: (JSON written, the call it must become or None, the error it must record).
# `{i}` in an error is the item's index.
def _item(kind: str, name: str, a: dict) -> tuple[object, tuple[str, dict] | None, str | None]:
    return {
        "call": ({"name": name, "arguments": a}, (name, a), None),
        "string_args": ({"name": name, "arguments": json.dumps(a)}, (name, a), None),
        "null_args": ({"name": name, "arguments": None}, (name, {}), None),
        "no_args": ({"name": name}, (name, {}), None),
        "int_name": ({"name": 3, "arguments": a}, None, "tool call #{i} needs a string 'name'"),
        "empty_name": ({"name": "", "arguments": a}, None, "tool call #{i} needs a string 'name'"),
        "not_an_object": (7, None, "tool call #{i} needs a string 'name'"),
        "list_args": ({"name": name, "arguments": [1]}, None, "tool call #{i} arguments must be an object"),
        "bad_string_args": ({"name": name, "arguments": "[1"}, None, "tool call #{i} arguments are not JSON"),
    }[kind]


items = st.builds(
    _item,
    st.sampled_from(
        [
            "call",
            "string_args",
            "null_args",
            "no_args",
            "int_name",
            "empty_name",
            "not_an_object",
            "list_args",
            "bad_string_args",
        ]
    ),
    names,
    args,
)
# The <tool_calls> block: (JSON written, [(name, args, id)], errors).
tool_blocks = st.one_of(
    st.lists(items, max_size=4).map(
        lambda its: (
            [w for w, _, _ in its],
            [(c[0], c[1], f"call-{i}") for i, (_, c, _) in enumerate(its) if c is not None],
            [("bad_field", e.format(i=i)) for i, (_, _, e) in enumerate(its) if e is not None],
        )
    ),
    st.builds(
        lambda n, a: ({"name": n, "arguments": a}, [(n, a, "call-0")], []), names, args
    ),  # one object, not a list
    st.just((None, [], [])),
    st.sampled_from([5, "search", True]).map(lambda v: (v, [], [("bad_field", "<tool_calls> must be a JSON list")])),
)
plain = words.map(str.strip).filter(lambda s: s and s not in ("null", "None") and s[0] not in '{["')
# The <assistant_message> block: (raw block text, message or None, errors, repairs).
message_blocks = st.one_of(
    words.map(lambda s: (json.dumps({"content": s}), s, [], [])),
    st.just((json.dumps({"content": None}), None, [], [])),
    st.just((json.dumps({"content": 3}), "3", [], [])),
    words.map(lambda s: (json.dumps(s), s, [], [])),
    words.map(
        lambda s: (
            json.dumps({"text": s}),
            s,
            [],
            [("field_synonym", "<assistant_message>", "'text' read as 'content'")],
        )
    ),
    plain.map(
        lambda s: (s, s, [], [("plain_text_message", "<assistant_message>", "plain text read as the message content")])
    ),
    st.just(("[1]", None, [("bad_field", '<assistant_message> must be {"content": string|null}')], [])),
)


@settings(max_examples=300, deadline=None)
@given(tool_blocks, message_blocks, st.sampled_from(["", "noise ", "```json\n"]))
def test_block_shaped_replies_give_the_exact_decision_errors_and_repairs(tools, message, prefix):
    written, want_calls, want_errors = tools
    raw_message, want_message, message_errors, message_repairs = message
    got = P.parse(
        f"{prefix}<tool_calls>{json.dumps(written)}</tool_calls>\n<assistant_message>{raw_message}</assistant_message>"
    )
    want_errors = want_errors + message_errors
    extras = {}
    if want_calls and want_message is not None:  # a step is tool calls or a message; the message is dropped and logged
        want_errors.append(
            (
                "violation",
                "tool calls and a message in one step: the message was dropped: "
                + json.dumps(want_message, ensure_ascii=False),
            )
        )
        want_message, extras = None, {"dropped_message": want_message}
    assert [(c.name, c.arguments, c.id) for c in got.decision.tool_calls] == want_calls
    assert got.decision.message == want_message and got.decision.extras == extras
    assert errors(got) == want_errors
    prose = [("prose_around", "blocks", f"{len(prefix.strip())} chars outside the blocks ignored")] if prefix else []
    assert repairs(got) == prose + message_repairs


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=8), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3)),
        max_size=3,
    ),
    st.none() | st.text(max_size=30),
)
def test_render_parse_round_trip(calls, message):
    d = Decision(tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls], message=None if calls else message)
    p = P.parse(P.render(d))
    assert [(c.name, c.arguments) for c in p.decision.tool_calls] == calls
    assert p.decision.message == d.message and p.ok


NO_NAME = ("bad_field", "tool call #0 needs a string 'name'")


@pytest.mark.parametrize(
    "text, calls, message, extras, errs, reps",
    [
        ("", [], None, {}, [("empty", "empty model output")], []),
        (
            "<think>hm</think>  ",
            [],
            None,
            {},
            [("empty", "empty model output (thinking only)")],
            [("thinking_dropped", "", "17 chars")],
        ),
        ("hello", [], None, {}, [("malformed", "no protocol block found")], []),
        (
            '<tool_calls>[{"name": 3}]</tool_calls><assistant_message>{"content": "hi"}</assistant_message>',
            [],
            "hi",
            {},
            [NO_NAME],
            [],
        ),
        (
            (
                '<tool_calls>[{"name": "t", "arguments": {}}]</tool_calls>'
                '<assistant_message>{"content": "x"}</assistant_message>'
            ),
            [("t", {})],
            None,
            {"dropped_message": "x"},
            [("violation", 'tool calls and a message in one step: the message was dropped: "x"')],
            [],
        ),
        (
            (
                '<tool_calls>[{"name": "t", "arguments": "{\\"a\\": 1}"}]</tool_calls>'
                '<assistant_message>{"content": null}</assistant_message>'
            ),
            [("t", {"a": 1})],
            None,
            {},
            [],
            [],
        ),
        (
            '<assistant_message>{"content": "x"}</assistant_message>',
            [],
            "x",
            {},
            [("missing_block", "<tool_calls> missing")],
            [],
        ),
        (
            '<tool_calls>[{"name": "t"}]</tool_calls>',
            [("t", {})],
            None,
            {},
            [("missing_block", "<assistant_message> missing")],
            [],
        ),
        (
            '<tool_calls>not json</tool_calls><assistant_message>{"content": null}</assistant_message>',
            [],
            None,
            {},
            [("bad_json", "<tool_calls>: Expecting value: line 1 column 1 (char 0)")],
            [],
        ),
        (
            (
                '<tool_calls>[{"tool": "t", "args": {"q": 1}}]</tool_calls>'
                '<assistant_message>{"content": null}</assistant_message>'
            ),
            [("t", {"q": 1})],
            None,
            {},
            [],
            [
                ("field_synonym", "tool call #0", "'tool' read as 'name'"),
                ("field_synonym", "tool call #0", "'args' read as 'arguments'"),
            ],
        ),
    ],
)
def test_typed_errors_and_repairs(text, calls, message, extras, errs, reps):
    got = P.parse(text)
    assert [(c.name, c.arguments) for c in got.decision.tool_calls] == calls
    assert got.decision.message == message and got.decision.extras == extras
    assert errors(got) == errs and repairs(got) == reps


@pytest.mark.parametrize(
    "text",
    [
        "",
        "<think>plan</think>",
        "no blocks",
        '<think>x</think><tool_calls>[{"name": "f", "arguments": {}}]</tool_calls>'
        "<assistant_message>hi</assistant_message>",
        '```\n<tool_calls>[]</tool_calls>\n<assistant_message>{"content": "a",}</assistant_message>\n```',
    ],
)
def test_parse_is_the_reading_with_its_repairs_and_thinking(text):
    """`parse` fills the reading's repairs and thinking into the `Parsed` in place: the same value,
    and the same fields marked set, as a copy with those fields updated."""
    from kit.reader import read

    got = P.parse(text)
    r = read(text)
    want = P.parse_reading(r).model_copy(update=r.parsed_fields)
    assert got == want and got.model_fields_set == want.model_fields_set
    assert got.model_dump_json() == want.model_dump_json()
