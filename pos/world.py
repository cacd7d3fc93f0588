"""The structured belief B_t = (W_t, G, Δ^E_t, Δ^A_t) and its delta application (docs/pos.md §1, §3).

Records are plain JSON dicts (their own ID field included) so that the §7 record signatures are
exactly `json.dumps(record)`. Building a candidate never trusts model text: every problem raises
`BuildError`, whose message says what to fix (the caller turns it into a re-ask)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Literal, overload

KINDS = ("entities", "states", "relations")
SOURCE_TYPES = ("observed", "inferred")
MAX_ATTRIBUTES_CHARS = 4096  # §1: compact sorted-key JSON of `attributes`
Record = dict[str, Any]


class BuildError(ValueError):
    """A candidate belief cannot be built from the model's delta."""


@overload
def _str(
    raw: dict[str, Any], key: str, what: str, *, required: Literal[True] = True, default: str | None = None
) -> str: ...
@overload
def _str(raw: dict[str, Any], key: str, what: str, *, required: bool, default: str | None = None) -> str | None: ...
def _str(raw: dict[str, Any], key: str, what: str, *, required: bool = True, default: str | None = None) -> str | None:
    v = raw.get(key, default)
    if v is None and not required:
        return None
    if not isinstance(v, str) or not v.strip():
        raise BuildError(f"{what}: '{key}' must be a non-empty string")
    return v.strip()


def _probability(raw: dict, default: float, what: str) -> float:
    p = raw.get("probability", default)
    if p is None:
        p = default
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
        raise BuildError(f"{what}: 'probability' must be a number in [0, 1]")
    return float(p)


def _provenance(raw: dict, default_p: float, what: str) -> tuple[str, float, str | None]:
    """(source_type, probability, reason); observed records are forced to p=1, reason=None (§1)."""
    st = raw.get("source_type") or "observed"
    if st not in SOURCE_TYPES:
        raise BuildError(f"{what}: 'source_type' must be 'observed' or 'inferred'")
    if st == "observed":
        return st, 1.0, None
    reason = raw.get("reason")
    if reason is not None and not isinstance(reason, str):
        reason = json.dumps(reason, ensure_ascii=False)
    return st, _probability(raw, default_p, what), reason


def merge_attributes(old: dict[str, Any], new: Any, what: str) -> dict[str, Any]:
    """§1: new attributes merge into old ones; a null value deletes that key."""
    if new is None:
        new = {}
    if not isinstance(new, dict):
        raise BuildError(f"{what}: 'attributes' must be an object of scalar values")
    out = dict(old)
    for k, v in new.items():
        if not isinstance(k, str) or not k.strip():
            raise BuildError(f"{what}: attribute keys must be non-empty strings")
        if v is None:
            out.pop(k, None)
        elif isinstance(v, (str, int, float, bool)):
            out[k] = v
        else:
            raise BuildError(f"{what}: attribute '{k}' must be a string, number, boolean or null")
    if len(json.dumps(out, sort_keys=True, separators=(",", ":"), ensure_ascii=False)) > MAX_ATTRIBUTES_CHARS:
        raise BuildError(f"{what}: attributes exceed {MAX_ATTRIBUTES_CHARS} characters; keep only facts the task needs")
    return out


