"""Total parsing of tagged-JSON-block protocols (`<tag>JSON</tag>`), on top of the tolerant reader
(`kit.reader`: thinking dropped, last complete set of blocks, fences/prose, JSON repair, the
LaTeX backslash rule). Nothing here raises on model text; every problem becomes a
`ProtocolError`, every tolerance a recorded repair (`Reading.repairs`)."""

from __future__ import annotations

import json
from typing import Any

from kit import reader
from kit.reader import Reading
from runners.api import ProtocolError, ToolCall

NAME_SYNONYMS = ("tool", "tool_name", "function_name")
ARG_SYNONYMS = ("parameters", "args", "params", "tool_input")
MESSAGE_SYNONYMS = {"text": "content", "message": "content", "response": "content"}


def find_block(text: str, tag: str, reading: Reading | None = None) -> str | None:
    """Content of the last `<tag>...</tag>` block of the reply (thinking removed), or None."""
    if not isinstance(text, str):
        return None
    body = reading.text if reading is not None else reader.strip_thinking(text)
    return reader.last_block(body, tag, reading)


def load_json(raw: str, tag: str, errors: list[ProtocolError], reading: Reading | None = None) -> Any:
    """JSON inside a block (fences tolerated, repaired when needed); None (with an error) when
    there is no JSON to be read."""
    value, err = reader.load_json(raw, f"<{tag}>", reading)
    if err is not None:
        errors.append(ProtocolError(kind="bad_json", detail=f"<{tag}>: {err}"))
    return value


def _call_fields(item: dict[str, Any], i: int, reading: Reading | None) -> dict[str, Any]:
    fn = item.get("function")
    if "name" not in item and isinstance(fn, dict):  # OpenAI style {"function": {"name", "arguments"}}
        item = {**item, **fn}
        if reading is not None:
            reading.note("field_synonym", f"tool call #{i}", "'function': {name, arguments} read as name/arguments")
    elif "name" not in item and isinstance(fn, str):
        item = reader.rename(item, {"function": "name"}, reading, f"tool call #{i}")
    item = reader.rename(item, {k: "name" for k in NAME_SYNONYMS}, reading, f"tool call #{i}")
    return reader.rename(item, {k: "arguments" for k in ARG_SYNONYMS}, reading, f"tool call #{i}")


def parse_tool_calls(
    value: Any, errors: list[ProtocolError], *, prefix: str = "call", reading: Reading | None = None
) -> list[ToolCall]:
    """`[{"name": str, "arguments": object|JSON string}]` → ToolCalls; bad items are dropped.
    Field synonyms (`parameters`/`args` for arguments, `tool` for name, OpenAI's nested
    `function`) are read as the real names; nothing that is not a written call becomes one."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        errors.append(ProtocolError(kind="bad_field", detail="<tool_calls> must be a JSON list"))
        return []
    calls: list[ToolCall] = []
    for i, item in enumerate(value):
        if isinstance(item, dict):
            item = _call_fields(item, i, reading)
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} needs a string 'name'"))
            continue
        args = item.get("arguments", {})
        if isinstance(args, str):
            if args.strip():
                args, err = reader.load_json(args, f"tool call #{i} arguments", reading)
                if err is not None:
                    errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} arguments are not JSON"))
                    continue
            else:
                args = {}
        if args is None:
            args = {}
        if not isinstance(args, dict):
            errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} arguments must be an object"))
            continue
        calls.append(ToolCall(name=item["name"], arguments=args, id=f"{prefix}-{i}"))
    return calls


def parse_message(value: Any, errors: list[ProtocolError], reading: Reading | None = None) -> str | None:
    """`{"content": str|null}` (a bare string is accepted) → message text or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = reader.rename(value, MESSAGE_SYNONYMS, reading, "<assistant_message>")
        c = value.get("content")
        if c is None or isinstance(c, str):
            return c
        return json.dumps(c, ensure_ascii=False)
    errors.append(ProtocolError(kind="bad_field", detail='<assistant_message> must be {"content": string|null}'))
    return None


def read_message_block(raw: str | None, tag: str, errors: list[ProtocolError], reading: Reading | None = None) -> Any:
    """A message block's value: its JSON when it holds JSON, else its plain text (a model that
    writes the message itself instead of `{"content": ...}`)."""
    if raw is None:
        return None
    s = reader.strip_fences(raw, None)
    if s and s[0] not in '{["' and s not in ("null", "None"):
        if reading is not None:
            reading.note("plain_text_message", f"<{tag}>", "plain text read as the message content")
        return s
    value, err = reader.load_json(raw, f"<{tag}>", reading)
    if err is not None:
        if reading is not None:
            reading.note("plain_text_message", f"<{tag}>", "unparsable JSON read as plain text")
        return s
    return value


def load_object(text: Any, reading: Reading | None = None) -> tuple[dict[str, Any] | None, list[ProtocolError]]:
    """The JSON object in `text` (thinking, code fences and surrounding prose tolerated; the last
    complete object when there are several)."""
    if not isinstance(text, str) or not text.strip():
        return None, [ProtocolError(kind="empty", detail="empty model output")]
    r = reading if reading is not None else reader.read(text)
    if not r.text.strip():
        return None, [ProtocolError(kind="empty", detail="empty model output (thinking only)")]
    obj, err = reader.load_object(r.text, r)
    if obj is None:
        return None, [ProtocolError(kind="bad_json", detail=err or "no JSON object found in the reply")]
    return obj, []


def read_object(text: Any) -> tuple[dict[str, Any] | None, list[ProtocolError], Reading]:
    """A reply that is one JSON object, read by `load_object`: (the object or None, its errors, the
    reading, which records the repairs made while the object is read further)."""
    r = reader.read(text)
    obj, errors = load_object(text, r)
    return obj, errors, r
