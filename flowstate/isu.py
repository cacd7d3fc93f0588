"""Incremental State Update (FlowState §2.2.1, App. B.4; docs/flowstate.md §3):
ΔŜ = Validate_upd(ΔS | P, S_{k,t}) and S⁺ = Commit(S_{k,t}, ΔŜ) (eq. 1).

Invalid operations are dropped one by one (the rest of the delta still commits); every
rejection carries its reason. Pure functions over the structures in `flowstate.repository`."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from flowstate.repository import ActiveState, Repository
from flowstate.state import OPERATIONS, Node, Relation, StateOp, StateType, normalise_type, parse_refs, unknown_labels


RAW_ID = re.compile(r"obs-\d+-\d+-\d+")
"""The runtime's raw-result id scheme (docs/flowstate.md §1.4 [harness choice]); reserved, never a model id."""


class ValidOp(BaseModel):
    """An operation that passed Validate_upd, with its fields normalised."""

    operation: str
    state_id: str
    type: StateType | None = None
    summary: str | None = None
    value: Any = None
    refs: tuple[Relation, ...] | None = None
    fields: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"operation": self.operation, "state_id": self.state_id}
        if "state_set" in self.fields and self.type is not None:
            out["state_set"] = self.type.value
        if "summary" in self.fields:
            out["summary"] = self.summary
        if "value" in self.fields:
            out["value"] = self.value
        if "refs" in self.fields:
            out["refs"] = [r.model_dump() for r in self.refs or ()]
            unknown = unknown_labels(self.refs)
            if unknown:
                out["unknown_relations"] = unknown  # kept, not rejected (B.4 requires only that ids resolve)
        return out


class Rejection(BaseModel):
    index: int
    op: dict[str, Any]
    reason: str


def _summary(op: StateOp) -> tuple[str | None, str | None]:
    if "summary" not in op.fields or op.summary is None:
        return None, None
    if isinstance(op.summary, str):
        return op.summary, None
    return None, "summary must be a string"


def validate_update(
    ops: list[StateOp], active: ActiveState, repo: Repository, *, strict_relations: bool = False
) -> tuple[list[ValidOp], list[Rejection]]:
    """Validate_upd against S_{k,t} (the state before this step), rules of App. B.4:
    1. `add` needs an unused id; 2. `update`/`remove` only on current-request states in S_{k,t};
    3. every ref resolves to a current-request state, a historical state, or a raw-result id
    (a relation label outside the four is kept and flagged, unless `strict_relations`).
    Open points resolved as docs/flowstate.md §3 [harness choice]: "unused" = absent from M_k, this request's
    states (removed included) and raw ids; duplicate adds → first wins; update of a node added in
    the same delta → rejected; refs to ids added in the same delta → allowed, before or after the
    ref in list order, as long as that add itself validates (fixpoint: an add that fails takes
    down the ops whose refs needed it)."""
    same_delta = {
        op.state_id.strip()
        for op in ops
        if isinstance(op.operation, str) and op.operation.strip().lower() == "add" and isinstance(op.state_id, str)
    }
    while True:
        accepted, rejected = _validate_once(ops, active, repo, same_delta, strict_relations)
        added = {v.state_id for v in accepted if v.operation == "add"}
        if added >= same_delta:
            return accepted, rejected
        same_delta = added  # some same-delta add failed: refs to it no longer resolve