@dataclass
class World:
    """W_t: entities, states, relations keyed by ID."""

    entities: dict[str, Record] = field(default_factory=dict)
    states: dict[str, Record] = field(default_factory=dict)
    relations: dict[str, Record] = field(default_factory=dict)

    def copy(self) -> "World":
        return copy.deepcopy(self)

    def kind(self, kind: str) -> dict[str, Record]:
        return getattr(self, kind)

    def to_dict(self) -> dict[str, dict[str, Record]]:
        """`WorldState.to_dict()`: an entity with empty attributes omits `attributes` (§1)."""
        ents = {
            i: ({k: v for k, v in e.items() if k != "attributes"} if not e.get("attributes") else copy.deepcopy(e))
            for i, e in self.entities.items()
        }
        return {"entities": ents, "states": copy.deepcopy(self.states), "relations": copy.deepcopy(self.relations)}

    def as_lists(self) -> dict[str, list[Record]]:
        """Records per kind as lists (the shape the health detector reads)."""
        d = self.to_dict()
        return {k: list(d[k].values()) for k in KINDS}

    def node_ids(self) -> set[str]:
        return set(self.entities) | set(self.states)

    # -------------------------------------------------------------- delta application (§3)
    def remove_state(self, sid: str) -> None:
        """Deletes the state and every relation referencing it (§1)."""
        self.states.pop(sid, None)
        for rid in [r for r, rec in self.relations.items() if sid in (rec["source_id"], rec["target_id"])]:
            del self.relations[rid]

    def upsert_entity(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise BuildError("upsert_entities items must be objects")
        eid = _str(raw, "entity_id", "entity")
        what = f"entity {eid}"
        old = self.entities.get(eid, {})
        etype = _str(raw, "entity_type", what, default=old.get("entity_type"))
        name = _str(raw, "name", what, default=old.get("name"))
        attrs = merge_attributes(old.get("attributes", {}), raw.get("attributes"), what)
        self.entities[eid] = {"entity_id": eid, "entity_type": etype, "name": name, "attributes": attrs}

    def upsert_state(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise BuildError("upsert_states items must be objects")
        sid = _str(raw, "state_id", "state")
        what = f"state {sid}"
        owner = _str(raw, "entity_id", what)
        if owner not in self.entities:
            raise BuildError(
                f"{what}: owner entity '{owner}' does not exist; upsert the entity first or use an existing entity_id"
            )
        st, p, reason = _provenance(raw, 1.0, what)
        self.states[sid] = {
            "state_id": sid,
            "entity_id": owner,
            "description": _str(raw, "description", what),
            "probability": p,
            "reason": reason,
            "source_type": st,
        }

    def upsert_relation(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            raise BuildError("upsert_relations items must be objects")
        raw = map_relation_aliases(raw)
        rid = _str(raw, "relation_id", "relation")
        what = f"relation {rid}"
        src, dst = _str(raw, "source_id", what), _str(raw, "target_id", what)
        for end in (src, dst):
            if end not in self.node_ids():
                raise BuildError(f"{what}: endpoint '{end}' is neither an existing entity nor state ID")
        st, p, reason = _provenance(raw, 0.5, what)
        self.relations[rid] = {
            "relation_id": rid,
            "source_id": src,
            "target_id": dst,
            "description": _str(raw, "description", what),
            "probability": p,
            "reason": reason,
            "source_type": st,
        }

    def apply(self, delta: dict[str, Any]) -> "World":
        """A new world: remove relations → remove states (with relations) → upsert entities →
        states → relations (§3). Entities are never deleted. Raises BuildError."""
        w = self.copy()
        for key in ("remove_relation_ids", "remove_state_ids"):
            ids = delta.get(key) or []
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise BuildError(f"'{key}' must be a list of ID strings")
        for rid in delta.get("remove_relation_ids") or []:
            w.relations.pop(rid, None)
        for sid in delta.get("remove_state_ids") or []:
            w.remove_state(sid)
        for key, fn in (
            ("upsert_entities", w.upsert_entity),
            ("upsert_states", w.upsert_state),
            ("upsert_relations", w.upsert_relation),
        ):
            items = delta.get(key) or []
            if isinstance(items, dict):
                items = list(items.values())
            if not isinstance(items, list):
                raise BuildError(f"'{key}' must be a list of records")
            for raw in items:
                fn(raw)
        return w


RELATION_ALIASES = {
    "source_id": ("source_entity_id", "src_entity_id", "source", "src"),
    "target_id": ("target_entity_id", "dst_entity_id", "target", "dst"),
    "description": ("relation_type", "relation", "type"),
}
"""§2.5: relation aliases mapped before validation."""


def map_relation_aliases(raw: dict[str, Any]) -> dict[str, Any]:
    out = dict(raw)
    for canon, aliases in RELATION_ALIASES.items():
        for a in aliases:
            if a in out:
                v = out.pop(a)
                out.setdefault(canon, v)
    return out


def changed_ids(before: World, after: World) -> dict[str, list[str]]:
    """IDs whose records differ between two worlds, added and removed included (§5)."""
    out = {}
    for k in KINDS:
        a, b = before.kind(k), after.kind(k)
        out[k] = sorted(i for i in set(a) | set(b) if a.get(i) != b.get(i))
    return out


@dataclass
class Belief:
    """B_t. `goal` = {user_input, specification} (fixed); gaps = [{target, reason}];
    `frontier` = the Active Gap pointer {gap_type, target} or None."""

    goal: dict[str, str]
    world: World = field(default_factory=World)
    epistemic_gaps: list[dict[str, str]] = field(default_factory=list)
    achievement_gaps: list[dict[str, str]] = field(default_factory=list)
    frontier: dict[str, str] | None = None

    def copy(self) -> "Belief":
        return copy.deepcopy(self)

    def gaps(self, gap_type: str) -> list[dict[str, str]]:
        return self.epistemic_gaps if gap_type == "epistemic" else self.achievement_gaps

    def frontier_gap(self) -> dict[str, str] | None:
        """The Active Gap {gap_type, target, reason}, or None."""
        if not self.frontier:
            return None
        for g in self.gaps(self.frontier["gap_type"]):
            if g["target"] == self.frontier["target"]:
                return {"gap_type": self.frontier["gap_type"], "target": g["target"], "reason": g.get("reason", "")}
        return {"gap_type": self.frontier["gap_type"], "target": self.frontier["target"], "reason": ""}

    def reference_ids(self) -> set[str]:
        """Record IDs and gap targets (what a Sentinel issue may target, §5)."""
        ids = set(self.world.entities) | set(self.world.states) | set(self.world.relations)
        return ids | {g["target"] for g in self.epistemic_gaps + self.achievement_gaps}

    def context(self, *, step: int, health: dict[str, Any] | None = None) -> dict[str, Any]:
        """The full structured belief context the belief and Sentinel models read (§3)."""
        return {
            "goal": dict(self.goal),
            "world": self.world.to_dict(),
            "epistemic_gaps": copy.deepcopy(self.epistemic_gaps),
            "achievement_gaps": copy.deepcopy(self.achievement_gaps),
            "health": health or {},
            "frontier": copy.deepcopy(self.frontier),
            "frontier_gap": self.frontier_gap(),
            "step": step,
        }
