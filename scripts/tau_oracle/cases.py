"""The cases of the τ differential oracle and their native replay.

A case is a sequence of tool calls made as the agent on a fresh domain DB, scored against one base
task: the task's gold actions (`gold`), the gold actions with one perturbation (`perturb:<kind>`,
17 kinds, three per task in turn) and hand-picked adversarial calls (`adv:<name>`). Cases are
generated from the data alone (deterministic), so the fixture stores only their ids and the
official engine's results: digests of every tool output, error flags, the normalised DB hash and
the reward parts (DB match, each gold action's match, each communicate check). No upstream text
(tool outputs, error messages) is stored, only its sha256.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from benchmarks.tau.data import DomainData
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.evaluation import action_check, communicate_check, db_check
from benchmarks.tau.replay import gold_actions
from benchmarks.tau.toolkit import db_hash

Call = dict[str, Any]  # {"name": str, "arguments": dict}

_GUARD = (
    ["output 0"],
    "calculate refuses a power whose result would have thousands of digits (benchmarks/tau/toolkit.py "
    "_guard_power, documented in docs/tau-fidelity.md); the official computes it",
)
DEVIATIONS: dict[str, tuple[list[str], str]] = {
    f"{d}/{t}/adv:calculate_9": _GUARD for d, t in (("airline", "0"), ("retail", "0"))
}
"""Case id → (the parts that differ from the official engine, why): the documented deviations
(docs/tau-fidelity.md). Anything else that differs is a defect."""


_PYDANTIC_LINK = re.compile(r"https://errors\.pydantic\.dev/[^/\s]+/")


def digest(text: str | None) -> str:
    """sha256 (16 hex digits) of a tool output, with the pydantic version in its errors' links left
    out (`errors.pydantic.dev/<version>/…`), so that the check does not depend on pydantic's version."""
    if text is None:
        text = "\0none"
    return hashlib.sha256(_PYDANTIC_LINK.sub("https://errors.pydantic.dev/*/", text).encode()).hexdigest()[:16]


# ------------------------------------------------------------------ perturbations of the gold calls
def _first(calls: list[Call], pred: Callable[[str, Any], bool]) -> tuple[int, str] | None:
    for i, c in enumerate(calls):
        for k, v in (c.get("arguments") or {}).items():
            if pred(k, v):
                return i, k
    return None


def _with_arg(calls: list[Call], pred: Callable[[str, Any], bool], change: Callable[[Any], Any]) -> list[Call] | None:
    at = _first(calls, pred)
    if at is None:
        return None
    out = copy.deepcopy(calls)
    i, k = at
    out[i]["arguments"][k] = change(out[i]["arguments"][k])
    return out


def _drop_arg(calls: list[Call]) -> list[Call] | None:
    at = _first(calls, lambda k, v: True)
    if at is None:
        return None
    out = copy.deepcopy(calls)
    del out[at[0]]["arguments"][at[1]]
    return out


def _extra_arg(calls: list[Call]) -> list[Call] | None:
    if not calls:
        return None
    out = copy.deepcopy(calls)
    out[0]["arguments"] = {**(out[0].get("arguments") or {}), "note": "as discussed"}
    return out


def _drop_nested_key(calls: list[Call]) -> list[Call] | None:
    def drop(v: list[Any]) -> list[Any]:
        first = dict(v[0])
        first.pop(sorted(first)[-1])
        return [first, *v[1:]]

    return _with_arg(
        calls, lambda k, v: isinstance(v, list) and bool(v) and isinstance(v[0], dict) and bool(v[0]), drop
    )


def _items_as_strings(calls: list[Call]) -> list[Call] | None:
    return _with_arg(
        calls,
        lambda k, v: isinstance(v, list) and bool(v) and isinstance(v[0], dict),
        lambda v: [" ".join(str(x) for x in item.values()) for item in v],
    )


def _repeat_last_write(calls: list[Call], is_write: Callable[[str], bool]) -> list[Call] | None:
    writes = [c for c in calls if is_write(c["name"])]
    return [*copy.deepcopy(calls), copy.deepcopy(writes[-1])] if writes else None


