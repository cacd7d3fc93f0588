"""The one tolerant reader of model output, shared by every protocol (ReAct blocks, FlowState's
four blocks, ZipAct's state JSON, PoS's JSON objects, the PoS baselines, judges' verdicts).

Real models write the protocol the way a careful human reader would still understand: thinking
before the answer, a draft set of blocks and then the real one, fences and prose around JSON,
trailing commas, Python literals, LaTeX with single backslashes inside JSON strings, raw line
breaks inside strings, plain text where `{"content": ...}` was asked for. The reader accepts all
of that and records every repair it made (`Repair`: what, where), so tolerance is visible and
countable in the step log. It never invents content: a tool call exists only if the model wrote
one (a `<tool_calls>` block that is not JSON stays an error, it is never read as a call).

Rules (docs/robustness.md has the catalogue of habits they answer):

- Thinking: `<think>…</think>` / `<thinking>…</thinking>` is removed before anything is parsed
  (a reply that starts with a bare `</think>`, as chat templates that open the tag themselves
  produce, loses everything before it). The API's `reasoning_content` never reaches the parser
  at all (the backbone keeps it apart). Thinking is recorded, never parsed.
- Repeated blocks: the last complete set counts. Walking back from the end, blocks are collected
  until a tag repeats; earlier sets (drafts) are ignored.
- JSON: fences (also unclosed) and surrounding prose are dropped; then the backslash rule below;
  then strict `json.loads`; then `json.loads(strict=False)` (raw line breaks / tabs inside
  strings); then `json_repair` (trailing commas, Python `None`/`True`/`False`, single quotes,
  missing closing brackets, unquoted keys). What `json_repair` changed is recorded from its log.
- Backslashes inside JSON strings are read the way a math-writing model means them (LaTeX):
  * `\\` + a character that is not a JSON escape (`\\s`, `\\p`, `\\l`, `\\{`, …) is a literal
    backslash (`"\\sqrt{\\pi}"` reads as `\\sqrt{\\pi}`);
  * `\\f` or `\\b` directly followed by a letter is the LaTeX command, not a form feed /
    backspace (`"\\frac{1}{2}"` reads as `\\frac{1}{2}`, `"\\beta"` as `\\beta`);
  * `\\t`, `\\r`, `\\n` directly followed by letters are the LaTeX command when the whole letter
    run is a known command name (`\\theta`, `\\times`, `\\text`, `\\right`, `\\rho`, `\\neq`,
    `\\nu`, `\\nabla`, …: `LATEX_TRN`); otherwise they stay a tab / carriage return / line break
    (`"a\\nb"` is still a line break), because prose after a line break is far more common
    than a LaTeX command whose name happens to start with t, r or n;
  * `\\u` not followed by four hex digits is a literal backslash (`\\underline`).
  A correctly escaped `\\\\frac` is untouched. The switch `latex=False` reads strict JSON escapes.
- Plain text where a message is expected (`<assistant_message>The answer is 2</assistant_message>`)
  is the message.
"""

from __future__ import annotations

import json
import string
import re
from dataclasses import dataclass, field
from typing import Any

import json_repair

THINK_RE = re.compile(r"<(think|thinking)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_BARE_CLOSE = re.compile(r"^.*?</(?:think|thinking)>", re.DOTALL | re.IGNORECASE)
_FENCE_OPEN = re.compile(r"^\s*```[A-Za-z0-9_-]*[ \t]*\n?")
_FENCE_CLOSE = re.compile(r"\n?[ \t]*```\s*$")

LATEX_TRN = frozenset(
    {
        # \t…
        "tau",
        "theta",
        "times",
        "text",
        "textbf",
        "textit",
        "textrm",
        "texttt",
        "tan",
        "tanh",
        "tfrac",
        "tilde",
        "top",
        "triangle",
        "triangleq",
        "therefore",
        "textstyle",
        "tbinom",
        "to",
        # \r…
        "rho",
        "right",
        "rightarrow",
        "Rightarrow",
        "rangle",
        "rceil",
        "rfloor",
        "rm",
        "rbrace",
        "rvert",
        "rVert",
        "rbrack",
        "rightleftharpoons",
        "restriction",
        # \n…
        "nu",
        "ne",
        "neq",
        "nabla",
        "not",
        "neg",
        "newline",
        "notin",
        "nmid",
        "nleq",
        "ngeq",
        "nsubseteq",
        "nparallel",
        "nexists",
        "nolimits",
        "nonumber",
        "nearrow",
        "nwarrow",
    }
)
"""LaTeX command names starting with t, r or n (read as commands after `\\t`, `\\r`, `\\n`)."""

_JSON_ESCAPES = set('"\\/bfnrtu')


@dataclass
class Repair:
    """One tolerance the reader applied: `kind` (countable) and where/what."""

    kind: str
    where: str = ""
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "detail": self.detail[:200]}


