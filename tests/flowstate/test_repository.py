"""Persist and Index at request end (eq. 4; docs/flowstate.md §1.4, §6)."""

from __future__ import annotations

import pytest

from flowstate.repository import ActiveState, HistoricalIndex, RawObs, Repository
from flowstate.state import Node, StateType
from tests.flowstate.helpers import add, apply, history


def test_persist_keeps_final_states_and_referenced_raw_only():
    repo = history()
    assert set(repo.nodes) == {"h_fact", "h_plan", "obs-1-1-0"}
    raw = repo.get("obs-1-1-0")
    assert raw.raw and raw.type is StateType.knowledge and raw.request == "q1" and raw.value == "price=42"
    assert repo.get("h_plan").request == "q1"


def test_index_grouped_by_request_ids_and_summaries_only():
    repo = history()
    s = ActiveState("q2")
    apply(s, repo, add("v1", summary="draft"), add("gone"))
    apply(
        s,
        repo,
        {"operation": "update", "state_id": "v1", "summary": "final"},
        {"operation": "remove", "state_id": "gone"},
    )
    repo.persist("q2", "second", list(s.current.values()), s.raw_pool)
    idx = HistoricalIndex(repo)
    assert idx.entries == [
        {
            "user_query": "first request",
            "query_id": "q1",
            "states": [
                {"state_id": "h_fact", "summary": "summary of h_fact"},
                {"state_id": "h_plan", "summary": "summary of h_plan"},
            ],
        },
        {"user_query": "second", "query_id": "q2", "states": [{"state_id": "v1", "summary": "final"}]},
    ]
    assert "obs-1-1-0" not in idx.ids and "gone" not in repo and "value" not in idx.text


def test_persist_drops_refs_to_unpersisted_states_and_never_overwrites():
    repo = Repository()
    s = ActiveState("q1")
    s.raw_pool["obs-1-1-0"] = RawObs(state_id="obs-1-1-0", name="t", content="c")
    apply(
        s,
        repo,
        add("keep", "judgements"),
        add("drop", "knowledge", refs=[{"rel": "supports", "state_id": "obs-1-1-0"}]),
        add("k2", "judgements", refs=[{"rel": "derives", "state_id": "drop"}, {"rel": "derives", "state_id": "keep"}]),
    )
    kept = [n for n in s.current.values() if n.type is StateType.judgements]  # retention rule: judgements only
    repo.persist("q1", "t", kept, s.raw_pool)
    assert set(repo.nodes) == {"keep", "k2"}  # raw result only referenced by a dropped state is not stored
    assert [r.state_id for r in repo.get("k2").refs] == ["keep"]
    with pytest.raises(ValueError, match="immutable"):
        repo.persist("q2", "t", [Node(state_id="keep", request="q2", type=StateType.knowledge)], {})
