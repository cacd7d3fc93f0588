"""Catalogue of output habits observed in real models, for the noisy scripted backbone
(`backbone.scripted.perturb=runners.backbones.habits:<name>`, `backbone.scripted.perturb_rate`).

Each habit has the perturb signature `habit(text, *, role, protocol, rng) -> str`: it takes the
perfect protocol text the scripted backbone rendered and writes it the way a model with that
habit would, without changing what it means (a careful human reader still understands it). The
habits are protocol-aware: they find the reply's structure (tagged blocks holding JSON, a bare
JSON object, or plain text) and change only what the habit is about, e.g. `trailing_commas`
re-serialises every JSON value with a comma before each closing bracket, `plain_message` writes
the message itself inside `<assistant_message>`. A habit that has nothing to act on (LaTeX
backslashes in a reply without backslashes) returns the text unchanged.

The benchmark's own simulated participants (`user_sim`) are left alone: their habits are the
benchmark's question, not the method's. Judges get the plain-text habits (thinking).

`HABITS` lists the built-ins (the robustness script runs each); `mixed` applies one drawn at
random per call. Any module can define more with the same signature.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Callable

Habit = Callable[..., str]
BLOCK = re.compile(r"<([A-Za-z_]+)>\n?(.*?)\n?</\1>", re.DOTALL)
SKIP_ROLES = frozenset({"user_sim"})


# ----------------------------------------------------------------------------- structure
def _segments(text: str) -> tuple[str, list[tuple[str, Any]]] | None:
    """("blocks", [(tag, value)]) for tagged-JSON replies, ("json", [("", value)]) for a bare JSON
    reply, or None for plain text. A block whose content is not JSON keeps its text (value str
    marked by the tag prefix "!")."""
    blocks = BLOCK.findall(text)
    if blocks and BLOCK.sub("", text).strip() == "":
        out = []
        for tag, content in blocks:
            try:
                out.append((tag, json.loads(content)))
            except ValueError:
                out.append(("!" + tag, content))
        return "blocks", out
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return ("json", [("", value)]) if isinstance(value, (dict, list)) else None


def _join(kind: str, parts: list[tuple[str, str]]) -> str:
    if kind == "json":
        return parts[0][1]
    return "\n".join(f"<{tag.lstrip('!')}>\n{body}\n</{tag.lstrip('!')}>" for tag, body in parts)


def dump(
    value: Any,
    *,
    indent: int | None = None,
    trailing: bool = False,
    py: bool = False,
    latex_single: bool = False,
    raw_newlines: bool = False,
    _level: int = 0,
) -> str:
    """A JSON writer with habits: pretty-printing, trailing commas, Python literals, LaTeX written
    with one backslash, raw line breaks inside strings."""
    kw: dict[str, Any] = dict(
        indent=indent, trailing=trailing, py=py, latex_single=latex_single, raw_newlines=raw_newlines
    )
    pad = "" if indent is None else "\n" + " " * (indent * (_level + 1))
    end_pad = "" if indent is None else "\n" + " " * (indent * _level)
    sep = ", " if indent is None else ","
    if value is None:
        return "None" if py else "null"
    if value is True or value is False:
        return ("True" if value else "False") if py else ("true" if value else "false")
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value, latex_single=latex_single, raw_newlines=raw_newlines)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{_string(str(k))}: {dump(v, **kw, _level=_level + 1)}" for k, v in value.items()]
        return "{" + sep.join(items) + ("," if trailing else "") + end_pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        items = [f"{pad}{dump(v, **kw, _level=_level + 1)}" for v in value]
        return "[" + sep.join(items) + ("," if trailing else "") + end_pad + "]"
    return _string(str(value), latex_single=latex_single, raw_newlines=raw_newlines)


def _string(s: str, *, latex_single: bool = False, raw_newlines: bool = False) -> str:
    out = ['"']
    for i, ch in enumerate(s):
        if ch == "\\":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            out.append("\\" if latex_single and nxt.isascii() and nxt.isalpha() else "\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\n" if raw_newlines else "\\n")
        elif ch == "\t":
            out.append("\t" if raw_newlines else "\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def _rewrite(text: str, role: str, **kw: Any) -> str:
    """Every JSON value of the reply re-serialised with the habit `kw` of `dump`."""
    if role in SKIP_ROLES:
        return text
    seg = _segments(text)
    if seg is None:
        return text
    kind, parts = seg
    return _join(kind, [(tag, body if tag.startswith("!") else dump(body, **kw)) for tag, body in parts])


def _tags(text: str) -> list[str]:
    return list(dict.fromkeys(t for t, _ in BLOCK.findall(text)))


# ----------------------------------------------------------------------------- the habits
def trailing_commas(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """`[1, 2,]`, `{"a": 1,}` in every JSON value."""
    return _rewrite(text, role, trailing=True)


def pretty_json(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """JSON pretty-printed over several lines (indent 2)."""
    return _rewrite(text, role, indent=2)


def python_literals(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """`None`, `True`, `False` instead of null/true/false."""
    return _rewrite(text, role, py=True)


def latex_backslashes(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """LaTeX inside JSON strings written with single backslashes: `"\\frac{1}{2}"`, `"\\sqrt{\\pi}"`
    (so `\\f`, `\\b`, `\\t`, `\\n`, `\\r` decode as control characters and `\\s` is invalid)."""
    return _rewrite(text, role, latex_single=True)


def raw_newlines(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """Line breaks (and tabs) inside JSON strings written raw instead of as `\\n`."""
    return _rewrite(text, role, raw_newlines=True)


def fenced_json(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """JSON in ```json fences (inside each block for tagged protocols)."""
    if role in SKIP_ROLES or (seg := _segments(text)) is None:
        return text
    kind, parts = seg
    return _join(
        kind, [(t, b if t.startswith("!") else f"```json\n{json.dumps(b, ensure_ascii=False)}\n```") for t, b in parts]
    )


def unclosed_fence(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """A ```json fence opened and never closed (whole reply for JSON protocols, each block otherwise)."""
    if role in SKIP_ROLES or (seg := _segments(text)) is None:
        return text
    kind, parts = seg
    return _join(
        kind, [(t, b if t.startswith("!") else f"```json\n{json.dumps(b, ensure_ascii=False)}") for t, b in parts]
    )


PROSE_BEFORE = (
    "Sure. Here is my reply, in the format requested.",
    "Okay, I have looked at everything above.",
    "Let me respond now.",
)
PROSE_AFTER = (
    "I followed the required format.",
    "Let me know if anything needs to change.",
    "That is my decision for this step.",
)


def prose_around(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """A sentence before and one after the structured reply (plain-text replies are left alone)."""
    if role in SKIP_ROLES or _segments(text) is None:
        return text
    return f"{rng.choice(PROSE_BEFORE)}\n\n{text}\n\n{rng.choice(PROSE_AFTER)}"


def plain_message(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """The message written as plain text inside `<assistant_message>` (or `<thought>`) instead of
    `{"content": ...}` / a JSON string; an absent message leaves the block empty."""
    if role in SKIP_ROLES or (seg := _segments(text)) is None or seg[0] != "blocks":
        return text

    def body(tag: str, value: Any) -> str:
        if tag == "assistant_message" and isinstance(value, dict) and set(value) == {"content"}:
            c = value["content"]
            return "" if c is None else str(c)
        if tag == "thought" and isinstance(value, str):
            return value
        return value if tag.startswith("!") else json.dumps(value, ensure_ascii=False)

    return _join("blocks", [(t, body(t, b)) for t, b in seg[1]])


def think_block(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """A `<think>` block of reasoning before the reply (also on plain-text replies such as verdicts)."""
    if role in SKIP_ROLES:
        return text
    return (
        "<think>\nLet me work through this carefully before answering.\n"
        "I will check what the last observation says and what is still open.\n</think>\n\n" + text
    )


def think_tags(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """Thinking that names the protocol's own tags (and drafts a block inside the thinking) before
    the real reply: `<think>I must answer with <tool_calls> ... </tool_calls> ...</think>`."""
    if role in SKIP_ROLES:
        return text
    tags = _tags(text)
    if tags:
        names = ", ".join(f"<{t}>" for t in tags)
        draft = f"<{tags[0]}>\n[]\n</{tags[0]}>"
        inner = (
            f"I must answer with {names}, in that order. A first draft would be {draft} but that is not right yet; "
            f"I should also not forget </{tags[-1]}> at the end."
        )
    elif _segments(text) is not None:
        inner = (
            'The reply must be one JSON object, something like {"key": "value"}, but with the real keys. '
            "Let me write it."
        )
    else:
        inner = "Is the answer right? It could be yes or no; I will compare it with the reference."
    return f"<think>\n{inner}\n</think>\n{text}"


def draft_then_final(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """A complete draft of the reply, then "Actually, ..." and the real reply (the blocks or the
    JSON object repeat; the last complete set is the answer)."""
    if role in SKIP_ROLES or (seg := _segments(text)) is None:
        return text
    kind, parts = seg

    def emptied(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: emptied(x) for k, x in v.items()}
        if isinstance(v, list):
            return []
        if isinstance(v, str):
            return ""
        return v

    draft = _join(kind, [(t, b if t.startswith("!") else json.dumps(emptied(b), ensure_ascii=False)) for t, b in parts])
    return f"{draft}\n\nActually, that draft is incomplete. Here is the final reply:\n\n{text}"


SYNONYMS = {"state_set": "state_type", "arguments": "parameters", "content": "text"}
"""Field names real models write instead of the protocol's: FlowState's `state_type` for
`state_set`, `parameters` for a tool call's `arguments`, `{"text": ...}` for a message's content."""


def field_synonyms(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """Synonyms for the protocol's field names (`SYNONYMS`), in the blocks whose fields they are:
    `state_delta` items, `tool_calls` items (and a PoS policy action), `assistant_message`."""
    if role in SKIP_ROLES or (seg := _segments(text)) is None:
        return text
    kind, parts = seg

    def ren(d: Any, keys: tuple[str, ...]) -> Any:
        if not isinstance(d, dict):
            return d
        return {(SYNONYMS[k] if k in keys and SYNONYMS[k] not in d else k): v for k, v in d.items()}

    out = []
    for tag, body in parts:
        if tag == "state_delta" and isinstance(body, list):
            body = [ren(i, ("state_set",)) for i in body]
        elif tag == "tool_calls" and isinstance(body, list):
            body = [ren(i, ("arguments",)) for i in body]
        elif tag == "assistant_message":
            body = ren(body, ("content",))
        elif kind == "json" and isinstance(body, dict) and isinstance(body.get("action"), dict):
            body = {**body, "action": ren(body["action"], ("arguments",))}
        out.append((tag, body if tag.startswith("!") else json.dumps(body, ensure_ascii=False)))
    return _join(kind, out)


HABITS: dict[str, Habit] = {
    f.__name__: f
    for f in (
        think_tags,
        think_block,
        trailing_commas,
        latex_backslashes,
        raw_newlines,
        prose_around,
        fenced_json,
        pretty_json,
        python_literals,
        plain_message,
        unclosed_fence,
        field_synonyms,
        draft_then_final,
    )
}


def mixed(text: str, *, role: str, protocol: str | None, rng: random.Random) -> str:
    """One built-in habit drawn at random for this call."""
    habit = HABITS[rng.choice(sorted(HABITS))]
    return habit(text, role=role, protocol=protocol, rng=rng)