@dataclass
class Reading:
    """The reader's state for one reply: the answer text (thinking removed), the thinking, and
    the repairs made so far."""

    raw: str
    text: str = ""
    thinking: list[str] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)

    def note(self, kind: str, where: str = "", detail: str = "") -> None:
        self.repairs.append(Repair(kind, where, detail))

    @property
    def repair_dicts(self) -> list[dict[str, str]]:
        return [r.as_dict() for r in self.repairs]

    @property
    def parsed_fields(self) -> dict[str, Any]:
        """The fields of a `Parsed` the reading fills, as they stand now: {"repairs", "thinking"}."""
        return {"repairs": self.repair_dicts, "thinking": self.thinking}


def read(text: Any) -> Reading:
    """Start reading a reply: thinking removed and recorded."""
    raw = text if isinstance(text, str) else ""
    r = Reading(raw=raw)
    r.text = strip_thinking(raw, r)
    return r


_THINK_CLOSE = re.compile("</think", re.IGNORECASE)  # its uncased "</" lets the search skip ahead


def has_thinking(text: str) -> bool:
    """Whether `strip_thinking` would change `text` at all (it needs a closing `</think`, in any case)."""
    return _THINK_CLOSE.search(text) is not None


def strip_thinking(text: str, reading: Reading | None = None) -> str:
    """`text` without `<think>` blocks (and without everything before a bare leading `</think>`).
    A reply without a closing `</think` in any case (the usual one) is returned at once: both
    patterns need one, and the bare-close one would otherwise try a lazy match from the start."""
    if _THINK_CLOSE.search(text) is None:
        return text
    found: list[str] = []

    def cut(m: re.Match[str]) -> str:
        found.append(m.group(0))
        return ""

    out = THINK_RE.sub(cut, text)
    m = _BARE_CLOSE.match(out)
    if m and "<think" not in m.group(0).lower():
        found.append(m.group(0))
        out = out[m.end() :]
    if found and reading is not None:
        reading.thinking += found
        reading.note("thinking_dropped", detail=f"{sum(len(f) for f in found)} chars")
    return out.strip() if found else out


def plain_text(text: Any) -> tuple[str, list[dict[str, str]]]:
    """A plain-text reply (a judge's verdict, a user-facing answer) without thinking, and the repairs."""
    r = read(text)
    return r.text, r.repair_dicts


# ----------------------------------------------------------------------------- blocks
def _blocks(text: str, tag: str) -> list[tuple[int, str]]:
    """(start, content) of each complete `<tag>…</tag>` in `text`, left to right: what
    `re.finditer(r"<tag>(.*?)</tag>", text, re.DOTALL)` finds (each block closes at the first
    closing tag after its opening one, and the next is looked for after that close), by
    `str.find`, which jumps between the tags where the lazy pattern tries every character."""
    opening, closing = f"<{tag}>", f"</{tag}>"
    out: list[tuple[int, str]] = []
    i = text.find(opening)
    while i >= 0:
        j = text.find(closing, i + len(opening))
        if j < 0:  # no closing tag after this one: none after a later opening tag either
            break
        out.append((i, text[i + len(opening) : j]))
        i = text.find(opening, j + len(closing))
    return out


