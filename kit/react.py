"""The ReAct output protocol shared by Full Context and the memory-system baselines
(FlowState App. B.3): two tagged blocks, `tool_calls` then `assistant_message`."""

from __future__ import annotations

import json
from typing import Any

from runners.api import DROPPED_MESSAGE, Decision, Parsed, Protocol, ProtocolError
from kit.blocks import load_json, parse_message, parse_tool_calls, read_message_block
from kit.reader import Reading, dumps, last_set, read

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
        """Total: `text` through the tolerant reader (kit.reader), then the blocks."""
        r = read(text)
        parsed = self.parse_reading(r)
        # `model_copy(update=...)`'s effect on the fresh `Parsed` every parse_reading returns,
        # without the copy: the fields set and marked set (as an assignment would mark them)
        fields = r.parsed_fields
        parsed.__dict__.update(fields)
        parsed.__pydantic_fields_set__.update(fields)
        return parsed

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
