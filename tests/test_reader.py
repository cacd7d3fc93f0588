"""The shared tolerant reader (kit.reader) on each habit of the catalogue (runners.backbones.habits),
the LaTeX backslash rule, and what it must never do (invent a tool call, complete a cut-off reply)."""

import json
import random
import re
from pathlib import Path

import pytest

from benchmarks.memoryarena.judge import verdict
from flowstate.protocol import FlowStateProtocol
from kit import reader
from kit.blocks import load_object
from kit.react import ReactProtocol
from pos.protocols import DeltaProtocol
from runners.api import Decision, ToolCall
from runners.backbones.habits import HABITS

LATEX = [
    a
    for line in (Path(__file__).resolve().parents[1] / "scripts/robustness/latex_math.jsonl").read_text().splitlines()
    for a in json.loads(line)["answers"]
]
CALL = Decision(
    tool_calls=[
        ToolCall(name="search", arguments={"query": "line one\nline two", "k": 2, "exact": True, "filter": None})
    ]
)
ANSWER = Decision(message="\\frac{1}{2} and \\sqrt{\\pi}")
DELTA = Decision(
    message=None,
    tool_calls=CALL.tool_calls,
    extras={
        "state_focus": [{"target_id": "s1", "reason": "need it"}],
        "state_delta": [
            {
                "state_set": "judgements",
                "operation": "add",
                "state_id": "j1",
                "summary": "a\nb",
                "value": {"ok": True, "x": None},
                "refs": [],
            }
        ],
    },
)


def apply(habit: str, text: str, role: str = "agent", protocol: str = "react", seed: int = 0) -> str:
    return HABITS[habit](text, role=role, protocol=protocol, rng=random.Random(seed))


def same(a, b) -> bool:
    calls = lambda d: [(c.name, c.arguments) for c in d.tool_calls]  # noqa: E731
    return (
        calls(a) == calls(b)
        and a.message == b.message
        and {k: v for k, v in a.extras.items() if k != "dropped_message"}
        == {k: v for k, v in b.extras.items() if k != "dropped_message"}
    )


@pytest.mark.parametrize("habit", sorted(HABITS))
@pytest.mark.parametrize("decision", [CALL, ANSWER], ids=["call", "answer"])
def test_react_reads_every_habit(habit, decision):
    p = ReactProtocol()
    text = apply(habit, p.render(decision))
    got = p.parse(text)
    assert same(got.decision, decision), (habit, text, got)
    assert not [e for e in got.errors if e.kind != "violation"], got.errors
    inert = {"pretty_json"} | (
        {"latex_backslashes", "plain_message"} if decision is CALL else set()
    )  # nothing to repair
    if text != p.render(decision) and habit not in inert:
        assert got.repairs, f"{habit}: the text changed but no repair was recorded"


@pytest.mark.parametrize("habit", sorted(HABITS))
def test_flowstate_reads_every_habit(habit):
    p = FlowStateProtocol()
    text = apply(habit, p.render(DELTA), protocol="flowstate")
    got = p.parse(text)
    assert [(c.name, c.arguments) for c in got.decision.tool_calls] == [
        (c.name, c.arguments) for c in DELTA.tool_calls
    ] and got.decision.extras["state_focus"] == DELTA.extras["state_focus"], text
    assert got.decision.extras["state_delta"] == DELTA.extras["state_delta"], text


@pytest.mark.parametrize("habit", sorted(HABITS))
def test_pos_json_reads_every_habit(habit):
    p = DeltaProtocol()
    obj = p.minimal() | {"epistemic_gaps": [{"target": "which service\nfails", "reason": "r"}], "frontier": None}
    text = apply(habit, json.dumps(obj), role="state", protocol=p.name)
    got = p.parse(text)
    assert got.ok and got.blocks["json"]["epistemic_gaps"] == obj["epistemic_gaps"], (text, got.errors)


@pytest.mark.parametrize("answer", LATEX)
def test_latex_answers_round_trip_exactly_with_single_backslashes(answer):
    p = ReactProtocol()
    single = HABITS["latex_backslashes"](
        p.render(Decision(message=answer)), role="agent", protocol="react", rng=random.Random(0)
    )
    assert "\\\\" not in single  # the habit really wrote single backslashes
    got = p.parse(single)
    assert got.decision.message == answer
    assert {r["kind"] for r in got.repairs} & {"latex_backslash", "invalid_escape"}
    assert p.parse(p.render(Decision(message=answer))).decision.message == answer  # correct escapes untouched