def _outside(text: str, tags: tuple[str, ...]) -> str:
    """`text` without its complete blocks of `tags`: what substituting "" for the alternation of
    their `<tag>(.*?)</tag>` patterns leaves (from the left, the earliest block of any tag that
    closes, the first of `tags` when two open at one place; the next looked for after it)."""
    pieces: list[str] = []
    pos = 0
    ahead: dict[str, tuple[int, int] | None] = {}  # tag → (start, end) of its next complete block
    while True:
        first: tuple[int, int] | None = None
        for tag in tags:
            nxt = ahead.get(tag, (-1, -1))
            if nxt is not None and nxt[0] < pos:  # not looked for since `pos` moved past it
                i = text.find(f"<{tag}>", pos)
                j = text.find(f"</{tag}>", i + len(tag) + 2) if i >= 0 else -1
                nxt = ahead[tag] = (i, j + len(tag) + 3) if j >= 0 else None  # None: no more of `tag`
            if nxt is not None and (first is None or nxt[0] < first[0]):
                first = nxt
        if first is None:
            break
        pieces.append(text[pos : first[0]])
        pos = first[1]
    pieces.append(text[pos:])
    return "".join(pieces)


def last_block(text: str, tag: str, reading: Reading | None = None) -> str | None:
    """Content of the last complete `<tag>…</tag>`; an opened block that never closes runs to the
    end of the reply (truncated output). None when absent."""
    matches = _blocks(text, tag)
    if matches:
        if len(matches) > 1 and reading is not None:
            reading.note("repeated_blocks", f"<{tag}>", f"{len(matches)} copies; the last one is read")
        return matches[-1][1]
    opened = text.rfind(f"<{tag}>")
    if opened >= 0:
        rest = text[opened + len(tag) + 2 :]
        if not re.search(r"<[A-Za-z_]+>", rest):  # nothing else follows: the block was cut off
            if reading is not None:
                reading.note("unclosed_block", f"<{tag}>")
            return rest
    return None


def last_set(text: str, tags: tuple[str, ...], reading: Reading | None = None) -> dict[str, str | None]:
    """The last complete set of `tags`: walking back from the end, blocks are taken until a tag
    repeats. A tag missing from that set is None (an earlier draft's copy is not used)."""
    found: list[tuple[int, str, str]] = []
    for tag in tags:
        found += [(start, tag, content) for start, content in _blocks(text, tag)]
    found.sort()
    out: dict[str, str | None] = {t: None for t in tags}
    seen: set[str] = set()
    for _, tag, content in reversed(found):
        if tag in seen:
            if reading is not None:
                reading.note(
                    "repeated_blocks", f"<{tag}>", "an earlier set of blocks was ignored; the last complete set is read"
                )
            break
        seen.add(tag)
        out[tag] = content
    if not found:
        return out
    if reading is not None:
        outside = _outside(text, tuple(tags)).strip()
        if outside:
            reading.note("prose_around", "blocks", f"{len(outside)} chars outside the blocks ignored")
    for tag in tags:  # a last block cut off at the end of the reply
        if out[tag] is None and tag not in seen:
            tail = text[found[-1][0] :] if found else text
            opened = tail.rfind(f"<{tag}>")
            if opened >= 0 and f"</{tag}>" not in tail[opened:]:
                out[tag] = tail[opened + len(tag) + 2 :]
                if reading is not None:
                    reading.note("unclosed_block", f"<{tag}>")
    return out


# ----------------------------------------------------------------------------- JSON
def strip_fences(s: str, reading: Reading | None = None, where: str = "") -> str:
    t = s.strip()
    if t.startswith("```"):
        t2 = _FENCE_OPEN.sub("", t, count=1)
        closed = _FENCE_CLOSE.search(t2)
        t2 = _FENCE_CLOSE.sub("", t2) if closed else t2
        if reading is not None:
            reading.note("fence" if closed else "unclosed_fence", where)
        return t2.strip()
    if t.endswith("```") and "```" not in t[:-3]:
        if reading is not None:
            reading.note("fence", where, "closing fence only")
        return t[:-3].strip()
    return t


def _backslash(src: str, i: int) -> tuple[str | None, int]:
    """How the backslash at `src[i]` inside a string literal reads (the backslash rule): (None, k)
    for a JSON escape of k characters, kept as it is; ("latex" | "invalid_escape", 1) for a
    literal backslash, to be doubled."""
    nxt = src[i + 1]
    if nxt in '"\\/':
        return None, 2
    if nxt in "fb" and i + 2 < len(src) and src[i + 2] in string.ascii_letters:
        return "latex", 1
    if nxt in "trn":
        m = _LETTER_RUN.match(src, i + 1)
        if m and len(m.group(0)) > 1 and m.group(0) in LATEX_TRN:
            return "latex", 1
    if nxt == "u":
        return (None, 6) if re.match(r"[0-9a-fA-F]{4}", src[i + 2 : i + 6]) else ("invalid_escape", 1)
    if nxt in _JSON_ESCAPES:
        return None, 2
    return "invalid_escape", 1


