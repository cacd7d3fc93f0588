"""τ³ evaluation (docs/tau-bench.md §7; upstream `src/tau2/evaluator/*.py`): DB check by replay,
COMMUNICATE, ACTION matching, reward = product over `reward_basis`. The NL_ASSERTION judge lives
in `judge.py`. Trajectories are lists of plain messages:
`{"role": "assistant", "content": str|None, "tool_calls": [{"id","name","arguments"}]|None}`,
`{"role": "user", "content": str}`, `{"role": "tool", "id", "name", "content", "error"}`."""

from __future__ import annotations

import json
from typing import Any, Callable

from benchmarks.tau.data import DomainData
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.replay import gold_actions
from benchmarks.tau.toolkit import db_hash

EVALUATED = ("user_stop", "agent_stop")  # every other termination scores 0 without checks (§3)
_GOLD_HASH: dict[tuple[str, str, str], str] = {}


def criteria(task: dict[str, Any]) -> dict[str, Any]:
    return task.get("evaluation_criteria") or {}


def reward_basis(task: dict[str, Any]) -> list[str]:
    basis = criteria(task).get("reward_basis")
    return list(basis) if basis is not None else ["DB", "COMMUNICATE"]


def tool_calls(trajectory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool call in the trajectory, in order (agent or user)."""
    return [c for m in trajectory if m["role"] in ("assistant", "user") for c in (m.get("tool_calls") or [])]


def initial_db_hash(data: DomainData) -> str:
    key = (data.domain, data.source, "")
    if key not in _GOLD_HASH:
        _GOLD_HASH[key] = db_hash(data.fresh_db())
    return _GOLD_HASH[key]


def gold_db_hash(data: DomainData, task: dict[str, Any]) -> str:
    """Hash after executing every gold action on a fresh DB (exceptions ignored); cached per task.
    Only WRITE tools mutate state, so a task without gold WRITE actions has the initial hash."""
    key = (data.domain, data.source, task["id"])
    cls = toolkit_for(data.domain)
    if not any(cls.tool_type(a["name"]) == "WRITE" for a in gold_actions(task)):
        return initial_db_hash(data)
    if key not in _GOLD_HASH:
        tools = toolkit_for(data.domain)(data.fresh_db())
        for a in gold_actions(task):
            tools.execute(a["name"], a.get("arguments") or {})
        _GOLD_HASH[key] = db_hash(tools.db)
    return _GOLD_HASH[key]


def _same_output(recorded: str, replayed: str) -> bool:
    if recorded == replayed:
        return True
    try:
        return json.loads(recorded) == json.loads(replayed)
    except ValueError:
        return False


def predicted_db(data: DomainData, trajectory: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Fresh DB with the trajectory's WRITE calls re-executed in order (errored ones too); returns the
    DB and the ids of calls whose replayed output differs from the recorded one (upstream strict mode)."""
    cls = toolkit_for(data.domain)
    tools = cls(data.fresh_db())
    results = {m.get("id"): m for m in trajectory if m["role"] == "tool"}
    mismatches: list[Any] = []  # the calls' ids
    for call in tool_calls(trajectory):
        if cls.tool_type(call["name"]) != "WRITE":
            continue
        content, error = tools.execute(call["name"], call.get("arguments") or {})
        rec = results.get(call.get("id"))
        if rec is not None and (bool(rec.get("error")) != error or not _same_output(rec["content"], content)):
            mismatches.append(call.get("id"))
    return tools.db, mismatches


def db_check(data: DomainData, task: dict[str, Any], trajectory: list[dict[str, Any]]) -> dict[str, Any]:
    crit = criteria(task)
    if crit.get("actions") is None and crit.get("env_assertions") is None:
        # Upstream `EnvironmentEvaluator`: no gold actions listed (null, not []) and no env assertions →
        # DB reward 1 without a comparison (also when evaluation_criteria is null). Not the case in the
        # pinned task files, where `actions` is always a list.
        return {"db_match": True, "reward": 1.0, "predicted_hash": None, "gold_hash": None, "replay_mismatches": []}
    cls = toolkit_for(data.domain)
    if any(cls.tool_type(c["name"]) == "WRITE" for c in tool_calls(trajectory)):
        db, mismatches = predicted_db(data, trajectory)
        pred = db_hash(db)
    else:  # nothing to replay: the fresh DB
        pred, mismatches = initial_db_hash(data), []
    gold = gold_db_hash(data, task)
    return {
        "db_match": pred == gold,
        "reward": 1.0 if pred == gold else 0.0,
        "predicted_hash": pred,
        "gold_hash": gold,
        "replay_mismatches": mismatches,
    }


def communicate_check(task: dict[str, Any], trajectory: list[dict[str, Any]]) -> dict[str, Any]:
    """Each string must appear (case-insensitive) in some assistant text with commas removed (§7.2)."""
    infos = criteria(task).get("communicate_info") or []
    texts = [
        m["content"].lower().replace(",", "")
        for m in trajectory
        if m["role"] == "assistant" and isinstance(m.get("content"), str) and m["content"].strip()
    ]
    met = [any(s.lower() in t for t in texts) for s in infos]
    return {"reward": 1.0 if all(met) else 0.0, "checks": [{"info": s, "met": ok} for s, ok in zip(infos, met)]}


def action_matches(gold: dict[str, Any], call: dict[str, Any]) -> bool:
    """Upstream `Action.compare_with_tool_call` (§7.4)."""
    if gold["name"] != call["name"]:
        return False
    compare = gold.get("compare_args")
    g_args, p_args = gold.get("arguments") or {}, call.get("arguments") or {}
    if compare is None:
        compare = list(p_args)  # keys of the predicted call
    if not compare:
        return True
    # Each side restricted to the compared keys it actually has (a key missing on one side differs).
    return {k: v for k, v in p_args.items() if k in compare} == {k: v for k, v in g_args.items() if k in compare}


def action_check(
    task: dict[str, Any], trajectory: list[dict[str, Any]], tool_type: Callable[[str], str | None]
) -> dict[str, Any]:
    """Per gold action: matched by some call, any order; partial rewards split by tool type."""
    calls = tool_calls(trajectory)
    checks = []
    for g in gold_actions(task):
        checks.append(
            {
                "action_id": g.get("action_id"),
                "name": g["name"],
                "tool_type": tool_type(g["name"]),
                "matched": any(action_matches(g, c) for c in calls),
            }
        )
    partial = {}
    for part, keep in (("total", lambda t: True), ("read", lambda t: t == "READ"), ("write", lambda t: t == "WRITE")):
        sel = [c for c in checks if keep(c["tool_type"])]
        correct = sum(c["matched"] for c in sel)
        partial[part] = {"correct": correct, "count": len(sel), "proportion": correct / len(sel) if sel else None}
    return {"reward": 1.0 if all(c["matched"] for c in checks) else 0.0, "checks": checks, "partial": partial}


def combine(basis: list[str], components: dict[str, float]) -> float:
    """Final reward = product of the components named in the reward basis (§7)."""
    reward = 1.0
    for name in basis:
        reward *= components.get(name, 1.0)
    return reward


def is_success(reward: float) -> bool:
    return abs(reward - 1.0) <= 1e-6
