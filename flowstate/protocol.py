"""FlowState's output protocol (App. B.3; docs/flowstate.md §2.2): four tagged blocks holding JSON, in order
state_focus, state_delta, tool_calls, assistant_message. The ablations drop the block they do not
use (w/o PSA: no state_focus; w/o ISU: no state_delta). `parse` is total."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flowstate.prompts import output_protocol_text
from flowstate.state import StateOp
from kit.react import ReactProtocol
from kit.reader import Reading, dumps, rename
from runners.api import Decision, Parsed, ProtocolError


def _as_list(value: Any, tag: str, errors: list[ProtocolError]) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return value
    errors.append(ProtocolError(kind="bad_field", detail=f"<{tag}> must be a JSON list"))
    return []


FOCUS_SYNONYMS = {"id": "target_id", "state_id": "target_id", "target": "target_id"}
DELTA_SYNONYMS = {
    "state_type": "state_set",
    "set": "state_set",
    "op": "operation",
    "id": "state_id",
    "references": "refs",
}
"""Field names real models write for FlowState's (kit.reader.rename; recorded as repairs)."""


def parse_focus(value: Any, errors: list[ProtocolError], reading: Reading | None = None) -> list[dict[str, str]]:
    """`[{"target_id", "reason"}]` → canonical items; a bare string item is taken as a target id."""
    out: list[dict[str, str]] = []
    for i, item in enumerate(_as_list(value, "state_focus", errors)):
        if isinstance(item, dict):
            item = rename(item, FOCUS_SYNONYMS, reading, f"state_focus item #{i}")
        if isinstance(item, str) and item.strip():
            out.append({"target_id": item.strip(), "reason": ""})
        elif isinstance(item, dict) and isinstance(item.get("target_id"), str) and item["target_id"].strip():
            reason = item.get("reason")
            out.append(
                {
                    "target_id": item["target_id"].strip(),
                    "reason": reason
                    if isinstance(reason, str)
                    else ("" if reason is None else json.dumps(reason, ensure_ascii=False, default=str)),
                }
            )
        else:
            errors.append(ProtocolError(kind="bad_field", detail=f"state_focus item #{i} needs a string 'target_id'"))
    return out


def parse_delta(value: Any, errors: list[ProtocolError], reading: Reading | None = None) -> list[dict[str, Any]]:
    """`state_delta` items → canonical dicts (only the supplied fields; unknown fields ignored).
    Semantic checks are ISU's (`flowstate.isu.validate_update`), not the parser's."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(_as_list(value, "state_delta", errors)):
        if isinstance(item, dict):
            item = rename(item, DELTA_SYNONYMS, reading, f"state_delta item #{i}")
            out.append(StateOp.from_json(item).as_json())
        else:
            errors.append(ProtocolError(kind="bad_field", detail=f"state_delta item #{i} must be a JSON object"))
    return out


class FlowStateProtocol(ReactProtocol):
    """One instance per method instance: `context` (set by the method before each call) salts the
    ids that `render` invents, so scripted runs get ids unique across steps."""

    name = "flowstate"

    def __init__(self, *, with_focus: bool = True, with_delta: bool = True) -> None:
        self.with_focus = with_focus
        self.with_delta = with_delta
        self.blocks = tuple(b for b, on in (("state_focus", with_focus), ("state_delta", with_delta)) if on) + (
            "tool_calls",
            "assistant_message",
        )
        self.context: dict[str, Any] = {"salt": "", "raw_ids": []}
        self.exclusive_decision = True  # the "never both" rule (FlowState switch `exclusive_decision`)

    def description(self) -> str:
        return output_protocol_text(
            with_focus=self.with_focus, with_delta=self.with_delta, exclusive_decision=self.exclusive_decision
        )

    def parse_reading(self, r: Reading) -> Parsed:
        # The shared ReAct parse gathers every block in `self.blocks` (typed errors for missing
        # blocks and bad JSON) and handles tool_calls / assistant_message, including the
        # [harness choice] of docs/flowstate.md §2.2: tool calls plus a message → the calls run, the message is
        # dropped and logged as a violation. The state blocks are read from its `blocks`.
        parsed = super().parse_reading(r)
        if not parsed.blocks:  # empty or no block at all
            return parsed
        errors = list(parsed.errors)  # the ReAct parse already logs dropped message text
        extras: dict[str, Any] = dict(parsed.decision.extras)
        if self.with_focus:
            extras["state_focus"] = parse_focus(parsed.blocks.get("state_focus"), errors, r)
        if self.with_delta:
            extras["state_delta"] = parse_delta(parsed.blocks.get("state_delta"), errors, r)
        out = parsed.model_copy(
            update={"decision": parsed.decision.model_copy(update={"extras": extras}), "errors": errors}
        )
        if not self.nonempty(out):
            # Eq. 3 / Alg. 1 line 8: y = (∅, ∅, ∅) is not a valid step; recorded as a typed error so
            # a step that stays all-empty after the re-samples shows why it became a no-op (docs/flowstate.md §2.2).
            out.errors.append(
                ProtocolError(
                    kind="empty",
                    detail="every block is empty: y = (∅, ∅, ∅); at least one of state_delta, state_focus, tool_calls, "
                    "assistant_message must be non-empty",
                )
            )
        return out

    @staticmethod
    def nonempty(parsed: Parsed) -> bool:
        """Eq. 3 / Alg. 1 line 8: at least one of ΔS, R, z is non-empty."""
        d = parsed.decision
        return (
            bool(d.tool_calls)
            or d.message is not None
            or bool(d.extras.get("state_focus"))
            or bool(d.extras.get("state_delta"))
        )

    def _decision_node(self, decision: Decision) -> list[dict[str, Any]]:
        """Scripted support: a judgement recording the decision (a final answer is included), with
        an id from a content hash salted by `context`, deriving from the latest raw results."""
        if decision.is_empty:
            return []
        calls: list[dict[str, Any]] = [{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls]
        payload = json.dumps(
            [self.context.get("salt", ""), calls, decision.message], sort_keys=True, ensure_ascii=False, default=str
        )
        sid = "decision-" + hashlib.sha256(payload.encode()).hexdigest()[:12]
        value: dict[str, Any]
        if decision.message is not None and not calls:
            summary, value = f"Answer given: {decision.message[:160]}", {"final_answer": decision.message}
        else:
            summary, value = "Next action: call " + ", ".join(c["name"] for c in calls), {"tool_calls": calls}
        refs = [{"rel": "derives", "state_id": r} for r in self.context.get("raw_ids", [])]
        return [
            {
                "state_set": "judgements",
                "operation": "add",
                "state_id": sid,
                "summary": summary,
                "value": value,
                "refs": refs,
            }
        ]

    def render(self, decision: Decision) -> str:
        """Four blocks for `decision`. Given `extras["state_focus"]`/`["state_delta"]` are written as
        they are; without a `state_delta` key a decision-recording judgement is invented."""
        parts: list[tuple[str, Any]] = []
        if self.with_focus:
            parts.append(("state_focus", decision.extras.get("state_focus", [])))
        if self.with_delta:
            delta = (
                decision.extras["state_delta"] if "state_delta" in decision.extras else self._decision_node(decision)
            )
            parts.append(("state_delta", delta))
        parts.append(("tool_calls", [{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls]))
        parts.append(("assistant_message", {"content": decision.message}))
        return "\n".join(f"<{tag}>\n{dumps(v)}\n</{tag}>" for tag, v in parts)
