"""RCA-100 scoring (docs/pos-benchmarks.md §2.7): joint entity + fault-type accuracy. PoS scores
against the key's top-level `root_cause_entities` / `root_cause_types` (not the README's
`raw_ground_truth.fault_type`, which the keys lack)."""

from __future__ import annotations

from typing import Any

from benchmarks.rca100.catalog import norm_entity, norm_type


def score_submission(submission: dict[str, Any] | None, gold: dict[str, Any]) -> dict[str, Any]:
    """Score one submission `{root_cause_entity, fault_type}` against a key holding
    `root_cause_entities` and `root_cause_types`. None = no submission (a failure).
    Returns {entity_correct, type_correct, success, score (1.0/0.0), reason}."""
    if submission is None:
        return {
            "entity_correct": False,
            "type_correct": False,
            "success": False,
            "score": 0.0,
            "reason": "no_submission",
        }
    entities = {norm_entity(e) for e in gold.get("root_cause_entities") or []}
    types = {norm_type(t) for t in gold.get("root_cause_types") or []} - {None}
    entity_ok = norm_entity(submission.get("root_cause_entity")) in entities
    sub_type = norm_type(submission.get("fault_type"))
    type_ok = sub_type is not None and sub_type in types
    ok = entity_ok and type_ok
    reason = (
        "correct" if ok else ("wrong_type" if entity_ok else ("wrong_entity" if type_ok else "wrong_entity_and_type"))
    )
    return {
        "entity_correct": entity_ok,
        "type_correct": type_ok,
        "success": ok,
        "score": 1.0 if ok else 0.0,
        "reason": reason,
    }


def percent(values: list[bool | int | float]) -> float:
    """Mean of 0/1 values in percent (0.0 for none)."""
    return 100.0 * sum(float(v) for v in values) / len(values) if values else 0.0