_QUOTE_OR_BACKSLASH = re.compile(r'["\\]')
_LETTER_RUN = re.compile(r"[A-Za-z]+")


def _trie(words: frozenset[str]) -> str:
    """A regex alternation matching exactly `words`, as a trie (`n(?:abla|e(?:g|q)?|…)`): the
    engine tries the alternatives of one next character, not every word in turn."""
    tree: dict[str, Any] = {}
    for w in words:
        node = tree
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def alternation(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + alternation(node[ch]) for ch in sorted(node) if ch]
        if not alts:
            return ""
        if "" in node:
            return "(?:" + "|".join(alts) + ")?"
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return alternation(tree)


# A backslash the rule keeps as a JSON escape, with the character(s) it escapes: `\"`, `\\`, `\/`,
# `\uXXXX`, `\b`/`\f` before a non-letter, `\t`/`\r`/`\n` unless a LaTeX command name follows.
_KEPT_ESCAPE = re.compile(
    r'\\(?:["\\/]|u[0-9a-fA-F]{4}|[bf](?![A-Za-z])|(?!' + _trie(LATEX_TRN) + r"(?![A-Za-z]))[trn])"
)


def fix_backslashes(src: str) -> tuple[str, dict[str, int]]:
    """The backslash rule (module docstring) applied to the JSON source text: inside string
    literals, backslashes that a math-writing model meant literally are doubled. Returns the new
    source and counts {"latex": n, "invalid_escape": n}. A text whose backslashes are all kept escapes
    (the usual reply: line breaks, quotes) is returned at once; otherwise only quotes and
    backslashes are looked at (a regex jumps between them) and the text between is copied in slices."""
    counts = {"latex": 0, "invalid_escape": 0}
    if "\\" not in src or "\\" not in _KEPT_ESCAPE.sub("", src):
        # every backslash starts an escape the rule keeps (taken in pairs from the start, as a
        # string literal takes them; one outside a string, which the rule copies as it is, still
        # changes nothing): nothing to double
        return src, counts
    out: list[str] = []
    i, n, in_str, copied = 0, len(src), False, 0
    find = _QUOTE_OR_BACKSLASH.search
    while (m := find(src, i)) is not None:
        i = m.start()
        if src[i] == '"':
            in_str = not in_str
            i += 1
            continue
        if not in_str or i + 1 >= n:
            i += 1
            continue
        kind, width = _backslash(src, i)
        if kind is None:
            i += width
        else:
            counts[kind] += 1
            out.append(src[copied:i])
            out.append("\\\\")
            i += 1
            copied = i
    if not out:
        return src, counts
    out.append(src[copied:])
    return "".join(out), counts


class _NoJson(Exception):
    pass


def _backslashes(s: str, reading: Reading | None, where: str, latex: bool) -> str:
    if not latex:
        return s
    fixed, counts = fix_backslashes(s)
    if fixed != s and reading is not None:
        if counts["latex"]:
            reading.note("latex_backslash", where, f"{counts['latex']} LaTeX command(s) written with one backslash")
        if counts["invalid_escape"]:
            reading.note(
                "invalid_escape", where, f"{counts['invalid_escape']} backslash(es) before a non-escape character"
            )
    return fixed


