"""Model I/O formats of PoS's calls (docs/pos.md §2.5, §3, §5, §6, §4). `parse` is total: problems
become ProtocolErrors, never exceptions.

Every JSON reply must have its exact key set (§2.5). For the scripted backbone, `render(decision)`
writes `decision.extras["json"]` when given, else a message that already is a JSON object, else
the protocol's `fallback` — a minimal valid reply the method sets before each call (a no-op
delta, an empty issue list, ...), because environments have no reference answer for the
`state`/`sentinel` roles."""

from __future__ import annotations

import json
from typing import Any, Callable

from kit.blocks import load_object, parse_tool_calls, read_object
from kit.reader import dumps
from pos.repair_text import key_set_error
from runners.upstream import TextSources, UpstreamFile, py_string
from runners.api import DROPPED_MESSAGE, Decision, Parsed, Protocol, ProtocolError, TaskView, ToolCall, ToolSpec


def check_gaps(value: Any, key: str, errors: list[ProtocolError]) -> list[dict[str, str]]:
    """`[{target, reason}]` → canonical gaps; items without a string target are errors."""
    if not isinstance(value, list):
        errors.append(ProtocolError(kind="bad_field", detail=f"'{key}' must be a list of {{target, reason}} objects"))
        return []
    out = []
    for i, g in enumerate(value):
        if not isinstance(g, dict) or not isinstance(g.get("target"), str) or not g["target"].strip():
            errors.append(ProtocolError(kind="bad_field", detail=f"{key}[{i}] needs a non-empty string 'target'"))
            continue
        reason = g.get("reason", "")
        out.append(
            {
                "target": g["target"].strip(),
                "reason": reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False),
            }
        )
    return out


def check_frontier(value: Any, errors: list[ProtocolError]) -> dict[str, str] | None:
    if value is None:
        return None
    if (
        isinstance(value, dict)
        and value.get("gap_type") in ("epistemic", "achievement")
        and isinstance(value.get("target"), str)
    ):
        return {"gap_type": value["gap_type"], "target": value["target"]}
    errors.append(
        ProtocolError(
            kind="bad_field",
            detail='\'frontier\' must be null or {"gap_type": "epistemic"|"achievement", "target": str}',
        )
    )
    return None


def check_belief_fields(
    obj: dict[str, Any], record_keys: tuple[str, ...], errors: list[ProtocolError]
) -> dict[str, Any]:
    """Record lists must be lists; gap lists and the frontier are canonicalised (init and delta)."""
    out = dict(obj)
    for k in record_keys:
        if not isinstance(obj[k], list):
            errors.append(ProtocolError(kind="bad_field", detail=f"'{k}' must be a list of records"))
    out["epistemic_gaps"] = check_gaps(obj["epistemic_gaps"], "epistemic_gaps", errors)
    out["achievement_gaps"] = check_gaps(obj["achievement_gaps"], "achievement_gaps", errors)
    out["frontier"] = check_frontier(obj["frontier"], errors)
    return out


class JsonProtocol(Protocol):
    """A reply that is one JSON object with an exact key set; `check` validates the values."""

    keys: tuple[str, ...] = ()
    name = "pos-json"

    def __init__(self) -> None:
        self.fallback: Callable[[], dict[str, Any]] = self.minimal

    def minimal(self) -> dict[str, Any]:
        raise NotImplementedError

    def description(self) -> str:
        return "Reply with one JSON object with exactly these keys: " + ", ".join(self.keys) + ". No other text."

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        return obj

    def parse(self, text: str) -> Parsed:
        obj, errors, r = read_object(text)
        if obj is None:
            return Parsed(errors=errors, **r.parsed_fields)
        missing, extra = set(self.keys) - set(obj), set(obj) - set(self.keys)
        if missing or extra:
            errors.append(
                ProtocolError(
                    kind="bad_field",
                    detail=key_set_error(list(self.keys), sorted(missing), sorted(extra)),
                )
            )
            return Parsed(blocks={"json": obj}, errors=errors, **r.parsed_fields)
        try:
            value = self.check(obj, errors)
        except Exception as e:  # parse stays total whatever the model wrote
            errors.append(ProtocolError(kind="bad_field", detail=f"{type(e).__name__}: {e}"))
            value = obj
        return Parsed(
            decision=Decision(extras={"json": value}), blocks={"json": value}, errors=errors, **r.parsed_fields
        )

    def render(self, decision: Decision) -> str:
        if isinstance(decision.extras.get("json"), dict):
            return json.dumps(decision.extras["json"], ensure_ascii=False)
        obj, errs = load_object(decision.message or "")
        if obj is not None and not errs and set(obj) == set(self.keys):
            return decision.message or ""
        return json.dumps(self.fallback(), ensure_ascii=False)


