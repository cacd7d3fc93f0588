"""Progressive State Access (FlowState §2.2.2, App. B.4; docs/flowstate.md §4):
R̂ = Validate_acc(R | P, G_k, S_{k,t}) (eq. 5) and S_{k,t+1} = S⁺ ∪ Disclose(M_k, S_{k,t}, R̂) (eq. 2)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from flowstate.repository import ActiveState, HistoricalIndex, Repository
from flowstate.state import Node, StateType


class AccessResult(BaseModel):
    """What became of one step's access request R_{k,t} (logged per step)."""

    requested: list[str] = Field(default_factory=list)
    granted: list[str] = Field(default_factory=list, description="R̂: passed eq. 5")
    rejected: list[dict[str, str]] = Field(default_factory=list, description="[{state_id, reason}] failing eq. 5")
    ignored: list[dict[str, str]] = Field(
        default_factory=list, description="[{state_id, reason}] granted but nothing to disclose"
    )
    disclosed: list[str] = Field(default_factory=list, description="ids whose content entered S_{k,t+1}")


CURRENT_RAW = (
    "a raw result of the current request: it was shown in latest_observation when it arrived and is not in the "
    "repository M_k, so there is nothing to disclose (record what you need from it in state_delta)"
)


def validate_access(
    requested: list[str],
    index: HistoricalIndex,
    active: ActiveState,
    repo: Repository,
    *,
    current_observations: bool = False,
) -> AccessResult:
    """Eq. 5: R̂ ⊆ R ∩ (IDs(G_k) ∪ ToolRefs(S_{k,t})). Checked against S_{k,t}, so a ref added by
    this step's delta does not unlock access in the same step (docs/flowstate.md §4). A granted access always
    discloses (or the id is already visible): a tool ref to a current-request raw result, which
    Disclose cannot read from M_k, is refused here with the reason, unless `current_observations`."""
    res = AccessResult()
    seen: set[str] = set()
    tool_refs: set[str] | None = None
    for rid in requested:
        if rid in seen:
            continue
        seen.add(rid)
        res.requested.append(rid)
        if rid in index.ids:
            res.granted.append(rid)
            continue
        if tool_refs is None:
            tool_refs = active.tool_refs(repo)
        if rid in tool_refs:
            if repo.get(rid) is None and rid in active.raw_pool and not current_observations and rid not in active:
                res.rejected.append({"state_id": rid, "reason": CURRENT_RAW})
                continue
            res.granted.append(rid)
        else:
            res.rejected.append(
                {
                    "state_id": rid,
                    "reason": "not in the Historical State Index and not a raw result referenced by an Active State "
                    "node",
                }
            )
    return res


def disclose(
    res: AccessResult, active: ActiveState, repo: Repository, *, current_observations: bool = False
) -> list[Node]:
    """Disclose(M_k, S_{k,t}, R̂), applied to `active` in place: the contents and own outgoing
    relations (ids only, never the related nodes' contents) of granted ids not already visible.
    Reads M_k only; a current-request raw result is not in M_k and discloses nothing unless
    `current_observations` ([harness choice] `disclose_current_request_observations`)."""
    out: list[Node] = []
    for rid in res.granted:
        if rid in active:
            res.ignored.append({"state_id": rid, "reason": "already visible in the Active State"})
            continue
        node = repo.get(rid)
        if node is None and current_observations and rid in active.raw_pool:
            obs = active.raw_pool[rid]
            node = Node(state_id=rid, request=active.query_id, type=StateType.knowledge, value=obs.content, raw=True)
        if node is None:
            res.ignored.append(
                {
                    "state_id": rid,
                    "reason": "raw result of the current request: not in M_k "
                    "(disclose_current_request_observations=false)",
                }
            )
            continue
        active.disclosed[rid] = node
        res.disclosed.append(rid)
        out.append(node)
    return out
