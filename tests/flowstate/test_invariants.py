"""Property tests (hypothesis): random proposed deltas and access requests over several requests
keep the invariants of docs/flowstate.md §1, §3, §4, §6."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from flowstate.isu import commit, validate_update
from flowstate.psa import disclose, validate_access
from flowstate.repository import ActiveState, HistoricalIndex, RawObs, Repository
from flowstate.state import StateOp

POOL = ["a", "b", "c", "d", "e"]


def ids_for(k: int):
    # ids of this request, of earlier requests, and raw ids (existing or not)
    return st.one_of(
        st.sampled_from(POOL).map(lambda s: f"{s}{k}"),
        st.sampled_from(POOL).map(lambda s: f"{s}{max(1, k - 1)}"),
        st.builds(lambda kk, t, i: f"obs-{kk}-{t}-{i}", st.integers(1, k), st.integers(1, 3), st.integers(0, 1)),
    )


def op_for(k: int):
    ref = st.fixed_dictionaries(
        {"rel": st.sampled_from(["supports", "derives", "follows", "supersedes", "bogus"]), "state_id": ids_for(k)}
    )
    return st.fixed_dictionaries(
        {"operation": st.sampled_from(["add", "add", "update", "remove", "nope"]), "state_id": ids_for(k)},
        optional={
            "state_set": st.sampled_from(["knowledge", "judgement", "artifacts", "weird"]),
            "summary": st.text(max_size=5),
            "value": st.integers(),
            "refs": st.lists(ref, max_size=3),
        },
    )


@st.composite
def episodes(draw):
    reqs = []
    for k in range(1, draw(st.integers(1, 4)) + 1):
        steps = [
            (draw(st.lists(op_for(k), max_size=5)), draw(st.lists(ids_for(k), max_size=3)), draw(st.integers(0, 2)))
            for _ in range(draw(st.integers(1, 3)))
        ]
        reqs.append(steps)
    return reqs


def resolves(target: str, repo: Repository, s: ActiveState | None = None) -> bool:
    return target in repo or (s is not None and (target in s.current or target in s.raw_pool))


# The episodes strategy draws up to 4 requests × 3 steps of nested ops: on a loaded machine drawing them
# takes longer than Hypothesis' too_slow health check allows, which is a property of the machine, not a
# failure of the invariants (no deadline for the same reason).
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episodes())
def test_invariants_hold(reqs):
    repo = Repository()
    for k, steps in enumerate(reqs, start=1):
        qid = f"q{k}"
        idx, s = HistoricalIndex(repo), ActiveState(qid)
        granted_ever: set[str] = set()
        for t, (delta, focus, n_raw) in enumerate(steps, start=1):
            for i in range(n_raw):
                rid = f"obs-{k}-{t}-{i}"
                s.raw_pool[rid] = RawObs(state_id=rid, name="tool", content=f"content {rid}")
            snapshot = dict(repo.nodes)
            before_visible = set(s.current) | set(s.disclosed)
            valid, rejected = validate_update([StateOp.from_json(o) for o in delta], s, repo)
            access = validate_access(focus, idx, s, repo)
            commit(s, valid)
            disclose(access, s, repo)
            granted_ever |= set(access.granted)
            # historical nodes never change
            assert repo.nodes == snapshot and all(repo.nodes[i] is snapshot[i] for i in snapshot)
            assert all(n is repo.nodes[i] for i, n in s.disclosed.items())
            # ids unique across current states, history and raw ids
            assert not (set(s.current) & set(repo.nodes)) and not (set(s.current) & set(s.raw_pool))
            # every relation of a current state resolves
            assert all(resolves(r.state_id, repo, s) for n in s.current.values() for r in n.refs)
            # no undisclosed historical content in the Active State; Disclose reveals only what was granted
            assert set(s.disclosed) <= granted_ever
            assert set(access.disclosed) == {g for g in access.granted if g not in before_visible and g in repo}
            rendered = {v["state_id"] for v in s.render(repo)}
            assert rendered == set(s.current) | set(s.disclosed)
            assert len(valid) + len(rejected) == len(delta)
        repo.persist(qid, f"request {k}", list(s.current.values()), s.raw_pool)
        # every relation in M resolves, and every persisted raw node is referenced
        assert all(r.state_id in repo for n in repo.nodes.values() for r in n.refs)
        referenced = {r.state_id for n in repo.nodes.values() for r in n.refs}
        assert all(i in referenced for i, n in repo.nodes.items() if n.raw)
