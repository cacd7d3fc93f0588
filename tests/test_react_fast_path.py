"""The ReAct protocol's fast path (`kit.react._as_written`): a reply written exactly as the protocol
asks is read without the tolerant reader's walk, and gives the very `Parsed` the walk gives; any
other reply is left to the walk. Checked on generated replies that mix the well-formed shape with
every habit the reader tolerates (thinking, prose, fences, repeated or missing blocks, synonyms,
backslashes, escapes, lone surrogates, plain-text messages, both calls and a message)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from kit import react
from kit.react import ReactProtocol


class _Walk(ReactProtocol):
    """The same protocol with the fast path off (its `parse_reading` is not ReactProtocol's own)."""

    def parse_reading(self, r):
        return super().parse_reading(r)


FAST, WALK = ReactProtocol(), _Walk()

text = st.text(
    st.characters(blacklist_categories=("Cs",)) | st.sampled_from(['"', "\\", "\n", "\t", "<", "`", "\ud800", "é"]),
    max_size=12,
)
latexy = st.sampled_from(["\\frac{1}{2}", "\\sqrt{x}", "a\\nb", "\\theta", "\\u00e9", '\\"q\\"', "\\\\", "\\x"])
scalar = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | text | latexy
value = st.recursive(scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3), max_leaves=8)
names = st.sampled_from(["reasoning", "search", "", "x"]) | text
call = st.one_of(
    st.fixed_dictionaries({"name": names, "arguments": st.dictionaries(text, value, max_size=3)}),
    st.fixed_dictionaries({"name": names}),
    st.fixed_dictionaries({"name": names, "arguments": value}),
    st.fixed_dictionaries({"tool": names, "args": st.dictionaries(text, value, max_size=2)}),
    st.fixed_dictionaries({"function": st.fixed_dictionaries({"name": names, "arguments": st.just("{}")})}),
    st.fixed_dictionaries({"name": names, "arguments": st.dictionaries(text, value, max_size=2), "id": text}),
    value,
)
calls = st.lists(call, max_size=3) | value
message = st.one_of(
    st.fixed_dictionaries({"content": st.none() | text | latexy}),
    st.just({}),
    st.fixed_dictionaries({"content": value}),
    st.fixed_dictionaries({"text": text}),
    st.fixed_dictionaries({"content": text, "extra": value}),
    value,
)
space = st.sampled_from(["", "\n", " ", "\n\n", "\t \n"])
noise = st.sampled_from(["", "", "", "Sure.", "<think>plan</think>", "</think>", "```", "<tool_calls>", "<b>"])


def _dumps(v, ascii_only: bool) -> str:
    try:
        return json.dumps(v, ensure_ascii=ascii_only)
    except ValueError:
        return json.dumps(str(v))


good_call = st.fixed_dictionaries({"name": names, "arguments": st.dictionaries(text, value, max_size=3)})
good_message = st.fixed_dictionaries({"content": st.none() | text | latexy})


@st.composite
def replies(draw) -> str:
    """Half of them written as asked (which the fast path may still refuse: a backslash, a surrogate,
    an empty name), half with any of the habits."""
    ascii_only = draw(st.booleans())
    if draw(st.booleans()):  # as asked
        c = _dumps(draw(st.lists(good_call, max_size=2)), ascii_only)
        m_src = _dumps(draw(good_message), ascii_only)
        return "".join(
            [draw(space), "<tool_calls>", draw(space), c, draw(space), "</tool_calls>", draw(space)]
            + ["<assistant_message>", draw(space), m_src, draw(space), "</assistant_message>", draw(space)]
        )
    c = _dumps(draw(calls), ascii_only)
    m = draw(st.sampled_from(["json", "json", "plain", "null"]))
    m_src = {"json": _dumps(draw(message), ascii_only), "plain": draw(text), "null": "null"}[m]
    if draw(st.booleans()):
        c = draw(st.sampled_from(["```json\n", "", ""])) + c + draw(st.sampled_from(["\n```", "", ""]))
    parts = [
        draw(noise),
        draw(space),
        "<tool_calls>",
        draw(space),
        c,
        draw(space),
        "</tool_calls>",
        draw(space),
        draw(noise),
        "<assistant_message>",
        draw(space),
        m_src,
        draw(space),
        "</assistant_message>",
        draw(space),
        draw(noise),
    ]
    if draw(st.integers(0, 9)) == 0:  # a cut: a block left open, or a draft set repeated
        parts = parts[: draw(st.integers(1, len(parts)))] if draw(st.booleans()) else parts + parts
    return "".join(parts)


def _same(a, b) -> None:
    assert a.model_dump() == b.model_dump()
    assert a.__pydantic_fields_set__ == b.__pydantic_fields_set__
    assert a.decision.__pydantic_fields_set__ == b.decision.__pydantic_fields_set__
    assert [c.__pydantic_fields_set__ for c in a.decision.tool_calls] == [
        c.__pydantic_fields_set__ for c in b.decision.tool_calls
    ]