def _parse_raw(s: str, reading: Reading | None, where: str) -> Any:
    """Strict → non-strict → json_repair; raises _NoJson when nothing JSON-like is there."""
    try:
        return json.loads(s)
    except (ValueError, RecursionError) as e:
        first = str(e)
    try:
        value = json.loads(s, strict=False)
        if reading is not None:
            reading.note("raw_control_chars", where, "raw line breaks or tabs inside JSON strings")
        return value
    except (ValueError, RecursionError):
        pass
    tidy, fixes = tidy_json(s)
    if fixes:
        try:
            value = json.loads(tidy, strict=False)
            if reading is not None:
                for kind, n in fixes.items():
                    reading.note(kind, where, f"{n} fixed")
            return value
        except (ValueError, RecursionError):
            pass
    if not re.search(r"[\[{\"]", s) and s.strip() not in ("None", "True", "False"):
        raise _NoJson(first)
    if not balanced(s):
        raise _NoJson(
            f"{first} (the JSON is cut off or its brackets do not match; a cut-off reply is not completed by guessing)"
        )
    try:
        value, log = json_repair.repair_json(s, return_objects=True, logging=True)
    except Exception as e:  # the library must not make the reader raise
        raise _NoJson(f"{first}; json_repair failed: {type(e).__name__}") from None
    if value == "" and s.strip() not in ('""', "''"):
        raise _NoJson(first)
    if reading is not None:
        what = "; ".join(sorted({str(x.get("text", "")) for x in log if isinstance(x, dict)})) or first
        reading.note("json_repair", where, what)
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any) -> tuple[Any, int]:
    """Lone surrogates (a JSON `\\ud800` escape decodes to one; UTF-8 cannot store it) → U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.subn("\ufffd", value)
    if isinstance(value, dict):
        out, n = {}, 0
        for k, v in value.items():
            (k2, a), (v2, b) = _clean(k), _clean(v)
            out[k2], n = v2, n + a + b
        return out, n
    if isinstance(value, list):
        pairs = [_clean(v) for v in value]
        return [v for v, _ in pairs], sum(n for _, n in pairs)
    return value, 0


def _no_surrogates(s: str) -> bool:
    """The JSON text `s` cannot read as a value holding a lone surrogate: no `\\u` escape and no
    surrogate in the text itself."""
    return "\\u" not in s and "\\U" not in s and (s.isascii() or not _SURROGATE.search(s))


def _parse(s: str, reading: Reading | None, where: str) -> Any:
    """`_parse_raw`, then invalid Unicode the JSON escapes produced replaced (and recorded)."""
    value = _parse_raw(s, reading, where)
    if _no_surrogates(s):
        return value  # none in the value either (no copy of it to make)
    value, n = _clean(value)
    if n and reading is not None:
        reading.note("invalid_unicode", where, f"{n} lone surrogate(s) replaced by U+FFFD")
    return value


def load_json(raw: str, where: str, reading: Reading | None = None, *, latex: bool = True) -> tuple[Any, str | None]:
    """(value, None) or (None, error text). Empty content is (None, None)."""
    s = strip_fences(raw, reading, where)
    if s == "":
        return None, None
    try:
        return _parse(_backslashes(s, reading, where, latex), reading, where), None
    except _NoJson as e:
        return None, str(e)[:200]


def as_written_json(s: str) -> tuple[bool, Any]:
    """(True, value) when `load_json` would read the block content `s` (already stripped) as
    `json.loads(s)` with no repair: nothing the backslash rule changes, no lone surrogate to clean,
    strict JSON (which neither starts nor ends with a fence); else (False, None)."""
    if not s or not _no_surrogates(s) or fix_backslashes(s)[0] != s:
        return False, None
    try:
        return True, json.loads(s)
    except (ValueError, RecursionError):
        return False, None


def load_object(
    text: str, reading: Reading | None = None, *, where: str = "reply", latex: bool = True
) -> tuple[dict[str, Any] | None, str | None]:
    """The last complete JSON object in `text` (thinking already removed by `read`), with fences
    and prose around it tolerated. (obj, None) or (None, why)."""
    s = strip_fences(text, reading, where)
    if not s:
        return None, "empty model output"
    s = _backslashes(s, reading, where, latex)
    if s.startswith("{"):
        try:
            whole = _parse(s, reading, where)
        except _NoJson:
            whole = None
        if isinstance(whole, dict):
            return whole, None
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for start, end in balanced_objects(s):
        try:
            obj = _parse(s[start:end], None, where)
        except _NoJson:
            continue
        if isinstance(obj, dict):
            spans.append((start, end, obj))
    if spans:
        start, end, obj = spans[-1]
        if reading is not None:
            _parse(s[start:end], reading, where)  # records what the chosen object needed
            if len(spans) > 1:
                reading.note("repeated_blocks", where, f"{len(spans)} JSON objects; the last one is read")
            elif (s[:start] + s[end:]).strip():
                reading.note(
                    "prose_around", where, f"{len((s[:start] + s[end:]).strip())} chars outside the JSON object"
                )
        return obj, None
    if "{" not in s:
        return None, "no JSON object found in the reply"
    try:
        value = _parse(s[s.find("{") :], reading, where)
    except _NoJson as e:
        return None, f"no JSON object found in the reply ({e})"
    if isinstance(value, list):
        if reading is not None and sum(isinstance(v, dict) for v in value) > 1:
            reading.note("repeated_blocks", where, "several JSON objects; the last one is read")
        value = next((v for v in reversed(value) if isinstance(v, dict)), None)
    if isinstance(value, dict):
        if reading is not None and s[: s.find("{")].strip():
            reading.note("prose_around", where, "text before the JSON object")
        return value, None
    return None, f"expected a JSON object, got {type(value).__name__}"


_PY = {"None": "null", "True": "true", "False": "false"}


def tidy_json(s: str) -> tuple[str, dict[str, int]]:
    """The two commonest slips fixed token by token outside JSON strings (exact, unlike a general
    repair): a comma before a closing bracket, and Python's None/True/False. Returns the text and
    {"trailing_comma": n, "python_literal": n} for what was changed."""
    out: list[str] = []
    fixes = {"trailing_comma": 0, "python_literal": 0}
    strings = _Strings()
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if strings.inside(ch):
            out.append(ch)
            i += 1
            continue
        if ch == ",":
            j = i + 1
            while j < n and s[j] in " \t\r\n":
                j += 1
            if j < n and s[j] in "]}":
                fixes["trailing_comma"] += 1
                i += 1
                continue
        elif ch in "NTF":
            m = re.match(r"(None|True|False)\b", s[i:])
            if m and (not out or not (out[-1].isalnum() or out[-1] == "_")):
                out.append(_PY[m.group(1)])
                fixes["python_literal"] += 1
                i += len(m.group(1))
                continue
        out.append(ch)
        i += 1
    return "".join(out), {k: v for k, v in fixes.items() if v}


class _Strings:
    """The string-literal state of JSON text read one character at a time: `inside(ch)` tells
    whether `ch` belongs to a string literal (its quotes included; backslash escapes honoured)."""

    def __init__(self) -> None:
        self.open = self.escaped = False

    def inside(self, ch: str) -> bool:
        if self.open:
            if self.escaped:
                self.escaped = False
            elif ch == "\\":
                self.escaped = True
            elif ch == '"':
                self.open = False
            return True
        if ch == '"':
            self.open = True
            return True
        return False


def balanced(s: str) -> bool:
    """Whether every `[`/`{` outside JSON strings is closed in order (a reply cut off mid-JSON
    is not balanced; json_repair would complete it by guessing, e.g. a truncated tool argument)."""
    stack: list[str] = []
    strings = _Strings()
    pairs = {"}": "{", "]": "["}
    for ch in s:
        if strings.inside(ch):
            continue
        if ch in "[{":
            stack.append(ch)
        elif ch in "]}":
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack and not strings.open


def balanced_objects(s: str) -> list[tuple[int, int]]:
    """(start, end) of every top-level `{…}` span, braces inside JSON strings ignored (a quote
    outside every object is prose, not the start of a string)."""
    out: list[tuple[int, int]] = []
    depth, start = 0, -1
    strings = _Strings()
    for i, ch in enumerate(s):
        if depth and strings.inside(ch):
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append((start, i + 1))
    return out


_AMBIGUOUS = re.compile(r"(?<!\\)((?:\\\\)*)\\([fbtrn])(?=[A-Za-z])")
_CODES = {"f": "\\u000c", "b": "\\u0008", "t": "\\u0009", "r": "\\u000d", "n": "\\u000a"}


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` that a reader applying the backslash rule reads back
    exactly: a control character directly followed by a letter is written as `\\u00XX`, never as
    `\\f`/`\\b`/`\\t`/`\\r`/`\\n`. For text the harness writes in a model's place (scripted renders)."""
    return _AMBIGUOUS.sub(lambda m: m.group(1) + _CODES[m.group(2)], json.dumps(value, ensure_ascii=False, default=str))


# ----------------------------------------------------------------------------- field synonyms
def rename(obj: dict[str, Any], synonyms: dict[str, str], reading: Reading | None, where: str) -> dict[str, Any]:
    """`obj` with synonym keys renamed to the protocol's names (only when the real key is absent)."""
    out = dict(obj)
    for alias, real in synonyms.items():
        if alias in out and real not in out:
            out[real] = out.pop(alias)
            if reading is not None:
                reading.note("field_synonym", where, f"'{alias}' read as '{real}'")
    return out
