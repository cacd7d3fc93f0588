"""The three structures of FlowState §2.1 (docs/flowstate.md §1.5, §6): the Persistent State Repository M_k,
the Historical State Index G_k = Index(M_k), and the Active State S_{k,t}."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from flowstate.state import Node, Relation, StateType


class RawObs(BaseModel):
    """One tool result of the current request, addressable by its runtime id `obs-<k>-<t>-<i>`
    (docs/flowstate.md §1.4 [harness choice]). It enters M only if a persisted state references it."""

    state_id: str
    name: str
    content: str
    error: bool = False


class RequestEntry(BaseModel):
    query_id: str
    text: str
    response: str | None = None  # the agent's last message to the user, when the user's reply opened the next request


class Repository:
    """M_k: prior requests, their persisted state nodes, referenced raw-result nodes and relations.
    Runtime-only (never put into the context directly). Nodes are immutable and never deleted."""

    def __init__(self) -> None:
        self.requests: list[RequestEntry] = []
        self.nodes: dict[str, Node] = {}
        self.by_request: dict[str, list[str]] = {}  # query_id -> model/rule-built state ids (no raw)
        self.incoming: dict[str, list[Relation]] = {}  # target id -> [Relation(rel, source id)]

    def __contains__(self, state_id: object) -> bool:
        return state_id in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def get(self, state_id: str) -> Node | None:
        return self.nodes.get(state_id)

    def _insert(self, node: Node) -> None:
        if node.state_id in self.nodes:  # never overwrite history (ISU rule 1 guarantees fresh ids)
            raise ValueError(f"repository already holds node '{node.state_id}'; historical nodes are immutable")
        self.nodes[node.state_id] = node
        for r in node.refs:
            self.incoming.setdefault(r.state_id, []).append(Relation(rel=r.rel, state_id=node.state_id))

    def persist(
        self, query_id: str, text: str, states: list[Node], raw_pool: dict[str, RawObs], response: str | None = None
    ) -> list[str]:
        """Eq. 4: M_{k+1} = Persist(M_k, q_k, S_{k,T_k+1}, O_k). Stores the request, the given
        final current-request states, and every raw result they reference as a knowledge node of
        q_k (docs/flowstate.md §6). Refs that would dangle (to states not persisted) are dropped. Returns the
        ids written."""
        kept = {s.state_id for s in states}
        raw_needed: list[str] = []
        cleaned: list[Node] = []
        for s in states:
            refs = []
            for r in s.refs:
                if r.state_id in raw_pool:
                    if r.state_id not in raw_needed:
                        raw_needed.append(r.state_id)
                    refs.append(r)
                elif r.state_id in kept or r.state_id in self.nodes:
                    refs.append(r)
            cleaned.append(s if len(refs) == len(s.refs) else s.model_copy(update={"refs": tuple(refs)}))
        self.requests.append(RequestEntry(query_id=query_id, text=text, response=response))
        ids = self.by_request.setdefault(query_id, [])
        written: list[str] = []
        for rid in raw_needed:
            obs = raw_pool[rid]
            self._insert(Node(state_id=rid, request=query_id, type=StateType.knowledge, value=obs.content, raw=True))
            written.append(rid)
        for s in cleaned:
            node = s if s.request == query_id else s.model_copy(update={"request": query_id})
            self._insert(node)
            ids.append(node.state_id)
            written.append(node.state_id)
        return written

    def index(self) -> list[dict[str, Any]]:
        """Index(M): per prior request, {user_query, query_id, [agent_response,] states: [{state_id, summary}]}.
        Raw-result nodes are not listed (docs/flowstate.md §1.4); they are reachable through refs only."""
        return [
            {
                "user_query": r.text,
                "query_id": r.query_id,
                **({"agent_response": r.response} if r.response is not None else {}),
                "states": [
                    {"state_id": i, "summary": self.nodes[i].summary} for i in self.by_request.get(r.query_id, [])
                ],
            }
            for r in self.requests
        ]

    def historical_states(self) -> list[Node]:
        """Every persisted non-raw state, in request order (w/o PSA shows them all, docs/flowstate.md §7)."""
        return [self.nodes[i] for r in self.requests for i in self.by_request.get(r.query_id, [])]


class HistoricalIndex:
    """G_k: built once at the start of q_k; ids + summaries only, rendered once as JSON."""

    def __init__(self, repo: Repository | None = None) -> None:
        self.entries = repo.index() if repo is not None else []
        self.ids = frozenset(s["state_id"] for e in self.entries for s in e["states"])
        self.text = json.dumps(self.entries, ensure_ascii=False, default=str)


class ActiveState:
    """S_{k,t}: current-request states plus disclosed historical nodes (with their relations).
    Also holds this request's raw results (`raw_pool`, not part of S; used to resolve refs and at
    Persist) and the ids of removed current-request states (never reused in the request)."""

    def __init__(self, query_id: str) -> None:
        self.query_id = query_id
        self.current: dict[str, Node] = {}
        self.removed: set[str] = set()
        self.disclosed: dict[str, Node] = {}
        self.raw_pool: dict[str, RawObs] = {}

    def __contains__(self, state_id: object) -> bool:
        return state_id in self.current or state_id in self.disclosed

    def __len__(self) -> int:
        return len(self.current) + len(self.disclosed)

    def nodes(self) -> list[Node]:
        """Disclosed historical nodes first (in disclosure order), then current-request states."""
        return list(self.disclosed.values()) + list(self.current.values())

    def tool_refs(self, repo: Repository) -> set[str]:
        """ToolRefs(S): raw-result ids referenced by any state in S (disclosed ones included)."""
        out: set[str] = set()
        for n in self.nodes():
            for r in n.refs:
                if r.state_id in self.raw_pool:
                    out.add(r.state_id)
                else:
                    target = repo.get(r.state_id)
                    if target is not None and target.raw:
                        out.add(r.state_id)
        return out

    def render(self, repo: Repository | None = None, *, incoming: bool = False) -> list[dict[str, Any]]:
        """The Active State JSON list of App. B.3. With `incoming`, disclosed nodes also list the
        edges other persisted nodes point at them (switch `disclose_incoming_relations`)."""
        out = []
        for n in self.nodes():
            inc = (
                repo.incoming.get(n.state_id)
                if (incoming and repo is not None and n.state_id in self.disclosed)
                else None
            )
            out.append(n.active_view(inc))
        return out