def test_backslash_rule_keeps_real_control_characters():
    assert reader.load_json('"a\\nb\\tc"', "x")[0] == "a\nb\tc"  # \n before one letter 'b' is a line break
    assert reader.load_json('"Line one.\\nThe next"', "x")[0] == "Line one.\nThe next"
    assert reader.load_json('"\\\\frac{1}{2}"', "x")[0] == "\\frac{1}{2}"  # correct JSON is untouched
    assert reader.load_json('"\\theta \\times \\nu \\rho"', "x")[0] == "\\theta \\times \\nu \\rho"
    assert reader.load_json('"\\u00e9\\underline{x}"', "x")[0] == "é\\underline{x}"
    assert reader.load_json('"\\frac"', "x", latex=False)[0] == "\x0crac"  # the switch: strict JSON escapes


def test_last_complete_set_and_thinking():
    p = ReactProtocol()
    text = (
        '<think>I will answer <assistant_message>{"content": "wrong"}</assistant_message></think>'
        '<tool_calls>[]</tool_calls><assistant_message>{"content": "draft"}</assistant_message>'
        ' Actually: <tool_calls>[]</tool_calls><assistant_message>{"content": "final"}</assistant_message>'
    )
    got = p.parse(text)
    assert (
        got.decision.message == "final"
        and got.thinking
        and {"thinking_dropped", "repeated_blocks"} <= {r["kind"] for r in got.repairs}
    )
    bare = p.parse(
        'reasoning here</think><tool_calls>[]</tool_calls><assistant_message>{"content": "x"}</assistant_message>'
    )
    assert bare.decision.message == "x"


def test_never_invents_a_tool_call():
    p = ReactProtocol()
    prose = p.parse(
        '<tool_calls>I would call search here</tool_calls><assistant_message>{"content": null}</assistant_message>'
    )
    assert prose.decision == Decision()
    assert [(e.kind, e.detail) for e in prose.errors] == [
        ("bad_json", "<tool_calls>: Expecting value: line 1 column 1 (char 0)")
    ]
    cut = p.parse('<tool_calls>[{"name": "delete_account", "arguments": {"user_id": "12')
    assert cut.decision.tool_calls == [], "a cut-off call must not be completed by guessing"
    assert p.parse("The answer is 5.").decision.is_empty  # no blocks at all: nothing is made up


def test_field_synonyms_are_recorded():
    p = ReactProtocol()
    got = p.parse(
        '<tool_calls>[{"function": {"name": "f", "arguments": "{\\"a\\": 1}"}}]</tool_calls>'
        "<assistant_message></assistant_message>"
    )
    assert got.decision.tool_calls[0].name == "f" and got.decision.tool_calls[0].arguments == {"a": 1}
    assert any(r["kind"] == "field_synonym" for r in got.repairs)


def test_load_object_prose_fences_and_several_objects():
    assert load_object('Here: ```json\n{"a": 1,}\n``` done')[0] == {"a": 1}
    assert load_object('Draft {"a": 1}. Final {"a": 2}')[0] == {"a": 2}
    assert load_object('<think>{"a": 0}</think>{"a": None}')[0] == {"a": None}
    assert load_object("no json here")[0] is None


def test_judge_verdict_ignores_thinking():
    assert verdict("<think>Is it yes? Let me check.</think>no") is False
    assert verdict("<think>hmm</think>yes") is True


def test_json_string_state_behind_brackets_objects_and_tidying():
    # brackets, commas and Python literals inside strings (escaped quotes included) are text
    assert reader.balanced('{"a": "}\\"]", "b": [1, {"c": 2}]}') is True
    assert reader.balanced('{"a": "x') is False and reader.balanced("[{]}") is False and reader.balanced("{") is False
    # a quote in prose outside every object does not open a string
    text = '5" screen {"a": "}"} and {"b": 1}'
    assert [text[i:j] for i, j in reader.balanced_objects(text)] == ['{"a": "}"}', '{"b": 1}']
    assert reader.tidy_json('{"a": "None,]", "b": None, "c": [True,],}') == (
        '{"a": "None,]", "b": null, "c": [true]}',
        {"trailing_comma": 2, "python_literal": 2},
    )