@settings(max_examples=800, deadline=None)
@given(replies())
def test_the_fast_path_reads_what_the_walk_reads_or_leaves_the_reply_to_it(reply):
    walked = WALK.parse(reply)
    got = react._as_written(reply)
    if got is not None:
        _same(got, walked)
        assert walked.repairs == [] and walked.errors == []  # only replies the walk needs nothing for
    _same(FAST.parse(reply), walked)


def test_the_fast_path_takes_replies_written_as_asked():
    q = 'Find x when 3x + 1 = 10\nand say "why".'
    as_asked = [
        "<tool_calls>\n" + json.dumps([{"name": "reasoning", "arguments": {"input": q}}]) + "\n</tool_calls>\n"
        '<assistant_message>\n{"content": null}\n</assistant_message>',
        '<tool_calls>\n[]\n</tool_calls>\n<assistant_message>\n{"content": "The result is 3."}\n</assistant_message>',
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "é \\u00e9"}</assistant_message>'.replace(
            " \\u00e9", ""
        ),
        '  <tool_calls>[{"name": "a"}]</tool_calls>\n\n<assistant_message>{}</assistant_message>\n',
    ]
    for reply in as_asked:
        got = react._as_written(reply)
        assert got is not None, reply
        _same(got, WALK.parse(reply))
    assert react._as_written(as_asked[0]).decision.tool_calls[0].arguments == {"input": q}


def test_replies_the_reader_repairs_or_notes_take_the_walk():
    repaired = [
        '<think>x</think><tool_calls>[]</tool_calls><assistant_message>{"content": "a"}</assistant_message>',
        'Sure: <tool_calls>[]</tool_calls><assistant_message>{"content": "a"}</assistant_message>',
        '<tool_calls>```json\n[]\n```</tool_calls><assistant_message>{"content": "a"}</assistant_message>',
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "\\frac{1}{2}"}</assistant_message>',
        "<tool_calls>[]</tool_calls><assistant_message>The answer is 2</assistant_message>",
        '<tool_calls>[{"tool": "a", "args": {}}]</tool_calls><assistant_message>{}</assistant_message>',
        '<tool_calls>[{"name": "a"}]</tool_calls><assistant_message>{"content": "both"}</assistant_message>',
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "\\ud800"}</assistant_message>',
        '<tool_calls>[],</tool_calls><assistant_message>{"content": "a"}</assistant_message>',
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "a\ud800b"}</assistant_message>',  # a raw one
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "\\x"}</assistant_message>',
        '<tool_calls>[{"name": "a", "params": {"k": 1}}]</tool_calls><assistant_message>{}</assistant_message>',
        '<tool_calls>[{"name": "a"}]</tool_calls><assistant_message>{"text": "hi"}</assistant_message>',
    ]
    for reply in repaired:
        assert react._as_written(reply) is None, reply
        walked = WALK.parse(reply)
        assert walked.repairs or walked.errors, reply
        _same(FAST.parse(reply), walked)


def test_replies_the_walk_reads_otherwise_take_the_walk():
    """Replies the fast path's own reading would get wrong (or could not build): a closing think tag
    inside a string (the reader drops everything before it), a tag of the protocol inside a block
    (the reader's blocks then differ), arguments that are not an object (a JSON string is read as
    JSON; anything else is an error), a message content that is no string (the reader writes it as
    JSON)."""
    tc, am = "<tool_calls>{}</tool_calls>", "<assistant_message>{}</assistant_message>"
    others = [
        tc.format("[]") + am.format('{"content": "a </think> b"}'),
        tc.format('[{"name": "a", "arguments": {"x": "<assistant_message>"}}]') + am.format("{}"),
        tc.format("[]") + am.format('{"content": "see <tool_calls>[]</tool_calls>"}'),
        tc.format("[]") + am.format('{"content": "</assistant_message> x"}'),
        tc.format('[{"name": "a", "arguments": [1]}]') + am.format("{}"),
        tc.format('[{"name": "a", "arguments": "{\\"k\\": 1}"}]') + am.format("{}"),
        tc.format('[{"name": "a", "arguments": null}]') + am.format("{}"),
        tc.format("[]") + am.format('{"content": 5}'),
        tc.format("[]") + am.format('{"content": ["a", {"b": 1}]}'),
        tc.format('{"name": "a"}') + am.format("{}"),
        tc.format("null") + am.format("{}"),
        tc.format("5") + am.format("{}"),
    ]
    for reply in others:
        assert react._as_written(reply) is None, reply
        _same(FAST.parse(reply), WALK.parse(reply))
    assert WALK.parse(others[5]).decision.tool_calls[0].arguments == {"k": 1}  # what the fast path could not say
    assert WALK.parse(others[7]).decision.message == "5"
