"""The official side of the τ oracle: runs INSIDE the venv where the official tau2-bench is installed
(Python 3.12; `python -m scripts.tau_oracle` builds it and starts this file with that interpreter).
It imports only the standard library and `tau2`, never the project.

    <venv>/bin/python scripts/tau_oracle/official.py CASES.json RESULTS.json   (TAU2_DATA_DIR set)

For each case: a fresh environment of the domain, each call as an agent tool call
(`Environment.get_response`), then tau2's own evaluators on the trajectory (assistant tool calls,
tool results, a final assistant message): `EnvironmentEvaluator` (DB), `ActionEvaluator`,
`CommunicateEvaluator`. Outputs are written as they are (the caller keeps digests), the DB as the
project's normalised hash
(sha256 of the DB dump without None values, keys sorted: benchmarks/tau/toolkit.py `db_hash`)."""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any


def strip_none(obj: Any) -> Any:
    """benchmarks/tau/toolkit.py `strip_none`, restated: this file runs in the official's venv and
    never imports the project (tests/tau/test_official_oracle.py holds the native DB hash to the
    official one on every case)."""
    if isinstance(obj, dict):
        return {k: strip_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [strip_none(v) for v in obj]
    return obj


def norm_hash(db: Any) -> str:
    text = json.dumps(strip_none(db.model_dump()), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def main(cases_path: str, out_path: str) -> int:
    from tau2.data_model.message import AssistantMessage, ToolCall
    from tau2.domains.airline import environment as airline
    from tau2.domains.retail import environment as retail
    from tau2.environment.toolkit import get_tool_types
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    modules = {"airline": airline, "retail": retail}
    tasks = {d: {t.id: t for t in m.get_tasks("base")} for d, m in modules.items()}
    # each environment on a deep copy of the domain's DB as loaded once (loading db.json per
    # environment, three per case, would dominate the run)
    base_db = {d: m.get_environment().tools.db for d, m in modules.items()}

    def constructor(domain: str) -> Any:
        return lambda solo_mode=False, **kw: modules[domain].get_environment(
            db=base_db[domain].model_copy(deep=True), solo_mode=solo_mode
        )

    cases = json.loads(open(cases_path, encoding="utf-8").read())
    results = []
    for case in cases:
        make = constructor(case["domain"])
        env = make()
        trajectory: list[Any] = []
        outputs = []
        for i, call in enumerate(case["calls"]):
            tc = ToolCall(id=f"call_{i}", name=call["name"], arguments=call["arguments"], requestor="assistant")
            msg = env.get_response(tc)
            outputs.append({"content": msg.content, "error": bool(msg.error)})
            trajectory += [AssistantMessage(role="assistant", content=None, tool_calls=[tc]), msg]
        trajectory.append(AssistantMessage(role="assistant", content=case["final_text"]))
        task = tasks[case["domain"]][case["task_id"]]
        db = EnvironmentEvaluator.calculate_reward(make, task, trajectory)
        types = get_tool_types(env.tools)  # as tau2's evaluate_simulation passes them
        actions = ActionEvaluator.calculate_reward(task, trajectory, types)
        comm = CommunicateEvaluator.calculate_reward(task, trajectory)
        results.append(
            {
                "id": case["id"],
                "outputs": outputs,
                "db_hash": norm_hash(env.tools.db),
                "reward": {
                    "db_match": bool(db.db_check.db_match) if db.db_check is not None else True,
                    "actions": [bool(c.action_match) for c in (actions.action_checks or [])],
                    "communicate": [bool(c.met) for c in (comm.communicate_checks or [])],
                },
            }
        )
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