def test_multi_line_blocks_alone_are_not_prose_around():
    """Blocks whose contents span lines leave nothing outside them: no `prose_around` repair."""
    text = '<thought>\nline one\nline two\n</thought>\n<tool_calls>\n[{"name": "f",\n "arguments": {}}]\n</tool_calls>'
    r = reader.Reading(raw=text)
    got = reader.last_set(text, ("thought", "tool_calls"), r)
    assert got["thought"] == "\nline one\nline two\n" and r.repairs == []
    r = reader.Reading(raw="Sure.\n" + text)
    reader.last_set("Sure.\n" + text, ("thought", "tool_calls"), r)
    assert [(x.kind, x.detail) for x in r.repairs] == [("prose_around", "5 chars outside the blocks ignored")]


def test_a_repeated_block_reads_its_last_copy():
    """A model that drafts a block and then writes it again means the last one."""
    text = "<answer>draft 1</answer> on reflection: <answer>draft 2</answer> final: <answer>42</answer>"
    r = reader.Reading(raw=text)
    assert reader.last_block(text, "answer", r) == "42"
    assert [(x.kind, x.where, x.detail) for x in r.repairs] == [
        ("repeated_blocks", "<answer>", "3 copies; the last one is read")
    ]
    assert reader.last_block("<answer>only</answer>", "answer") == "only"
    assert (
        reader.last_block("<answer>x</answer> <answer>cut off", "answer") == "x"
    )  # a complete copy beats a cut-off one
    assert reader.last_block("no block", "answer") is None


def test_latex_commands_starting_with_b_or_f_are_not_json_escapes():
    """`\\beta`, `\\bar`, `\\frac`, `\\forall` written with one backslash are LaTeX, not a backspace or a
    form feed followed by letters; `\\b` or `\\f` before a non-letter stays a JSON escape."""
    assert (
        reader.load_json('"\\beta + \\bar{x} = \\frac{1}{2} \\forall y"', "x")[0]
        == "\\beta + \\bar{x} = \\frac{1}{2} \\forall y"
    )
    assert reader.fix_backslashes('"\\beta"') == ('"\\\\beta"', {"latex": 1, "invalid_escape": 0})
    assert reader.load_json('"a\\b1\\f"', "x")[0] == "a\b1\f"  # a real backspace and form feed
    assert reader.load_json('"\\beta"', "x", latex=False)[0] == "\beta"  # the strict switch: a backspace


def _backslashes_one_by_one(src: str) -> tuple[str, dict[str, int]]:
    """The backslash rule walked character by character (the former implementation), the oracle
    of the version that jumps between quotes and backslashes."""
    out: list[str] = []
    counts = {"latex": 0, "invalid_escape": 0}
    i, n, in_str = 0, len(src), False
    while i < n:
        ch = src[i]
        if ch == '"':
            in_str = not in_str
        if ch != "\\" or not in_str or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        kind, width = reader._backslash(src, i)
        if kind is None:
            out.append(src[i : i + width])
            i += width
        else:
            counts[kind] += 1
            out.append("\\\\")
            i += 1
    return "".join(out), counts


def test_backslash_rule_scan_matches_the_character_walk():
    """Quotes, escaped quotes, backslashes outside strings, a trailing backslash, `\\u` with and
    without hex digits, LaTeX commands and JSON escapes, in random mixtures: the same text and counts
    (also through the shortcut for texts whose backslashes are all kept escapes)."""
    rng = random.Random(7)
    pieces = ['"', "\\", '\\"', "\\\\", "\\u00e9", "\\uZZ", "\\theta", "\\tx", "\\frac", "\\n", "\\b1"]
    pieces += ["\\/", "\\q", "\\nabla", "\\rho", "\\ta", "heta", "a", " ", "{", "}"]
    pieces += ["\\ne", "\\neq", "\\nex", "\\to", "\\top", "\\tops", "\\nu", "\\nub", "\\rightarrow", "\\righ"]
    cases = ["", "no backslash at all", '"\\', '"a\\"b\\', '\\"outside" "\\frac{1}{2}"']
    cases += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    # kept escapes, and a lone backslash
    kept = ['"', "\\", '\\"', "\\\\", "\\n", "\\nb", "\\u00e9", "\\/", "\\ta", "\\b1", "a", " "]
    cases += ["".join(rng.choice(kept) for _ in range(rng.randint(1, 40))) for _ in range(3000)]
    for src in cases:
        assert reader.fix_backslashes(src) == _backslashes_one_by_one(src), src


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": "x\\ud800y", "b": ["\\udc00"]}',  # escapes of lone surrogates
        '{"a": "x\\uD800y", "b": ["\\uDC00"]}',  # the same, upper-case hex
        '{"a": "x\ud800y", "b": ["\udc00"]}',  # the surrogates themselves in the text
    ],
)
def test_lone_surrogates_in_json_are_replaced_and_noted(raw):
    r = reader.read("")
    value, err = reader.load_json(raw, "tool_calls", r)
    assert err is None and value == {"a": "x\ufffdy", "b": ["\ufffd"]}
    assert [(n.kind, n.where) for n in r.repairs if n.kind == "invalid_unicode"] == [("invalid_unicode", "tool_calls")]