WORLD_KEYS = ("upsert_entities", "upsert_states", "upsert_relations")


class InitProtocol(JsonProtocol):
    """Initialisation (§3): goal specification, world, gaps, frontier."""

    name = "pos-init"
    keys = ("goal_specification", "entities", "states", "relations", "epistemic_gaps", "achievement_gaps", "frontier")

    def minimal(self) -> dict[str, Any]:
        target = "complete the current request"
        return {
            "goal_specification": "The request is answered or carried out as asked.",
            "entities": [{"entity_id": "e1", "entity_type": "agent", "name": "agent", "attributes": {}}],
            "states": [],
            "relations": [],
            "epistemic_gaps": [],
            "achievement_gaps": [{"target": target, "reason": "nothing has been done yet"}],
            "frontier": {"gap_type": "achievement", "target": target},
        }

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        if not isinstance(obj["goal_specification"], str):
            errors.append(ProtocolError(kind="bad_field", detail="'goal_specification' must be a string"))
        return check_belief_fields(obj, ("entities", "states", "relations"), errors)


class DeltaProtocol(JsonProtocol):
    """Per-action delta (§3): removals, upserts, the complete current gap lists, the frontier."""

    name = "pos-delta"
    keys = ("remove_state_ids", "remove_relation_ids", *WORLD_KEYS, "epistemic_gaps", "achievement_gaps", "frontier")

    def minimal(self) -> dict[str, Any]:
        return {k: [] for k in self.keys[:5]} | {"epistemic_gaps": [], "achievement_gaps": [], "frontier": None}

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        for k in ("remove_state_ids", "remove_relation_ids"):
            if not isinstance(obj[k], list) or not all(isinstance(i, str) for i in obj[k]):
                errors.append(ProtocolError(kind="bad_field", detail=f"'{k}' must be a list of ID strings"))
        return check_belief_fields(obj, WORLD_KEYS, errors)


ISSUE_KEYS = ("targets", "issue_type", "problem", "evidence_step", "evidence_quote", "evidence", "suggestion")


class AuditProtocol(JsonProtocol):
    """Sentinel verdict (§5): `{"issues": [...]}`, read as leniently as upstream's
    `beliefSentinel.py`: the reply must hold an `issues` list (other top-level keys are ignored,
    `payload.get("issues")`); only issues[0] counts and it must carry exactly the issue fields
    (upstream builds a `SentinelIssue(**data)`); field values are not type-checked here, an issue
    whose values cannot be grounded (a non-integer `evidence_step`, targets that are not IDs) is
    discarded as ungrounded by `pos.sentinel.ground_issue`, as upstream's `_valid_issue` does."""

    name = "pos-audit"
    keys = ("issues",)

    def minimal(self) -> dict[str, Any]:
        return {"issues": []}

    def parse(self, text: str) -> Parsed:
        obj, errors, r = read_object(text)
        if obj is None:
            return Parsed(errors=errors, **r.parsed_fields)
        if "issues" not in obj:
            errors.append(ProtocolError(kind="bad_field", detail="the reply needs an 'issues' list"))
            return Parsed(blocks={"json": obj}, errors=errors, **r.parsed_fields)
        value = self.check({"issues": obj["issues"]}, errors)
        return Parsed(
            decision=Decision(extras={"json": value}), blocks={"json": value}, errors=errors, **r.parsed_fields
        )

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        issues = obj["issues"]
        if not isinstance(issues, list):
            errors.append(ProtocolError(kind="bad_field", detail="'issues' must be a list"))
            return obj
        if issues and not (isinstance(issues[0], dict) and set(issues[0]) == set(ISSUE_KEYS)):
            got = sorted(issues[0]) if isinstance(issues[0], dict) else type(issues[0]).__name__
            errors.append(
                ProtocolError(
                    kind="bad_field", detail=f"issues[0] must have exactly the fields {list(ISSUE_KEYS)}, got {got}"
                )
            )
        return obj


