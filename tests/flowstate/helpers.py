"""Small builders shared by the FlowState tests: a repository with one finished request and an
Active State for the next one, built through the real ISU/Persist code paths."""

from __future__ import annotations

from typing import Any

from flowstate.isu import commit, validate_update
from flowstate.repository import ActiveState, RawObs, Repository
from flowstate.state import StateOp


def ops(*items: dict[str, Any]) -> list[StateOp]:
    return [StateOp.from_json(i) for i in items]


def add(sid: str, type_: str = "knowledge", refs: list[dict[str, str]] | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "state_set": type_,
        "operation": "add",
        "state_id": sid,
        "summary": kw.pop("summary", f"summary of {sid}"),
        "value": kw.pop("value", {"v": sid}),
        "refs": refs or [],
        **kw,
    }


def apply(active: ActiveState, repo: Repository, *items: dict[str, Any]):
    valid, rejected = validate_update(ops(*items), active, repo)
    commit(active, valid)
    return valid, rejected


def history() -> Repository:
    """M_2 after request q1: states h_fact (refs raw obs-1-1-0) and h_plan (refs h_fact);
    raw obs-1-1-1 was not referenced and must not be stored."""
    repo = Repository()
    s = ActiveState("q1")
    s.raw_pool["obs-1-1-0"] = RawObs(state_id="obs-1-1-0", name="search", content="price=42")
    s.raw_pool["obs-1-1-1"] = RawObs(state_id="obs-1-1-1", name="search", content="noise")
    valid, rejected = apply(
        s,
        repo,
        add("h_fact", refs=[{"rel": "supports", "state_id": "obs-1-1-0"}], value={"price": 42}),
        add("h_plan", "judgement", refs=[{"rel": "derives", "state_id": "h_fact"}]),
    )
    assert not rejected
    repo.persist("q1", "first request", list(s.current.values()), s.raw_pool)
    return repo