def test_json_without_escapes_is_read_as_is():
    r = reader.read("")
    raw = '{"a": "caf\u00e9 \U0001f600", "b": [1, 2.5, null, {"c": "\\n"}]}'  # no escape: read as it is
    value, err = reader.load_json(raw, "tool_calls", r)
    assert err is None and value == json.loads(raw) and not r.repairs


def test_thinking_in_any_case_is_dropped_and_a_reply_without_it_is_untouched():
    """The fast path (no "think" anywhere) must not skip tags written in other cases."""
    for raw in ("<THINK>plan</THINK>answer", "<Thinking>plan</Thinking>\nanswer", "plan</Think>answer"):
        r = reader.read(raw)
        assert r.text == "answer" and len(r.thinking) == 1 and r.repairs[0].kind == "thinking_dropped"
    text = "  <tool_calls>[]</tool_calls> I thought so  "
    r = reader.read(text)
    assert r.text is text and not r.thinking and not r.repairs


def test_only_a_closing_think_tag_starts_the_thinking_patterns():
    """The quick check before the thinking patterns looks for `</think` in any case: an opening
    tag alone is kept (as the patterns keep it) and a closing one in any case is acted on."""
    assert reader.read("<think>never closed, answer").text == "<think>never closed, answer"
    for close in ("</think>", "</THINKING>", "</ThInK>"):
        r = reader.read(f"plan{close}answer")
        assert r.text == "answer" and r.thinking == [f"plan{close}"]


def test_latex_names_alternation_matches_exactly_the_names():
    """The kept-escape pattern's trie of LaTeX names matches a letter run iff it is one of the names."""
    names = re.compile(reader._trie(reader.LATEX_TRN))
    runs = set(reader.LATEX_TRN) | {w[:i] for w in reader.LATEX_TRN for i in range(len(w))}
    runs |= {w + x for w in reader.LATEX_TRN for x in ("s", "a", "q", "arrow")}
    for run in runs:
        assert (names.fullmatch(run) is not None) == (run in reader.LATEX_TRN), run


def _lazy_blocks(text: str, tag: str) -> list[tuple[int, str]]:
    """The blocks as the former lazy pattern found them (the oracle of the `str.find` scan)."""
    pattern = rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>"
    return [(m.start(), m.group(1)) for m in re.finditer(pattern, text, re.DOTALL)]


def test_block_scan_matches_the_lazy_pattern():
    """Blocks found by `str.find`, and the text left outside them, are what the lazy patterns found
    and what substituting their alternation left: nested, overlapping, repeated, unclosed and
    half-written tags in random mixtures, with a tag whose opening begins with another's (`a>b`
    opens with `<a>`), where the alternation's order decides."""
    rng = random.Random(11)
    tags = ("a", "b", "a>b")
    pieces = ["<a>", "</a>", "<b>", "</b>", "<a>b>", "</a>b>", "<a", "a>", "</", "<", ">", "x", "\n", " "]
    cases = ["", "<a></a>", "<a>x</a><b>y</b>", "<a><b></a></b>", "<a>b>x</a>b>", "<a>b>x</a>"]
    cases += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(4000)]
    for sets in (tags, ("b", "a"), ("a",), ("tool_calls", "assistant_message")):
        alternation = "|".join(rf"<{re.escape(t)}>(.*?)</{re.escape(t)}>" for t in sets)
        for text in cases:
            for tag in sets:
                assert reader._blocks(text, tag) == _lazy_blocks(text, tag), (text, tag)
            assert reader._outside(text, sets) == re.sub(alternation, "", text, flags=re.DOTALL), (text, sets)
