"""FlowState's data model (docs/flowstate.md §1): typed state nodes, typed relations, raw tool-result nodes,
and the delta / access items the model proposes (docs/flowstate.md §2.2)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class StateType(str, Enum):
    """The five state types (App. B.2 Table 6). Values are Table 6's plural names."""

    preferences = "preferences"
    knowledge = "knowledge"
    attributes = "attributes"
    judgements = "judgements"
    artifacts = "artifacts"


# [harness choice] docs/flowstate.md §1.2: Table 6 says plurals, the B.3 instruction list singulars; accept both.
_TYPE_ALIASES = {
    "preference": StateType.preferences,
    "preferences": StateType.preferences,
    "knowledge": StateType.knowledge,
    "knowledges": StateType.knowledge,
    "attribute": StateType.attributes,
    "attributes": StateType.attributes,
    "judgement": StateType.judgements,
    "judgements": StateType.judgements,
    "judgment": StateType.judgements,
    "judgments": StateType.judgements,
    "artifact": StateType.artifacts,
    "artifacts": StateType.artifacts,
}

RELATIONS = ("supports", "derives", "follows", "supersedes")
"""The closed set of relation labels (App. B.3). No per-type semantics are validated (docs/flowstate.md §1.3)."""

OPERATIONS = ("add", "update", "remove")


def normalise_type(name: Any) -> StateType | None:
    """A StateType for a singular/plural (case-insensitive) name, or None when unknown."""
    if isinstance(name, StateType):
        return name
    if not isinstance(name, str):
        return None
    return _TYPE_ALIASES.get(name.strip().lower())


class Relation(BaseModel):
    """A directed edge from the node carrying it (source) to `state_id` (target) (docs/flowstate.md §1.3)."""

    model_config = {"frozen": True}

    rel: str
    state_id: str


class Node(BaseModel):
    """A state node (model-created) or a raw tool-result node (`raw=True`; docs/flowstate.md §1.4).

    Frozen: historical nodes never change; an ISU update makes a new version in the Active State."""

    model_config = {"frozen": True}

    state_id: str
    request: str = Field(description="query_id of the request that created the node; never changes")
    type: StateType
    summary: str = ""
    value: Any = None
    refs: tuple[Relation, ...] = ()
    raw: bool = Field(False, description="a raw tool result (content in `value`); no summary, no refs")

    def active_view(self, incoming: list[Relation] | None = None) -> dict[str, Any]:
        """The Active State entry of App. B.3: {state_id, type, related_states, summary, value}.
        `incoming` (only with `disclose_incoming_relations`) lists edges pointing at this node."""
        related = [{"state_id": r.state_id, "rel": r.rel} for r in self.refs]
        related += [{"state_id": r.state_id, "rel": r.rel, "direction": "incoming"} for r in incoming or []]
        summary = self.summary if not self.raw else "raw tool result"
        return {
            "state_id": self.state_id,
            "type": self.type.value,
            "related_states": related,
            "summary": summary,
            "value": self.value,
        }


class StateOp(BaseModel):
    """One proposed `state_delta` item as parsed; fields stay unvalidated (ISU validates them).
    `fields` lists which of summary/value/refs/state_set the model supplied (update keeps the rest)."""

    operation: Any = None
    state_id: Any = None
    state_set: Any = None
    summary: Any = None
    value: Any = None
    refs: Any = None
    fields: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """The canonical block form (only supplied fields) used in logs and `render`."""
        out: dict[str, Any] = {}
        for key in ("state_set", "operation", "state_id", "summary", "value", "refs"):
            if key in ("operation", "state_id") or key in self.fields:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> "StateOp":
        type_key = "state_set" if "state_set" in item else ("type" if "type" in item else None)
        supplied = tuple(k for k in ("summary", "value", "refs") if k in item) + (("state_set",) if type_key else ())
        return cls(
            operation=item.get("operation"),
            state_id=item.get("state_id"),
            state_set=item.get(type_key) if type_key else None,
            summary=item.get("summary"),
            value=item.get("value"),
            refs=item.get("refs"),
            fields=supplied,
        )


def parse_refs(refs: Any, *, strict_labels: bool = False) -> tuple[list[Relation], str | None]:
    """`[{"rel", "state_id"}]` → Relations, or (partial list, reason) when malformed. App. B.4 asks
    only that ids resolve: a label outside RELATIONS is kept as written (trimmed, lower-cased) and
    flagged by `unknown_labels`; `strict_labels=True` rejects it instead (the literal-vocabulary reading)."""
    if refs is None:
        return [], None
    if not isinstance(refs, list):
        return [], "refs must be a list of {rel, state_id}"
    out: list[Relation] = []
    for r in refs:
        if not isinstance(r, dict) or not isinstance(r.get("state_id"), str) or not isinstance(r.get("rel"), str):
            return out, f"malformed ref {str(r)[:80]!r}: needs string 'rel' and 'state_id'"
        rel = r["rel"].strip().lower()
        if rel not in RELATIONS and strict_labels:
            return out, f"unknown relation '{r['rel']}' (allowed: {', '.join(RELATIONS)})"
        out.append(Relation(rel=rel, state_id=r["state_id"]))
    return out, None


def unknown_labels(refs: list[Relation] | tuple[Relation, ...] | None) -> list[str]:
    """Relation labels outside the four of App. B.4, in order of first use."""
    return list(dict.fromkeys(r.rel for r in refs or () if r.rel not in RELATIONS))
