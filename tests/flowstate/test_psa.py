"""PSA (docs/flowstate.md §4): eq. 5 access validation against S_{k,t}, Disclose semantics."""

from __future__ import annotations

from flowstate.psa import disclose, validate_access
from flowstate.repository import ActiveState, HistoricalIndex, RawObs
from tests.flowstate.helpers import add, apply, history


def setup():
    repo = history()
    return repo, HistoricalIndex(repo), ActiveState("q2")


def test_eq5_index_ids_granted_others_rejected():
    repo, idx, s = setup()
    res = validate_access(["h_plan", "obs-1-1-0", "ghost", "h_plan"], idx, s, repo)
    assert res.requested == ["h_plan", "obs-1-1-0", "ghost"]  # duplicates counted once
    assert res.granted == ["h_plan"]
    assert {r["state_id"] for r in res.rejected} == {"obs-1-1-0", "ghost"}


def test_raw_ref_unlocked_only_via_active_state_before_step():
    repo, idx, s = setup()
    # A ref added in this step's delta does not unlock access in the same step (checked on S_{k,t}).
    res = validate_access(["obs-1-1-0"], idx, s, repo)
    apply(s, repo, add("cite", refs=[{"rel": "supports", "state_id": "obs-1-1-0"}]))
    assert res.granted == []
    # Next step: S_{k,t+1} holds the citing state → granted and disclosed with raw content.
    res = validate_access(["obs-1-1-0"], idx, s, repo)
    assert res.granted == ["obs-1-1-0"]
    disclose(res, s, repo)
    assert s.disclosed["obs-1-1-0"].value == "price=42" and s.disclosed["obs-1-1-0"].raw


def test_disclose_relations_without_related_content():
    repo, idx, s = setup()
    res = validate_access(["h_plan"], idx, s, repo)
    disclose(res, s, repo)
    view = s.render(repo)
    assert [v["state_id"] for v in view] == ["h_plan"]
    assert view[0]["related_states"] == [{"state_id": "h_fact", "rel": "derives"}]
    assert "h_fact" not in s and "price" not in str(view)
    # disclosed historical raw ref becomes accessible through ToolRefs of a disclosed node
    res = validate_access(["h_fact"], idx, s, repo)
    disclose(res, s, repo)
    res = validate_access(["obs-1-1-0"], idx, s, repo)
    assert res.granted == ["obs-1-1-0"]


def test_already_visible_request_ignored_and_recorded():
    repo, idx, s = setup()
    disclose(validate_access(["h_fact"], idx, s, repo), s, repo)
    res = validate_access(["h_fact"], idx, s, repo)
    out = disclose(res, s, repo)
    assert out == [] and res.ignored[0]["state_id"] == "h_fact" and "already visible" in res.ignored[0]["reason"]


def test_current_request_raw_not_in_m_unless_switch():
    """No dead end: a tool ref to a current-request raw result passes eq. 5, but Disclose reads M_k
    only, so the access is refused with the reason instead of being granted and silently dropped;
    with `disclose_current_request_observations` it is granted and discloses."""
    repo, idx, s = setup()
    s.raw_pool["obs-2-1-0"] = RawObs(state_id="obs-2-1-0", name="t", content="fresh")
    apply(s, repo, add("c", refs=[{"rel": "supports", "state_id": "obs-2-1-0"}]))
    res = validate_access(["obs-2-1-0"], idx, s, repo)
    assert res.granted == [] and "not in the repository M_k" in res.rejected[0]["reason"]
    assert disclose(res, s, repo) == [] and res.ignored == []
    res = validate_access(["obs-2-1-0"], idx, s, repo, current_observations=True)
    assert res.granted == ["obs-2-1-0"]
    assert [n.value for n in disclose(res, s, repo, current_observations=True)] == ["fresh"]


def test_incoming_relations_switch():
    repo, idx, s = setup()
    disclose(validate_access(["h_fact"], idx, s, repo), s, repo)
    assert s.render(repo)[0]["related_states"] == [{"state_id": "obs-1-1-0", "rel": "supports"}]
    inc = s.render(repo, incoming=True)[0]["related_states"]
    assert {"state_id": "h_plan", "rel": "derives", "direction": "incoming"} in inc


def test_eq5_rejects_raw_ids_no_active_node_references():
    """ToolRefs(S_{k,t}) holds only raw ids some Active State node cites: a raw result sitting in
    the current request's pool, one that was never stored, or one only a non-raw ref names, is rejected."""
    repo, idx, s = setup()
    s.raw_pool["obs-2-1-0"] = RawObs(state_id="obs-2-1-0", name="t", content="uncited")
    s.raw_pool["obs-2-1-1"] = RawObs(state_id="obs-2-1-1", name="t", content="cited")
    apply(s, repo, add("c", refs=[{"rel": "supports", "state_id": "obs-2-1-1"}]))
    apply(s, repo, add("d", refs=[{"rel": "derives", "state_id": "c"}]))  # a state ref, not a raw result
    asked = ["obs-2-1-0", "obs-2-1-1", "obs-1-1-1", "obs-1-1-0", "c"]
    res = validate_access(asked, idx, s, repo, current_observations=True)  # Disclose may read the current pool
    assert res.granted == ["obs-2-1-1"]
    assert [r["state_id"] for r in res.rejected] == ["obs-2-1-0", "obs-1-1-1", "obs-1-1-0", "c"]
    # Faithful default: Disclose reads M_k only, so the cited current-request result is refused with
    # the reason rather than granted and silently not disclosed (no access dead end).
    res = validate_access(asked, idx, s, repo)
    assert res.granted == [] and "obs-2-1-1" in [r["state_id"] for r in res.rejected]
