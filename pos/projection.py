"""Subgraphs of the world (docs/pos.md §4, §7; both exist and differ on purpose) and the semantic view
the Belief Text is written from (§4, upstream `belief/textualizer.py`)."""

from __future__ import annotations

import json
from typing import Any

from pos.text import focus_tokens, tokens
from pos.world import KINDS, World

Lists = dict[str, list[dict[str, Any]]]


def _s(rec: dict[str, Any], key: str) -> str:
    v = rec.get(key)
    return v if isinstance(v, str) else ("" if v is None else str(v))


def project_on_gap(world: Lists, gap: dict[str, Any] | None) -> Lists:
    """§7.1 gap projection of a list-shaped world onto an Active Gap {target, reason}. Single pass:
    states of entities added late (owners of hit states, relation endpoints) are not added.
    No Active Gap ⇒ the full world."""
    if not gap:
        return {k: list(world.get(k, [])) for k in KINDS}
    focus = tokens(_s(gap, "target")) | tokens(_s(gap, "reason"))
    ents, states, rels = world.get("entities", []), world.get("states", []), world.get("relations", [])
    sel_e = {_s(e, "entity_id") for e in ents if (tokens(_s(e, "name")) | tokens(_s(e, "entity_type"))) & focus}
    sel_s = set()
    for s in states:
        if _s(s, "entity_id") in sel_e or tokens(_s(s, "description")) & focus:
            sel_s.add(_s(s, "state_id"))
    sel_e |= {_s(s, "entity_id") for s in states if _s(s, "state_id") in sel_s}
    nodes = sel_e | sel_s
    sel_r = set()
    for r in rels:
        if _s(r, "source_id") in nodes or _s(r, "target_id") in nodes or tokens(_s(r, "description")) & focus:
            sel_r.add(_s(r, "relation_id"))
    state_ids = {_s(s, "state_id") for s in states}
    for r in rels:
        if _s(r, "relation_id") in sel_r:
            for end in (_s(r, "source_id"), _s(r, "target_id")):
                (sel_s if end in state_ids else sel_e).add(end)
    return {
        "entities": [e for e in ents if _s(e, "entity_id") in sel_e],
        "states": [s for s in states if _s(s, "state_id") in sel_s],
        "relations": [r for r in rels if _s(r, "relation_id") in sel_r],
    }


def frontier_subgraph(world: World, active_gap: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """§4 frontier-relevant world (policy prompt). Focus = §4 tokens of the JSON dump of the
    Active Gap dict; entities hit by id+name+type; states owned by a selected entity or hit by
    id+description; relations touching a selected node or hit by id+description; endpoints
    added; then every state of every selected entity. No Active Gap ⇒ empty subgraph.
    [harness choice] the dump uses ensure_ascii=False (upstream unknown)."""
    empty: dict[str, dict[str, Any]] = {k: {} for k in KINDS}
    if not active_gap:
        return empty
    focus = focus_tokens(json.dumps(active_gap, ensure_ascii=False))
    hit = lambda *parts: bool(focus_tokens(" ".join(parts)) & focus)  # noqa: E731
    sel_e = {i for i, e in world.entities.items() if hit(i, _s(e, "name"), _s(e, "entity_type"))}
    sel_s = {i for i, s in world.states.items() if s["entity_id"] in sel_e or hit(i, _s(s, "description"))}
    nodes = sel_e | sel_s
    sel_r = {
        i
        for i, r in world.relations.items()
        if r["source_id"] in nodes or r["target_id"] in nodes or hit(i, _s(r, "description"))
    }
    for i in sel_r:
        for end in (world.relations[i]["source_id"], world.relations[i]["target_id"]):
            (sel_s if end in world.states else sel_e).add(end)
    sel_s |= {i for i, s in world.states.items() if s["entity_id"] in sel_e}
    d = world.to_dict()
    return {
        "entities": {i: d["entities"][i] for i in d["entities"] if i in sel_e},
        "states": {i: d["states"][i] for i in d["states"] if i in sel_s},
        "relations": {i: d["relations"][i] for i in d["relations"] if i in sel_r},
    }


def semantic_view(world: World) -> list[dict[str, Any]]:
    """Connected components of entities via relations (a state stands for its owner), agent-type
    entities first; each entity carries its states; relations have both endpoints expanded."""
    owner = lambda node: world.states[node]["entity_id"] if node in world.states else node  # noqa: E731
    parent = {e: e for e in world.entities}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in world.relations.values():
        a, b = owner(r["source_id"]), owner(r["target_id"])
        if a in parent and b in parent:
            parent[find(a)] = find(b)
    is_agent = lambda e: _s(world.entities[e], "entity_type").casefold() == "agent"  # noqa: E731
    groups: dict[str, list[str]] = {}
    for e in sorted(world.entities, key=lambda e: not is_agent(e)):
        groups.setdefault(find(e), []).append(e)
    comps = sorted(groups.values(), key=lambda g: not any(is_agent(e) for e in g))

    def brief(node: str) -> dict[str, Any]:
        if node in world.states:
            s = world.states[node]
            return {
                "state_id": node,
                "of": _s(world.entities.get(s["entity_id"], {}), "name"),
                "description": s["description"],
            }
        e = world.entities.get(node, {})
        return {"entity_id": node, "name": _s(e, "name"), "entity_type": _s(e, "entity_type")}

    out = []
    for comp in comps:
        members = set(comp)
        ents = []
        for e in comp:
            rec = dict(world.to_dict()["entities"][e])
            rec["states"] = [s for s in world.states.values() if s["entity_id"] == e]
            ents.append(rec)
        rels = [
            {
                "relation_id": i,
                "source": brief(r["source_id"]),
                "description": r["description"],
                "target": brief(r["target_id"]),
                "probability": r["probability"],
                "source_type": r["source_type"],
                "reason": r["reason"],
            }
            for i, r in world.relations.items()
            if owner(r["source_id"]) in members
        ]
        out.append({"entities": ents, "relations": rels})
    return out
