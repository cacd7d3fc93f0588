"""Belief records, delta application, gap equivalence/stabilisation/identity, frontier selection
and the two subgraph projections (docs/pos.md §1, §3, §4, §7)."""

from __future__ import annotations

import pytest

from pos.gaps import StableGapIdentityTracker, frontier_changed, select_frontier, stabilize_targets
from pos.projection import frontier_subgraph, project_on_gap, semantic_view
from pos.text import gaps_semantically_equivalent, norm
from pos.world import Belief, BuildError, World, changed_ids


def base_world() -> World:
    return World().apply(
        {
            "upsert_entities": [
                {"entity_id": "e1", "entity_type": "agent", "name": "agent"},
                {"entity_id": "e2", "entity_type": "receptacle", "name": "drawer 1", "attributes": {"color": "red"}},
                {"entity_id": "e3", "entity_type": "object", "name": "key 1"},
            ],
            "upsert_states": [
                {"state_id": "s1", "entity_id": "e2", "description": "closed"},
                {
                    "state_id": "s2",
                    "entity_id": "e3",
                    "description": "possibly stored nearby",
                    "source_type": "inferred",
                    "probability": 0.4,
                    "reason": "keys are kept in drawers",
                },
            ],
            "upsert_relations": [
                {
                    "relation_id": "r1",
                    "src": "e3",
                    "dst": "e2",
                    "relation_type": "inside",
                    "source_type": "inferred",
                    "probability": 0.4,
                }
            ],
        }
    )


# ----------------------------------------------------------------------------- world
def test_apply_maps_aliases_and_forces_observed_provenance():
    w = World().apply(
        {
            "upsert_entities": [{"entity_id": "e1", "entity_type": "x", "name": "x"}],
            "upsert_states": [
                {"state_id": "s1", "entity_id": "e1", "description": "on", "probability": 0.2, "reason": "why"}
            ],
        }
    )
    assert (
        w.states["s1"]["probability"] == 1.0
        and w.states["s1"]["reason"] is None
        and w.states["s1"]["source_type"] == "observed"
    )
    w = base_world()
    assert (
        w.relations["r1"]["source_id"] == "e3"
        and w.relations["r1"]["target_id"] == "e2"
        and w.relations["r1"]["description"] == "inside"
    )
    assert w.relations["r1"]["probability"] == 0.4 and w.states["s2"]["reason"] == "keys are kept in drawers"


def test_attributes_merge_and_null_deletes_and_to_dict_omits_empty():
    w = base_world().apply({"upsert_entities": [{"entity_id": "e2", "attributes": {"color": None, "size": 3}}]})
    assert w.entities["e2"]["attributes"] == {"size": 3} and w.entities["e2"]["name"] == "drawer 1"
    assert "attributes" not in w.to_dict()["entities"]["e1"]
    with pytest.raises(BuildError, match="4096"):
        World().apply(
            {"upsert_entities": [{"entity_id": "e1", "entity_type": "x", "name": "x", "attributes": {"k": "v" * 5000}}]}
        )
    with pytest.raises(BuildError, match="scalar|string, number"):
        World().apply(
            {"upsert_entities": [{"entity_id": "e1", "entity_type": "x", "name": "x", "attributes": {"k": [1]}}]}
        )


def test_removing_a_state_removes_its_relations_and_entities_stay():
    w = base_world().apply(
        {"upsert_relations": [{"relation_id": "r2", "source_id": "s1", "target_id": "e1", "description": "seen by"}]}
    )
    w2 = w.apply({"remove_state_ids": ["s1"], "remove_relation_ids": ["r1"]})
    assert "s1" not in w2.states and "r2" not in w2.relations and "r1" not in w2.relations
    assert set(w2.entities) == {"e1", "e2", "e3"}
    assert changed_ids(w, w2) == {"entities": [], "states": ["s1"], "relations": ["r1", "r2"]}
    assert "s1" in w.states  # apply works on a copy


def test_missing_endpoint_and_owner_fail_to_build():
    with pytest.raises(BuildError, match="endpoint 'e9'"):
        base_world().apply(
            {"upsert_relations": [{"relation_id": "r5", "source_id": "e1", "target_id": "e9", "description": "x"}]}
        )
    with pytest.raises(BuildError, match="owner entity 'e9'"):
        base_world().apply({"upsert_states": [{"state_id": "s9", "entity_id": "e9", "description": "x"}]})
    with pytest.raises(BuildError, match="probability"):
        base_world().apply(
            {
                "upsert_states": [
                    {
                        "state_id": "s9",
                        "entity_id": "e1",
                        "description": "x",
                        "source_type": "inferred",
                        "probability": 2,
                    }
                ]
            }
        )


# ----------------------------------------------------------------------------- gaps
def test_gap_equivalence_hand_computed():
    assert norm("  Find  the KEY ") == "find the key"
    assert gaps_semantically_equivalent("Find the KEY", "find  the key")  # equal norms
    # tokens {find, key} vs {find, key, 1}: 0.7·2/2 + 0.3·2/3 = 0.9 ≥ 0.8
    assert gaps_semantically_equivalent("find the key", "find key 1")
    # {locate, mug} vs {find, mug}: 0.7·1/2 + 0.3·1/3 = 0.45
    assert not gaps_semantically_equivalent("locate the mug", "find the mug")
    assert not gaps_semantically_equivalent("key", "the key gap")  # < 2 tokens after stopwords


