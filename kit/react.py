"""The ReAct output protocol shared by Full Context and the memory-system baselines
(FlowState App. B.3): two tagged blocks, `tool_calls` then `assistant_message`."""

from __future__ import annotations

import json
from typing import Any

from runners.api import DROPPED_MESSAGE, Decision, Parsed, Protocol, ProtocolError, ToolCall
from kit.blocks import load_json, parse_message, parse_tool_calls, read_message_block
from kit.reader import Reading, as_written_json, dumps, has_thinking, last_set, read

REACT_PROTOCOL = """Reply with exactly these two blocks, in this order, each holding valid JSON:
<tool_calls>
[{"name": "<tool name>", "arguments": {<arguments as the tool's schema says>}}]
</tool_calls>
<assistant_message>
{"content": "<message to the user or final answer>"}
</assistant_message>
Use [] for tool_calls when you call no tool, and {"content": null} when you send no message.
Call tools or message the user in one step, not both."""


class ReactProtocol(Protocol):
    name = "react"
    blocks: tuple[str, ...] = ("tool_calls", "assistant_message")
    message_blocks = ("assistant_message",)  # blocks whose plain text is the message itself

    def description(self) -> str:
        return REACT_PROTOCOL

    def parse(self, text: str) -> Parsed:
        """Total: `text` through the tolerant reader (kit.reader), then the blocks. A reply that
        is exactly the two blocks in order, each holding plain JSON the reader would take as it
        is (`_as_written`), is read without the reader's walk: the same `Parsed`
        (tests/test_react_fast_path.py compares the two on generated replies)."""
        if (
            type(self).parse_reading is ReactProtocol.parse_reading
            and self.blocks == ReactProtocol.blocks
            and self.message_blocks == ReactProtocol.message_blocks
        ):
            fast = _as_written(text)
            if fast is not None:
                return fast
        r = read(text)
        return _with_reading(self.parse_reading(r), r.parsed_fields)

    def parse_reading(self, r: Reading) -> Parsed:
        """The blocks of a reply already through `kit.reader.read`. Subclasses extend this and
        read their extra blocks with `find_block(r.text, tag, r)`; repairs land on `r`."""
        errors: list[ProtocolError] = []
        if not r.text.strip():
            detail = "empty model output" + (" (thinking only)" if r.thinking else "")
            return Parsed(errors=[ProtocolError(kind="empty", detail=detail)], **r.parsed_fields)
        raw = last_set(r.text, self.blocks, r)
        if all(v is None for v in raw.values()):
            return Parsed(errors=[ProtocolError(kind="malformed", detail="no protocol block found")], **r.parsed_fields)
        blocks: dict[str, Any] = {}
        for tag, content in raw.items():
            if content is None:
                errors.append(ProtocolError(kind="missing_block", detail=f"<{tag}> missing"))
                blocks[tag] = None
            elif tag in self.message_blocks:
                blocks[tag] = read_message_block(content, tag, errors, r)
            else:
                blocks[tag] = load_json(content, tag, errors, r)
        calls = parse_tool_calls(blocks["tool_calls"], errors, reading=r)
        message = parse_message(blocks["assistant_message"], errors, r)
        extras = {}
        if calls and message is not None:
            errors.append(
                ProtocolError(
                    kind="violation",
                    detail="tool calls and a message in one step: the message was dropped: "
                    f"{json.dumps(message, ensure_ascii=False)}",
                )
            )
            # Kept aside: never sent to a user, but benchmarks may grade it (τ COMMUNICATE reads
            # text written next to tool calls, as upstream keeps it in the assistant turn).
            extras[DROPPED_MESSAGE] = message
            message = None
        return Parsed(decision=Decision(tool_calls=calls, message=message, extras=extras), blocks=blocks, errors=errors)

    def render(self, decision: Decision) -> str:
        calls = [{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls]
        return (
            f"<tool_calls>\n{dumps(calls)}\n</tool_calls>\n"
            f"<assistant_message>\n{dumps({'content': decision.message})}\n</assistant_message>"
        )


def _with_reading(parsed: Parsed, fields: dict[str, Any]) -> Parsed:
    """`parsed` with a reading's fields (`Reading.parsed_fields`): `model_copy(update=...)`'s effect on
    the fresh `Parsed` a parse makes, without the copy (the fields set, and marked set as an assignment
    would mark them)."""
    parsed.__dict__.update(fields)
    parsed.__pydantic_fields_set__.update(fields)
    return parsed


_TC_OPEN, _TC_CLOSE = "<tool_calls>", "</tool_calls>"
_AM_OPEN, _AM_CLOSE = "<assistant_message>", "</assistant_message>"


def _as_written(text: Any) -> Parsed | None:
    """`ReactProtocol.parse(text)` for a reply written exactly as the protocol asks, or None for
    any other reply (which then takes the reader's whole walk). Exactly as asked: no thinking, one
    `<tool_calls>` block and then one `<assistant_message>` block with only white space around
    them; the calls a JSON list of objects with a non-empty string `name` and an object
    `arguments` (or none) and no other key; the message a JSON object with at most a `content`
    that is a string or null; not both calls and a message. Nothing the reader would repair or
    note is accepted here, so the result is the one the walk gives, with no repairs."""
    if type(text) is not str or has_thinking(text):
        return None
    a = text.find(_TC_OPEN)
    b = text.find(_TC_CLOSE, a + len(_TC_OPEN)) if a >= 0 else -1
    c = text.find(_AM_OPEN, b + len(_TC_CLOSE)) if b >= 0 else -1
    d = text.find(_AM_CLOSE, c + len(_AM_OPEN)) if c >= 0 else -1
    if d < 0:
        return None
    end = d + len(_AM_CLOSE)
    if text[:a].strip() or text[b + len(_TC_CLOSE) : c].strip() or text[end:].strip():
        return None  # prose around the blocks: the reader notes it
    calls_src = text[a + len(_TC_OPEN) : b]
    message_src = text[c + len(_AM_OPEN) : d]
    for src in (calls_src, message_src):  # a block inside a block, or repeated ("<" first: one memchr)
        if "<" in src and any(tag in src for tag in (_TC_OPEN, _TC_CLOSE, _AM_OPEN, _AM_CLOSE)):
            return None
    ok, calls_value = as_written_json(calls_src.strip())
    if not ok or type(calls_value) is not list:
        return None
    ok, message_value = as_written_json(message_src.strip())  # an object: not the plain-text message
    if not ok or type(message_value) is not dict or not set(message_value) <= {"content"}:
        return None
    message = message_value.get("content")
    if message is not None and type(message) is not str:
        return None
    calls: list[ToolCall] = []
    for i, item in enumerate(calls_value):
        if type(item) is not dict or not set(item) <= {"name", "arguments"}:
            return None
        name, args = item.get("name"), item.get("arguments", {})
        if type(name) is not str or not name or type(args) is not dict:
            return None
        calls.append(ToolCall(name=name, arguments=args, id=f"call-{i}"))
    if calls and message is not None:
        return None  # the violation: the reader's walk says it
    parsed = Parsed(
        decision=Decision(tool_calls=calls, message=message, extras={}),
        blocks={"tool_calls": calls_value, "assistant_message": message_value},
        errors=[],
    )
    return _with_reading(parsed, {"repairs": [], "thinking": []})  # a reading with nothing to note
