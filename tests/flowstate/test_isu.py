"""ISU execution rules of App. B.4 (docs/flowstate.md §3): each rule with a rejected and a passing case."""

from __future__ import annotations

from flowstate.repository import ActiveState, RawObs
from flowstate.isu import validate_update
from flowstate.state import StateOp, StateType
from tests.flowstate.helpers import add, apply, history


def fresh():
    repo = history()
    s = ActiveState("q2")
    s.raw_pool["obs-2-1-0"] = RawObs(state_id="obs-2-1-0", name="t", content="c")
    return repo, s


def test_add_needs_unused_id():
    repo, s = fresh()
    valid, rej = apply(s, repo, add("new_a"))
    assert [v.state_id for v in valid] == ["new_a"] and not rej
    for used in ("new_a", "h_fact", "obs-2-1-0", "obs-1-1-0", "obs-9-9-9"):
        valid, rej = apply(s, repo, add(used))
        assert not valid and len(rej) == 1 and used in rej[0].reason
    assert repo.get("h_fact").value == {"price": 42}  # history untouched


def test_removed_id_is_not_reusable_in_request():
    repo, s = fresh()
    apply(s, repo, add("x"))
    valid, rej = apply(s, repo, {"operation": "remove", "state_id": "x"})
    assert valid and not rej and "x" not in s.current
    valid, rej = apply(s, repo, add("x"))
    assert not valid and "already used" in rej[0].reason


def test_duplicate_add_first_wins():
    repo, s = fresh()
    valid, rej = apply(s, repo, add("d", value=1), add("d", value=2))
    assert len(valid) == 1 and s.current["d"].value == 1 and "duplicate" in rej[0].reason


def test_update_and_remove_only_current_request_states():
    repo, s = fresh()
    s.disclosed["h_fact"] = repo.get("h_fact")
    for op in ("update", "remove"):
        valid, rej = apply(s, repo, {"operation": op, "state_id": "h_fact", "summary": "changed"})
        assert not valid and "read-only" in rej[0].reason
        valid, rej = apply(s, repo, {"operation": op, "state_id": "never_seen"})
        assert not valid and "not a state" in rej[0].reason
    assert s.disclosed["h_fact"].summary == "summary of h_fact" and repo.get("h_fact").summary == "summary of h_fact"
    apply(s, repo, add("mine", summary="old", value={"a": 1}))
    valid, rej = apply(s, repo, {"operation": "update", "state_id": "mine", "summary": "new"})
    assert valid and not rej
    # update replaces supplied fields only
    assert s.current["mine"].summary == "new" and s.current["mine"].value == {"a": 1}
    assert s.current["mine"].request == "q2"


def test_update_of_node_added_in_same_delta_is_rejected():
    repo, s = fresh()
    valid, rej = apply(s, repo, add("n"), {"operation": "update", "state_id": "n", "summary": "x"})
    assert [v.operation for v in valid] == ["add"] and "same delta" in rej[0].reason


def test_refs_must_resolve():
    repo, s = fresh()
    valid, rej = apply(s, repo, add("bad", refs=[{"rel": "supports", "state_id": "ghost"}]))
    assert not valid and "ghost" in rej[0].reason
    valid, rej = apply(s, repo, add("odd", refs=[{"rel": " Causes", "state_id": "h_fact"}]))
    assert not rej and valid[0].refs[0].rel == "causes"  # B.4 asks only that ids resolve: the label is kept
    assert valid[0].as_json()["unknown_relations"] == ["causes"]
    valid, rej = validate_update(
        [StateOp.from_json(add("bad2", refs=[{"rel": "causes", "state_id": "h_fact"}]))], s, repo, strict_relations=True
    )
    assert not valid and "unknown relation" in rej[0].reason
    # historical state, raw id of this request, historical raw node, id added earlier in the delta
    valid, rej = apply(
        s,
        repo,
        add("a1"),
        add(
            "ok",
            refs=[
                {"rel": "supports", "state_id": "h_fact"},
                {"rel": "derives", "state_id": "obs-2-1-0"},
                {"rel": "follows", "state_id": "obs-1-1-0"},
                {"rel": "supersedes", "state_id": "a1"},
            ],
        ),
    )
    assert len(valid) == 2 and not rej
    # unreferenced historical raw result never entered M, so it does not resolve
    valid, rej = apply(s, repo, add("bad3", refs=[{"rel": "supports", "state_id": "obs-1-1-1"}]))
    assert not valid


def test_partial_commit_and_reasons_recorded():
    repo, s = fresh()
    valid, rej = apply(
        s,
        repo,
        add("good1"),
        {"operation": "update", "state_id": "h_plan", "summary": "x"},
        {"operation": "explode", "state_id": "y"},
        add("bad_type", "feelings"),
        add("good2", "preference"),
    )
    assert [v.state_id for v in valid] == ["good1", "good2"]
    assert [r.index for r in rej] == [1, 2, 3] and all(r.reason for r in rej)
    assert s.current["good2"].type is StateType.preferences  # singular name normalised


def test_remove_drops_refs_to_removed_node():
    repo, s = fresh()
    apply(
        s,
        repo,
        add("base"),
        add("user", refs=[{"rel": "derives", "state_id": "base"}, {"rel": "supports", "state_id": "h_fact"}]),
    )
    valid, rej = apply(s, repo, {"operation": "remove", "state_id": "base"})
    assert valid and [r.state_id for r in s.current["user"].refs] == ["h_fact"]
    valid, rej = apply(s, repo, add("late", refs=[{"rel": "derives", "state_id": "base"}]))
    assert not valid and "base" in rej[0].reason


def test_refs_to_ids_added_later_in_same_delta():
    # docs/flowstate.md §3 [harness choice]: refs to ids added in the same delta are allowed, whatever their order
    repo, s = fresh()
    valid, rej = apply(s, repo, add("plan", "judgement", refs=[{"rel": "derives", "state_id": "fact"}]), add("fact"))
    assert [v.state_id for v in valid] == ["plan", "fact"] and not rej
    assert [r.state_id for r in s.current["plan"].refs] == ["fact"]
    # ... but only to adds that validate themselves: a failing add takes down the refs that need it
    valid, rej = apply(
        s,
        repo,
        add("p2", refs=[{"rel": "derives", "state_id": "f2"}]),
        add("f2", "feelings"),
        add("p3", refs=[{"rel": "follows", "state_id": "p2"}]),
    )
    assert not valid and [r.index for r in rej] == [0, 1, 2]
    assert "f2" in rej[0].reason and "p2" in rej[2].reason
    assert set(s.current) == {"plan", "fact"}