def test_target_stabilisation_needs_exactly_one_unused_match():
    prev = [{"target": "find the key", "reason": "old"}]
    out = stabilize_targets(
        [{"target": "find key 1", "reason": "new"}, {"target": "find the key 1", "reason": "dup"}], prev
    )
    assert out == [{"target": "find the key", "reason": "new"}, {"target": "find the key 1", "reason": "dup"}]
    two = [{"target": "find the key", "reason": ""}, {"target": "find key 1", "reason": ""}]
    assert (
        stabilize_targets([{"target": "find the key 1", "reason": ""}], two)[0]["target"] == "find the key 1"
    )  # ambiguous


def test_stable_identities_and_returning_gap_gets_new_id():
    t = StableGapIdentityTracker()
    assert t.reconcile("achievement", [{"target": "open the drawer"}, {"target": "take the key"}]) == ["a:1", "a:2"]
    assert t.reconcile("achievement", [{"target": "take key 1"}, {"target": "open the drawer"}]) == ["a:2", "a:1"]
    assert t.reconcile("achievement", [{"target": "take the key"}]) == ["a:2"]
    assert t.reconcile("achievement", [{"target": "take the key"}, {"target": "open the drawer"}]) == ["a:2", "a:3"]
    assert t.reconcile("epistemic", [{"target": "where is the key"}]) == ["e:1"]


def test_frontier_selection_order():
    e = [{"target": "where is the key", "reason": ""}]
    a = [{"target": "open the drawer", "reason": ""}, {"target": "take the key", "reason": ""}]
    prev = {"gap_type": "achievement", "target": "take key"}  # resolves to "take the key"
    assert select_frontier(prev, {"gap_type": "epistemic", "target": "where is the key"}, e, a) == {
        "gap_type": "achievement",
        "target": "take the key",
    }
    assert (
        select_frontier(None, {"gap_type": "achievement", "target": "open the drawer"}, e, a)["target"]
        == "open the drawer"
    )
    assert select_frontier(None, {"gap_type": "achievement", "target": "nothing like it"}, e, a) == {
        "gap_type": "epistemic",
        "target": "where is the key",
    }
    assert select_frontier(None, None, [], a)["target"] == "open the drawer"
    assert select_frontier(prev, None, [], []) is None
    assert not frontier_changed(
        {"gap_type": "achievement", "target": "take key"}, {"gap_type": "achievement", "target": "take the key"}
    )
    assert frontier_changed(
        {"gap_type": "achievement", "target": "take the key"}, {"gap_type": "epistemic", "target": "take the key"}
    )


# ----------------------------------------------------------------------------- projections
def test_gap_projection_single_pass():
    w = base_world().as_lists()
    p = project_on_gap(w, {"target": "open drawer", "reason": "it is closed"})
    # entity e2 hits by name; s1 (owner e2; "closed" also hits); r1 touches e2 → endpoint e3 added,
    # but e3's state s2 is not (single pass)
    assert [e["entity_id"] for e in p["entities"]] == ["e2", "e3"]
    assert [s["state_id"] for s in p["states"]] == ["s1"]
    assert [r["relation_id"] for r in p["relations"]] == ["r1"]
    assert project_on_gap(w, None) == w


def test_frontier_subgraph_adds_all_states_of_selected_entities():
    gap = {"gap_type": "achievement", "target": "open drawer", "reason": "it is shut"}
    sub = frontier_subgraph(base_world(), gap)
    assert set(sub["entities"]) == {"e2", "e3"} and set(sub["relations"]) == {"r1"}
    assert set(sub["states"]) == {"s1", "s2"}  # s2 comes in with endpoint entity e3
    assert frontier_subgraph(base_world(), None) == {"entities": {}, "states": {}, "relations": {}}
    # the gap type is a focus token: an entity typed "achievement" is selected
    w = World().apply({"upsert_entities": [{"entity_id": "e1", "entity_type": "achievement", "name": "zzz"}]})
    assert set(frontier_subgraph(w, gap)["entities"]) == {"e1"}


def test_semantic_view_groups_components_agent_first():
    view = semantic_view(base_world())
    assert view[0]["entities"][0]["entity_id"] == "e1"  # agent's component first
    assert {e["entity_id"] for e in view[1]["entities"]} == {"e2", "e3"}
    assert view[1]["relations"][0]["source"]["name"] == "key 1"


def test_belief_frontier_gap_and_reference_ids():
    b = Belief(
        goal={"user_input": "u", "specification": ""},
        world=base_world(),
        achievement_gaps=[{"target": "open drawer", "reason": "shut"}],
        frontier={"gap_type": "achievement", "target": "open drawer"},
    )
    assert b.frontier_gap() == {"gap_type": "achievement", "target": "open drawer", "reason": "shut"}
    assert {"e1", "s2", "r1", "open drawer"} <= b.reference_ids()