class ProgressProtocol(JsonProtocol):
    """Execution-mode progress label (§6)."""

    name = "pos-progress"
    keys = ("progress", "score", "affected_record_ids", "reason")

    def minimal(self) -> dict[str, Any]:
        return {
            "progress": 0,
            "score": 0.0,
            "affected_record_ids": [],
            "reason": "no evidence that the Active Gap shrank",
        }

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        p, s, ids = obj["progress"], obj["score"], obj["affected_record_ids"]
        if isinstance(p, bool) or p not in (0, 1):
            errors.append(ProtocolError(kind="bad_field", detail="'progress' must be the integer 0 or 1"))
        if isinstance(s, bool) or not isinstance(s, (int, float)) or s < 0:
            errors.append(ProtocolError(kind="bad_field", detail="'score' must be a number ≥ 0"))
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            errors.append(ProtocolError(kind="bad_field", detail="'affected_record_ids' must be a list of ID strings"))
        if not isinstance(obj["reason"], str):
            errors.append(ProtocolError(kind="bad_field", detail="'reason' must be a string"))
        return obj


class BeliefTextProtocol(JsonProtocol):
    """Belief Text (§4): `{"belief_text": str}`."""

    name = "pos-belief-text"
    keys = ("belief_text",)

    def minimal(self) -> dict[str, Any]:
        return {"belief_text": "(no belief yet)"}

    def check(self, obj: dict[str, Any], errors: list[ProtocolError]) -> dict[str, Any]:
        if not isinstance(obj["belief_text"], str):
            errors.append(ProtocolError(kind="bad_field", detail="'belief_text' must be a string"))
        return obj


ACTION_ONLY_KINDS = frozenset({"alfworld", "rca", "clindiag", "loca"})
"""Task kinds of upstream PoS's own benchmarks: every decision must be an executable action
(a message does not end the case; upstream's missing-action re-ask applies)."""


REACT_PROMPT = UpstreamFile("PoS", "prompts/react_prompt.py")
_OWN_FORMAT = (
    "Reply with one JSON object in this form:",
    'Both "thought" and "{key}" are required; a reply without an action that can be executed is invalid.',
    "Write nothing outside the JSON object and no code fences.",
)


def format_lines(sources: TextSources | None = None) -> tuple[str, str, str]:
    """(heading, the required-keys line with `{key}` for "action"/"actions", the closing line) of the
    policy's reply format, read at run time from the release (`prompts/react_prompt.py`:
    RCA100_SINGLE_ACTION_FORMAT's first and third lines, SYSTEM_PROMPT's last line); the project's
    wording when unavailable."""
    sources = sources if sources is not None else TextSources()
    single = py_string(REACT_PROMPT, "RCA100_SINGLE_ACTION_FORMAT")
    system = py_string(REACT_PROMPT, "SYSTEM_PROMPT")
    lines = single.strip().split("\n") if single else []
    keys = lines[2].replace('"action"', '"{key}"', 1) if len(lines) >= 3 and '"action"' in lines[2] else None
    sources.use(
        "pos.protocol.format_heading",
        REACT_PROMPT,
        lines[0] if lines else None,
        _OWN_FORMAT[0],
        symbol="RCA100_SINGLE_ACTION_FORMAT",
    )
    sources.use("pos.protocol.required_keys", REACT_PROMPT, keys, _OWN_FORMAT[1], symbol="RCA100_SINGLE_ACTION_FORMAT")
    closing = system.strip().split("\n")[-1] if system else None
    sources.use("pos.protocol.closing", REACT_PROMPT, closing, _OWN_FORMAT[2], symbol="SYSTEM_PROMPT")
    if not (lines and keys and closing):
        return _OWN_FORMAT
    return lines[0], keys, closing


