"""Total parsing of tagged-JSON-block protocols (`<tag>JSON</tag>`). Nothing here raises on
model text; every problem becomes a `ProtocolError`."""
from __future__ import annotations

import json
import re
from typing import Any

from runners.api import ProtocolError, ToolCall

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*|\s*```\s*$")


def find_block(text: str, tag: str) -> str | None:
    """Content of the first `<tag>...</tag>` block, or None when absent."""
    m = re.search(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", text, re.DOTALL)
    return m.group(1) if m else None


def load_json(raw: str, tag: str, errors: list[ProtocolError]) -> Any:
    """JSON inside a block, tolerating code fences; None (with an error) when invalid."""
    s = _FENCE.sub("", raw.strip())
    if s == "":
        return None
    try:
        return json.loads(s)
    except (ValueError, RecursionError) as e:
        errors.append(ProtocolError(kind="bad_json", detail=f"<{tag}>: {str(e)[:200]}"))
        return None


def parse_tool_calls(value: Any, errors: list[ProtocolError], *, prefix: str = "call") -> list[ToolCall]:
    """`[{"name": str, "arguments": object|JSON string}]` → ToolCalls; bad items are dropped."""
    if value is None:
        return []
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        errors.append(ProtocolError(kind="bad_field", detail="<tool_calls> must be a JSON list"))
        return []
    calls: list[ToolCall] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} needs a string 'name'"))
            continue
        args = item.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} arguments are not JSON"))
                continue
        if args is None:
            args = {}
        if not isinstance(args, dict):
            errors.append(ProtocolError(kind="bad_field", detail=f"tool call #{i} arguments must be an object"))
            continue
        calls.append(ToolCall(name=item["name"], arguments=args, id=f"{prefix}-{i}"))
    return calls


def parse_message(value: Any, errors: list[ProtocolError]) -> str | None:
    """`{"content": str|null}` (a bare string is accepted) → message text or None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        c = value.get("content")
        if c is None or isinstance(c, str):
            return c
        return json.dumps(c, ensure_ascii=False)
    errors.append(ProtocolError(kind="bad_field", detail="<assistant_message> must be {\"content\": string|null}"))
    return None


def load_object(text: Any) -> tuple[dict[str, Any] | None, list[ProtocolError]]:
    """The JSON object in `text` (code fences and surrounding prose tolerated)."""
    if not isinstance(text, str) or not text.strip():
        return None, [ProtocolError(kind="empty", detail="empty model output")]
    s = _FENCE.sub("", text.strip())
    for cand in (s, s[s.find("{"): s.rfind("}") + 1] if "{" in s else ""):
        try:
            obj = json.loads(cand)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return obj, []
        return None, [ProtocolError(kind="bad_json", detail=f"expected a JSON object, got {type(obj).__name__}")]
    return None, [ProtocolError(kind="bad_json", detail="no JSON object found in the reply")]