def _unknown_tool(calls: list[Call]) -> list[Call] | None:
    if not calls:
        return None
    out = copy.deepcopy(calls)
    out[0]["name"] += "_v2"
    return out


def _is_str(k: str, v: Any) -> bool:
    return isinstance(v, str)


def _is_int(k: str, v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


PERTURBATIONS: dict[str, Callable[[list[Call], Callable[[str], bool]], list[Call] | None]] = {
    "drop_arg": lambda c, w: _drop_arg(c),
    "extra_arg": lambda c, w: _extra_arg(c),
    "none_arg": lambda c, w: _with_arg(c, lambda k, v: True, lambda v: None),
    "unknown_id": lambda c, w: _with_arg(c, lambda k, v: k.endswith("_id") and isinstance(v, str), lambda v: v + "X"),
    "upper_case": lambda c, w: _with_arg(c, _is_str, str.upper),
    "int_as_str": lambda c, w: _with_arg(c, _is_int, str),
    "int_as_float": lambda c, w: _with_arg(c, _is_int, lambda v: v + 0.5),
    "negative_int": lambda c, w: _with_arg(c, _is_int, lambda v: -1 - v),
    "str_as_int": lambda c, w: _with_arg(c, _is_str, lambda v: 7),
    "str_as_object": lambda c, w: _with_arg(c, _is_str, lambda v: {"value": v}),
    "empty_list": lambda c, w: _with_arg(c, lambda k, v: isinstance(v, list) and bool(v), lambda v: []),
    "scalar_for_list": lambda c, w: _with_arg(c, lambda k, v: isinstance(v, list) and bool(v), lambda v: v[0]),
    "items_as_strings": lambda c, w: _items_as_strings(c),
    "drop_nested_key": lambda c, w: _drop_nested_key(c),
    "repeat_last_write": _repeat_last_write,
    "reverse_order": lambda c, w: list(reversed(copy.deepcopy(c))) if len(c) > 1 else None,
    "unknown_tool": lambda c, w: _unknown_tool(c),
}
PER_TASK = 3  # perturbation kinds per task, taken in turn over the kinds


# ------------------------------------------------------------------ adversarial calls
def _adversarial(domain: str, user_id: str) -> dict[str, list[Call]]:
    def one(name: str, **arguments: Any) -> list[Call]:
        return [{"name": name, "arguments": arguments}]

    out = {
        **{
            f"calculate_{i}": one("calculate", expression=e)
            for i, e in enumerate(
                ["2 + 2", "10 / 3", "(1 + 2) * 3.5", "1 / 0", "2 ** 10", "abc", "", "1e5", "3 % 2", "2**10001"]
            )
        },
        "calculate_missing_arg": one("calculate"),
        "calculate_extra_arg": one("calculate", expression="1+1", precision=2),
        "transfer_missing_arg": one("transfer_to_human_agents"),
        "transfer_extra_arg": one("transfer_to_human_agents", summary="help", urgency="high"),
        "transfer_ok": one("transfer_to_human_agents", summary="The customer asks for a person."),
        "unknown_tool": one("delete_database"),
        "user_id_int": one("get_user_details", user_id=12345),
        "user_id_missing": one("get_user_details"),
        "user_id_unknown": one("get_user_details", user_id="nobody_0000"),
        "user_id_valid": one("get_user_details", user_id=user_id),
    }
    if domain == "airline":
        booking = {
            "user_id": user_id,
            "origin": "JFK",
            "destination": "SEA",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [],
            "passengers": ["John Doe"],
            "payment_methods": [],
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "insurance": "no",
        }
        out |= {
            "book_passengers_as_strings": one("book_reservation", **booking),
            "book_bad_cabin_and_passengers": one("book_reservation", **{**booking, "cabin": "first"}),
            "book_flights_as_strings": one("book_reservation", **{**booking, "passengers": [], "flights": ["HAT001"]}),
            "reservation_unknown": one("get_reservation_details", reservation_id="ZZZZZZ"),
            "flight_status_unknown": one("get_flight_status", flight_number="HAT999", date="2024-05-20"),
        }
    else:
        out |= {
            "order_unknown": one("get_order_details", order_id="#W0000000"),
            "order_id_without_hash": one("get_order_details", order_id="W0000000"),
            "product_unknown": one("get_product_details", product_id="0"),
            "find_user_unknown": one("find_user_id_by_zip", first_name="No", last_name="Body", zip="00000"),
        }
    return out


def cases(data: DomainData) -> list[dict[str, Any]]:
    """Every case of one domain: {id, domain, task_id, calls, final_text}."""
    tools = toolkit_for(data.domain)
    is_write = lambda name: tools.tool_type(name) == "WRITE"  # noqa: E731
    tasks = data.split("base")
    out = []
    kinds = list(PERTURBATIONS)
    for n, task in enumerate(tasks):
        gold = [{"name": a["name"], "arguments": dict(a.get("arguments") or {})} for a in gold_actions(task)]
        infos = (task.get("evaluation_criteria") or {}).get("communicate_info") or []
        final = " ".join(infos) or "Is there anything else I can help you with?"
        base = {"domain": data.domain, "task_id": task["id"], "final_text": final}
        out.append({**base, "id": f"{data.domain}/{task['id']}/gold", "calls": gold})
        for j in range(PER_TASK):
            kind = kinds[(n * PER_TASK + j) % len(kinds)]
            calls = PERTURBATIONS[kind](gold, is_write)
            if calls is not None:
                out.append({**base, "id": f"{data.domain}/{task['id']}/perturb:{kind}", "calls": calls})
    user_id = next(iter(data.fresh_db()["users"]))
    for name, calls in _adversarial(data.domain, user_id).items():
        out.append(
            {
                "id": f"{data.domain}/{tasks[0]['id']}/adv:{name}",
                "domain": data.domain,
                "task_id": tasks[0]["id"],
                "calls": calls,
                "final_text": "Done.",
            }
        )
    return out


# ------------------------------------------------------------------ the native engine's results
def native_result(data: DomainData, case: dict[str, Any], tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One case through the project's engine, in the fixture's shape."""
    cls = toolkit_for(data.domain)
    tools = cls(data.fresh_db())
    trajectory: list[dict[str, Any]] = []
    outputs = []
    for i, call in enumerate(case["calls"]):
        content, error = tools.execute(call["name"], call["arguments"])
        outputs.append({"sha": digest(content), "error": error})
        cid = f"call_{i}"
        trajectory.append({"role": "assistant", "content": None, "tool_calls": [{"id": cid, **copy.deepcopy(call)}]})
        trajectory.append({"role": "tool", "id": cid, "name": call["name"], "content": content, "error": error})
    trajectory.append({"role": "assistant", "content": case["final_text"], "tool_calls": None})
    task = tasks[case["task_id"]]
    db = db_check(data, task, trajectory)
    actions = action_check(task, trajectory, cls.tool_type)
    comm = communicate_check(task, trajectory)
    return {
        "id": case["id"],
        "outputs": outputs,
        "db_hash": db_hash(tools.db),
        "reward": {
            "db_match": bool(db["db_match"]),
            "actions": [bool(c["matched"]) for c in actions["checks"]],
            "communicate": [bool(c["met"]) for c in comm["checks"]],
        },
    }


def compare(official: dict[str, Any], native: dict[str, Any]) -> list[str]:
    """Where two results of one case differ: `output <i>`, `error <i>`, `calls`, `db_hash`, `reward.<part>`."""
    out = []
    if len(official["outputs"]) != len(native["outputs"]):
        return ["calls"]
    for i, (a, b) in enumerate(zip(official["outputs"], native["outputs"])):
        if a["sha"] != b["sha"]:
            out.append(f"output {i}")
        if a["error"] != b["error"]:
            out.append(f"error {i}")
    if official["db_hash"] != native["db_hash"]:
        out.append("db_hash")
    out += [
        f"reward.{k}" for k in ("db_match", "actions", "communicate") if official["reward"][k] != native["reward"][k]
    ]
    return out


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=None, separators=(",", ":"), sort_keys=True)