class PolicyProtocol(Protocol):
    """The policy's output as upstream PoS writes it (`prompts/react_prompt.py`): one JSON object
    `{"thought": "brief reasoning", "action": {"name": "tool name", "arguments": {}}}`, or
    `"actions": [...]` when a turn may hold several (`max_actions_per_turn` > 1, RCA-100); a
    string action (ALFWorld's `"go to countertop 1"`) is the argument of the task's one
    single-argument tool. [harness choice] On tasks where a message ends the request (MemoryArena,
    τ; upstream PoS has no such benchmark) the object may carry `"message"` instead of an action.
    The thought is what the belief update reads as the transition's thought (§3). Parsed by the
    shared tolerant reader (kit.reader)."""

    name = "pos-policy"

    def __init__(self) -> None:
        self.tools: list[ToolSpec] = []
        self.allow_message = True
        self.multi = False

    def configure(self, task: TaskView, max_actions: int | None) -> None:
        self.tools = list(task.tools)
        self.allow_message = task.kind not in ACTION_ONLY_KINDS
        self.multi = max_actions is None or max_actions > 1

    def _string_tool(self) -> tuple[str, str] | None:
        """(tool, parameter) when the task has one tool with one required string parameter."""
        if len(self.tools) != 1:
            return None
        req = self.tools[0].parameters.get("required") or list((self.tools[0].parameters.get("properties") or {}))
        return (self.tools[0].name, req[0]) if len(req) == 1 else None

    def description(self) -> str:
        action = '"one action"' if self._string_tool() else '{"name": "tool name", "arguments": {}}'
        key, value = ("actions", f"[{action}, ...]") if self.multi else ("action", action)
        heading, required, closing = format_lines()
        text = f'{heading}\n{{"thought": "brief reasoning", "{key}": {value}}}\n' + required.replace("{key}", key)
        if self.allow_message:
            text += (
                "\nTo reply to the user or give the final answer instead of acting, write "
                '{"thought": "brief reasoning", "message": "the text"}.'
            )
        return text + "\n" + closing

    def parse(self, text: str) -> Parsed:
        obj, errors, r = read_object(text)
        if obj is None:
            return Parsed(errors=errors, **r.parsed_fields)
        thought = obj.get("thought")
        extras: dict[str, Any] = {
            "thought": thought
            if isinstance(thought, str)
            else ("" if thought is None else json.dumps(thought, ensure_ascii=False))
        }
        raw_actions: Any = (
            obj.get("actions")
            if isinstance(obj.get("actions"), list)
            else ([obj["action"]] if obj.get("action") is not None else [])
        )
        calls: list[ToolCall] = []
        for i, a in enumerate(raw_actions):
            if isinstance(a, str) and a.strip():
                st = self._string_tool()
                if st is None:
                    errors.append(
                        ProtocolError(
                            kind="bad_field",
                            detail=f'action #{i} is a string; this task\'s actions are {{"name", "arguments"}} objects',
                        )
                    )
                    continue
                calls.append(ToolCall(name=st[0], arguments={st[1]: a.strip()}, id=f"call-{i}"))
            else:
                got = parse_tool_calls([a], errors, reading=r)
                calls += [c.model_copy(update={"id": f"call-{i}"}) for c in got]
        message = obj.get("message")
        if message is not None and not isinstance(message, str):
            message = json.dumps(message, ensure_ascii=False)
        if message is not None and not self.allow_message:
            errors.append(ProtocolError(kind="violation", detail="a message is not an action on this task"))
            message = None
        if calls and message is not None:
            extras[DROPPED_MESSAGE] = message
            message = None
        if not calls and message is None:
            errors.append(ProtocolError(kind="bad_field", detail='no executable "action" in the reply'))
        return Parsed(
            decision=Decision(tool_calls=calls, message=message, extras=extras),
            blocks={"json": obj},
            errors=errors,
            **r.parsed_fields,
        )

    def render(self, decision: Decision) -> str:
        thought = decision.extras.get("thought") or "This step acts on the Active Gap."
        st = self._string_tool()

        def one(c: ToolCall) -> Any:
            if (
                st is not None
                and c.name == st[0]
                and list(c.arguments) == [st[1]]
                and isinstance(c.arguments[st[1]], str)
            ):
                return c.arguments[st[1]]
            return {"name": c.name, "arguments": c.arguments}

        out: dict[str, Any] = {"thought": thought}
        if decision.tool_calls:
            if self.multi or len(decision.tool_calls) > 1:  # more than the cap: PoS drops the extras and logs them
                out["actions"] = [one(c) for c in decision.tool_calls]
            else:
                out["action"] = one(decision.tool_calls[0])
        elif decision.message is not None:
            out["message"] = decision.message
        return dumps(out)