def _validate_once(
    ops: list[StateOp], active: ActiveState, repo: Repository, same_delta: set[str], strict_relations: bool = False
) -> tuple[list[ValidOp], list[Rejection]]:
    """One pass of Validate_upd in which refs may name any id in `same_delta` (adds of this delta)."""
    accepted: list[ValidOp] = []
    rejected: list[Rejection] = []
    added: set[str] = set()
    removed_now: set[str] = set()

    def reject(i: int, op: StateOp, reason: str) -> None:
        rejected.append(Rejection(index=i, op=op.as_json(), reason=reason))

    for i, op in enumerate(ops):
        kind = op.operation.strip().lower() if isinstance(op.operation, str) else None
        sid = op.state_id.strip() if isinstance(op.state_id, str) else ""
        if kind not in OPERATIONS:
            reject(i, op, f"unknown operation {op.operation!r} (allowed: {', '.join(OPERATIONS)})")
            continue
        if not sid:
            reject(i, op, "state_id must be a non-empty string")
            continue
        stype = None
        if "state_set" in op.fields and kind != "remove":
            stype = normalise_type(op.state_set)
            if stype is None:
                reject(i, op, f"unknown state_set {op.state_set!r} (allowed: {', '.join(t.value for t in StateType)})")
                continue
        summary, bad = _summary(op)
        if bad:
            reject(i, op, bad)
            continue
        refs: list[Relation] | None = None
        if "refs" in op.fields and kind != "remove":
            refs, bad = parse_refs(op.refs, strict_labels=strict_relations)
            if bad:
                reject(i, op, bad)
                continue
            # Rule 3: refs resolve (ids added anywhere in this delta count, docs/flowstate.md §3).
            dangling = [
                r.state_id
                for r in refs
                if not (
                    r.state_id in active.current
                    or r.state_id in repo
                    or r.state_id in active.raw_pool
                    or r.state_id in same_delta
                )
                or r.state_id in removed_now
            ]
            if dangling:
                reject(i, op, f"refs do not resolve to a valid node id: {', '.join(dangling)}")
                continue
        if kind == "add":
            # Rule 1: unused id.
            if sid in added:
                reject(i, op, f"duplicate add of '{sid}' in this delta (first wins)")
            elif sid in repo:
                reject(i, op, f"id '{sid}' is used by a historical node; choose a fresh id")
            elif sid in active.current or sid in active.removed:
                reject(i, op, f"id '{sid}' is already used in this request; choose a fresh id")
            elif sid in active.raw_pool or RAW_ID.fullmatch(sid):
                reject(i, op, f"id '{sid}' is (or looks like) a raw tool-result id, a reserved form; choose a fresh id")
            elif stype is None:
                reject(i, op, "add needs a state_set (one of the five state types)")
            else:
                added.add(sid)
                accepted.append(
                    ValidOp(
                        operation="add",
                        state_id=sid,
                        type=stype,
                        summary=summary or "",
                        value=op.value if "value" in op.fields else None,
                        refs=tuple(refs or ()),
                        fields=("state_set", "summary", "value", "refs"),
                    )
                )
            continue
        # Rule 2: update/remove only on states in S_{k,t} created in the current request.
        if sid in removed_now:
            reject(i, op, f"'{sid}' was removed earlier in this delta")
        elif sid in active.current:
            if kind == "remove":
                removed_now.add(sid)
                accepted.append(ValidOp(operation="remove", state_id=sid))
            else:
                accepted.append(
                    ValidOp(
                        operation="update",
                        state_id=sid,
                        type=stype,
                        summary=summary,
                        value=op.value,
                        refs=tuple(refs) if refs is not None else None,
                        fields=tuple(f for f in op.fields if f != "summary" or summary is not None),
                    )
                )
        elif sid in active.disclosed or sid in repo:
            reject(i, op, f"'{sid}' is a historical state (read-only); add a new state that refs it instead")
        elif sid in added:
            reject(i, op, f"'{sid}' was added in this same delta and is not yet in the Active State")
        elif sid in active.removed:
            reject(i, op, f"'{sid}' was removed earlier in this request")
        else:
            reject(i, op, f"'{sid}' is not a state of the Active State")
    return accepted, rejected


def commit(active: ActiveState, ops: list[ValidOp]) -> None:
    """Commit(S_{k,t}, ΔŜ) in place, in list order. `update` replaces each supplied field and keeps
    the rest; after a `remove`, refs pointing at the removed node are dropped (docs/flowstate.md §3)."""
    for op in ops:
        if op.operation == "add":
            active.current[op.state_id] = Node(
                state_id=op.state_id,
                request=active.query_id,
                type=op.type,
                summary=op.summary or "",
                value=op.value,
                refs=op.refs or (),
            )
        elif op.operation == "update":
            node = active.current[op.state_id]
            change: dict[str, Any] = {}
            if "state_set" in op.fields and op.type is not None:
                change["type"] = op.type
            if "summary" in op.fields and op.summary is not None:
                change["summary"] = op.summary
            if "value" in op.fields:
                change["value"] = op.value
            if "refs" in op.fields and op.refs is not None:
                change["refs"] = op.refs
            active.current[op.state_id] = node.model_copy(update=change)
        else:
            active.current.pop(op.state_id, None)
            active.removed.add(op.state_id)
    if any(op.operation == "remove" for op in ops):
        for sid, node in list(active.current.items()):
            if any(r.state_id in active.removed for r in node.refs):
                active.current[sid] = node.model_copy(
                    update={"refs": tuple(r for r in node.refs if r.state_id not in active.removed)}
                )
