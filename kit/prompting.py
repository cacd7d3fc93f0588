"""Message assembly shared by every method: the tagged-block layout of FlowState App. B.3
(one system message: instructions, policy, tools, output_protocol; one user message whose
blocks depend on the method) and the ReAct rules every protocol shares."""

from __future__ import annotations

import json
import pickle

from runners.api import Message, ToolSpec

REACT_RULES = """You are an agent that completes the user's request step by step.
- Each reply is one step. In a step you either call tools to act on the environment, or you send one message to the \
user (a question, a confirmation, or your final answer), or - where your protocol allows - you only update your \
working state.
- Base every action on facts you have seen in this conversation or in tool results. Never invent identifiers, prices, \
dates or results.
- Follow the policy below. If it forbids an action, do not take it.
- When the request is complete, reply to the user with the final answer in the assistant message.
- Reply in the output protocol exactly: tagged blocks holding valid JSON, in the stated order, with no other text and \
no code fences."""


def block(tag: str, content: str) -> str:
    return f"<{tag}>\n{content.strip()}\n</{tag}>"


_TOOLS_TEXT: dict[tuple[str | bytes, int | None], str] = {}  # the schemas' exact content -> their text
_TOOLS_TEXT_MAX = 256


def tools_text(tools: list[ToolSpec], indent: int | None = 1) -> str:
    """The tool schemas as JSON; `indent=None` serialises as upstream PoS does
    (`json.dumps(actions, ensure_ascii=False)`). A method asks for the same tools every step:
    the text is kept per the schemas' exact content (`_tools_key`), since `json.dumps` with an
    indent runs the pure-Python encoder (~0.2 ms for a task's tools)."""
    if not tools:
        return "No tools are available in this task. Answer with an assistant message."
    key = (_tools_key(tools), indent)
    text = _TOOLS_TEXT.get(key)
    if text is None:
        text = json.dumps([t.openai_schema() for t in tools], indent=indent, ensure_ascii=False)
        if len(_TOOLS_TEXT) >= _TOOLS_TEXT_MAX:
            _TOOLS_TEXT.clear()
        _TOOLS_TEXT[key] = text
    return text


def _tools_key(tools: list[ToolSpec]) -> str | bytes:
    """What the schemas' text depends on, exactly (types, key order, NaN apart from None, 1 apart
    from 1.0 and True). Plain `ToolSpec`s (their schema is their fields): the pickle of their
    fields (~2 µs for four tools); anything else (a subclass may build its schema otherwise): the
    `repr` of the schemas themselves (~15 µs: `model_dump` and `repr` of every schema)."""
    if all(type(t) is ToolSpec for t in tools):
        try:
            return pickle.dumps([t.__dict__ for t in tools], protocol=5)
        except Exception:  # a value pickle refuses: keyed by the schemas' repr below
            pass
    return repr([t.openai_schema() for t in tools])


def system_message(
    *, instructions: str, policy: str, tools: list[ToolSpec], output_protocol: str, tools_indent: int | None = 1
) -> Message:
    body = "\n\n".join(
        [
            block("instructions", instructions),
            block("policy", policy or "No additional policy."),
            block("tools", tools_text(tools, tools_indent)),
            block("output_protocol", output_protocol),
        ]
    )
    return {"role": "system", "content": body}


def user_message(blocks: list[tuple[str, str]]) -> Message:
    return {"role": "user", "content": "\n\n".join(block(tag, text if text else "(empty)") for tag, text in blocks)}
