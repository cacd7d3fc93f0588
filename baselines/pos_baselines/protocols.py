"""Output formats of the baselines' calls. `parse` is total (problems become ProtocolErrors).

- Auxiliary calls (compressor, summarizer, manager, auditor) reply with one JSON object
  (`JsonReply`). For the scripted backbone — environments give no reference for non-agent
  roles, so it renders `Decision(message="")` — `render` writes `decision.extras["json"]` if
  given, else a message that already is a valid reply, else the protocol's `fallback`: a minimal
  valid reply the method may set before each call (e.g. an extractive summary), `minimal()`
  otherwise.
- Policy calls on the PoS benchmarks use the PoS release's JSON action reply (§0.1,
  `pos.protocols.PolicyProtocol`), HiAgent adding a `"subgoal"` key and the LH-Harness executor a
  `"step_status"` key; elsewhere (and with `policy_prompt: project`) they keep the project's ReAct
  blocks, HiAgent adding a `<subgoal>` block before them and the executor a `<step_status>` block after.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from kit.blocks import find_block, load_json, read_object  # tolerant reader underneath (kit.reader)
from kit.react import REACT_PROTOCOL, ReactProtocol
from kit.reader import Reading
from pos.protocols import PolicyProtocol
from runners.api import Decision, Parsed, Protocol, ProtocolError


class JsonReply(Protocol):
    """One JSON object with the keys of `fields` (name -> type); extra keys are ignored."""

    name = "json-reply"
    fields: dict[str, type | tuple[type, ...]] = {}
    hints: dict[str, str] = {}

    def __init__(self) -> None:
        self.fallback: Callable[[], dict[str, Any]] = self.minimal

    def minimal(self) -> dict[str, Any]:
        raise NotImplementedError

    def description(self) -> str:
        keys = ", ".join(
            f'"{k}" ({self.hints.get(k, getattr(t, "__name__", "value"))})' for k, t in self.fields.items()
        )
        return f"Reply with one JSON object with the keys {keys}, and no other text."

    def parse(self, text: str) -> Parsed:
        obj, errors, r = read_object(text)
        if obj is None:
            return Parsed(errors=errors, **r.parsed_fields)
        for key, typ in self.fields.items():
            if key not in obj:
                errors.append(ProtocolError(kind="bad_field", detail=f"missing key '{key}'"))
            elif isinstance(obj[key], bool) and typ is not bool or not isinstance(obj[key], typ):
                errors.append(ProtocolError(kind="bad_field", detail=f"'{key}' must be {self.hints.get(key, typ)}"))
        value = {k: obj.get(k) for k in self.fields}
        if errors:
            return Parsed(blocks={"json": obj}, errors=errors, **r.parsed_fields)
        return Parsed(decision=Decision(extras={"json": value}), blocks={"json": value}, **r.parsed_fields)

    def render(self, decision: Decision) -> str:
        if isinstance(decision.extras.get("json"), dict):
            return json.dumps(decision.extras["json"], ensure_ascii=False)
        if decision.message and self.parse(decision.message).ok:
            return decision.message
        return json.dumps(self.fallback(), ensure_ascii=False)


class SummaryReply(JsonReply):
    """ACON compressor (history and observation): `{"summary": str}`."""

    name = "acon-summary"
    fields = {"summary": str}
    hints = {"summary": "string"}

    def minimal(self) -> dict[str, Any]:
        return {"summary": ""}


class ChunkSummaryReply(JsonReply):
    """PACE representation generator: `{"detailed": str, "brief": str}` (brief: 1–2 sentences)."""

    name = "pace-chunk-summary"
    fields = {"detailed": str, "brief": str}
    hints = {"detailed": "string: a detailed summary keeping exact values", "brief": "string: 1-2 sentences"}

    def minimal(self) -> dict[str, Any]:
        return {"detailed": "", "brief": ""}


class SubgoalSummaryReply(JsonReply):
    """HiAgent observation summarization: one line plus whether the subgoal was met."""

    name = "hiagent-subgoal-summary"
    fields = {"summary": str, "subgoal_met": bool}
    hints = {"summary": "string: one line", "subgoal_met": "true or false"}

    def minimal(self) -> dict[str, Any]:
        return {"summary": "", "subgoal_met": False}


class ManagerReply(JsonReply):
    """LH-Harness manager: the remaining work, one bounded next step and its done criterion."""

    name = "lhh-manager"
    fields = {"remaining_work": str, "next_step": str, "done_criterion": str, "task_complete": bool}
    hints = {
        "remaining_work": "string",
        "next_step": "string: one bounded step",
        "done_criterion": "string: how to tell the step is done",
        "task_complete": "true only if the goal is verifiably achieved",
    }

    def minimal(self) -> dict[str, Any]:
        return {
            "remaining_work": "the whole task",
            "next_step": "Take the next action that moves the task toward its goal.",
            "done_criterion": "The observation shows the action took effect.",
            "task_complete": False,
        }


class AuditorReply(JsonReply):
    """LH-Harness auditor verdict on one executor round."""

    name = "lhh-auditor"
    fields = {"accepted": bool, "evidence": str, "summary": str}
    hints = {
        "accepted": "true or false",
        "evidence": "string: what in the observations shows it",
        "summary": "string: the verified outcome",
    }

    def minimal(self) -> dict[str, Any]:
        return {"accepted": False, "evidence": "no evidence given", "summary": ""}


SUBGOAL_PROTOCOL = (
    "First write a <subgoal> block holding a JSON string: the subgoal you are pursuing now. Repeat the same "
    "text while you are still on it; write a new subgoal when you move on.\n" + REACT_PROTOCOL
)
DEFAULT_SUBGOAL = "Work on the current request."


class SubgoalProtocol(ReactProtocol):
    """HiAgent policy (docs/pos-baselines.md §4): `<subgoal>` JSON string, then the ReAct blocks. A
    missing or bad subgoal keeps the current one (an error is recorded, the action stands)."""

    name = "hiagent-policy"

    def description(self) -> str:
        return SUBGOAL_PROTOCOL

    def parse_reading(self, r: Reading) -> Parsed:
        parsed = super().parse_reading(r)
        raw = find_block(r.text, "subgoal", r)
        errors: list[ProtocolError] = []
        value = load_json(raw, "subgoal", errors, r) if raw is not None else None
        if raw is not None and value is None and raw.strip():
            value, errors = raw.strip(), []  # plain text is an acceptable subgoal
        if isinstance(value, str) and value.strip():
            parsed.decision.extras["subgoal"] = value.strip()
        else:
            parsed.errors.append(
                ProtocolError(
                    kind="missing_block",
                    detail="<subgoal> missing or not a non-empty string: the current subgoal is kept",
                )
            )
        parsed.errors += errors
        return parsed

    def render(self, decision: Decision) -> str:
        subgoal = decision.extras.get("subgoal") or DEFAULT_SUBGOAL
        return f"<subgoal>\n{json.dumps(subgoal, ensure_ascii=False)}\n</subgoal>\n" + super().render(decision)


EXECUTOR_PROTOCOL = (
    REACT_PROTOCOL + '\nThen add a <step_status> block holding JSON {"step_done": true|false, "claim": "<what you '
    "achieved>\"}. Set step_done to true once the assigned step's done criterion is met (you may then omit the action)."
)


class ExecutorProtocol(ReactProtocol):
    """LH-Harness executor: the ReAct blocks plus an optional `<step_status>` claim."""

    name = "lhh-executor"

    def description(self) -> str:
        return EXECUTOR_PROTOCOL

    def parse_reading(self, r: Reading) -> Parsed:
        parsed = super().parse_reading(r)
        raw = find_block(r.text, "step_status", r)
        if raw is None:
            return parsed
        if parsed.errors and all(e.kind == "malformed" for e in parsed.errors):
            parsed.errors = []  # a claim alone (no action) is a valid executor reply
        errors: list[ProtocolError] = []
        value = load_json(raw, "step_status", errors, r)
        if isinstance(value, dict) and isinstance(value.get("step_done"), bool):
            parsed.decision.extras["step_done"] = value["step_done"]
            parsed.decision.extras["claim"] = str(value.get("claim") or "")
        else:
            errors.append(
                ProtocolError(kind="bad_field", detail='<step_status> must be {"step_done": bool, "claim": str}')
            )
        parsed.errors += errors
        return parsed

    def render(self, decision: Decision) -> str:
        status = {
            "step_done": bool(decision.extras.get("step_done", False)),
            "claim": str(decision.extras.get("claim", "")),
        }
        return super().render(decision) + f"\n<step_status>\n{json.dumps(status, ensure_ascii=False)}\n</step_status>"


# ---------------------------------------------------------------- the release's JSON action reply
# On the PoS benchmarks the policy replies in the PoS release's format (pos.protocols.PolicyProtocol:
# `{"thought", "action"}` / `"actions"`); HiAgent and the LH-Harness executor add their own keys to
# that object, announced by one line after the release's system prompt (the project's words).

RELEASE_SUBGOAL_RULE = (
    'Also give the key "subgoal": the subgoal you are pursuing now, as a string. Repeat the same text '
    "while you are still on it; write a new subgoal when you move on."
)
RELEASE_EXECUTOR_RULE = (
    'Also give the key "step_status": {"step_done": true|false, "claim": "<what you achieved>"}. Set '
    "step_done to true once the assigned step's done criterion is met (you may then omit the action)."
)


def _with_key(text: str, key: str, value: Any) -> str:
    obj = json.loads(text)
    return json.dumps({"thought": obj.pop("thought", ""), key: value, **obj}, ensure_ascii=False)


class ReleaseSubgoalProtocol(PolicyProtocol):
    """HiAgent on the release's reply: the JSON action object plus `"subgoal"` (a missing or bad
    subgoal keeps the current one; an error is recorded, the action stands)."""

    name = "hiagent-release-policy"

    def parse(self, text: str) -> Parsed:
        parsed = super().parse(text)
        obj = parsed.blocks.get("json")
        value = obj.get("subgoal") if isinstance(obj, dict) else None
        if isinstance(value, str) and value.strip():
            parsed.decision.extras["subgoal"] = value.strip()
        elif isinstance(obj, dict):
            parsed.errors.append(
                ProtocolError(
                    kind="missing_block",
                    detail='"subgoal" missing or not a non-empty string: the current subgoal is kept',
                )
            )
        return parsed

    def render(self, decision: Decision) -> str:
        return _with_key(super().render(decision), "subgoal", decision.extras.get("subgoal") or DEFAULT_SUBGOAL)


class ReleaseExecutorProtocol(PolicyProtocol):
    """The LH-Harness executor on the release's reply: the JSON action object plus an optional
    `"step_status"` claim; a claim alone (no action) is a valid reply."""

    name = "lhh-release-executor"

    def parse(self, text: str) -> Parsed:
        parsed = super().parse(text)
        obj = parsed.blocks.get("json")
        status = obj.get("step_status") if isinstance(obj, dict) else None
        if status is None:
            return parsed
        if isinstance(status, dict) and isinstance(status.get("step_done"), bool):
            parsed.decision.extras["step_done"] = status["step_done"]
            parsed.decision.extras["claim"] = str(status.get("claim") or "")
            if status["step_done"]:
                parsed.errors = [e for e in parsed.errors if "no executable" not in e.detail]
        else:
            parsed.errors.append(
                ProtocolError(kind="bad_field", detail='"step_status" must be {"step_done": bool, "claim": str}')
            )
        return parsed

    def render(self, decision: Decision) -> str:
        status = {
            "step_done": bool(decision.extras.get("step_done", False)),
            "claim": str(decision.extras.get("claim", "")),
        }
        return _with_key(super().render(decision), "step_status", status)
