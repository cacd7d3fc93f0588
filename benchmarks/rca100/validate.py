"""RCA-100 answer-key validation, as upstream PoS's scripts/validate_rca100_gt.py checks it:

    python -m benchmarks.rca100.validate --data DIR [--answer-key-dir KEYS]

For every case of the data set (manifest order): exactly one root-cause entity; the entity exists
in the case's own topology.json at service level (apm.service) or node level (k8s.node); every
root-cause type is in the closed 29-type catalog and equals the raw ground truth's
`expected_fault_id`; the entities equal the raw ground truth's `target_entities` (when given).
Prints one JSON report (cases, entity-level distribution, violations); exit status 0 iff none.
The data itself comes from the authors' release (see the RCA-100 README; not redistributable)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.rca100.catalog import norm_entity, norm_type
from benchmarks.rca100.data import RcaDataError, case_ids, read_json, resolve_root

LEVELS = {"apm.service", "k8s.node"}


def validate_case(root: Path, keys: Path, cid: str, levels: Counter) -> list[str]:
    out: list[str] = []
    key = read_json(keys / f"{cid}.gt.json")
    entities = [str(e) for e in key.get("root_cause_entities") or []]
    if len(entities) != 1:
        out.append(f"{cid}: root_cause_entities has {len(entities)} items")
    topo = read_json(root / "cases" / cid / "topology.json")
    for name in entities:
        types = {e.get("type") for e in topo.get("entities", []) if norm_entity(e.get("name")) == norm_entity(name)}
        if not types:
            out.append(f"{cid}: entity {name!r} is not in its own topology.json")
            levels["UNRESOLVED"] += 1
            continue
        if not types & LEVELS:
            out.append(f"{cid}: entity {name!r} is {sorted(map(str, types))}, not service or node level")
        levels["|".join(sorted(map(str, types)))] += 1
    raw: dict[str, Any] = {}
    if key.get("raw_ground_truth"):
        try:
            raw = (
                json.loads(key["raw_ground_truth"])
                if isinstance(key["raw_ground_truth"], str)
                else dict(key["raw_ground_truth"])
            )
        except ValueError:
            out.append(f"{cid}: raw_ground_truth is not JSON")
    outcome = raw.get("outcome") or {}
    for value in key.get("root_cause_types") or []:
        t = norm_type(value)
        if t is None:
            out.append(f"{cid}: root_cause_type {value!r} is outside the 29-type catalog")
        elif outcome.get("expected_fault_id") is not None and t != norm_type(outcome["expected_fault_id"]):
            out.append(f"{cid}: root_cause_type {value!r} != expected_fault_id {outcome['expected_fault_id']!r}")
    targets = {norm_entity(t.get("entity_name")) for t in outcome.get("target_entities") or []}
    if targets and targets != {norm_entity(n) for n in entities}:
        out.append(
            f"{cid}: root_cause_entities {sorted(entities)} differ from raw_ground_truth target_entities "
            f"{sorted(targets)}"
        )
    return out


def validate(data_dir: str, answer_key_dir: str | None = None) -> dict[str, Any]:
    root, _ = resolve_root(data_dir)
    keys = Path(answer_key_dir).expanduser() if answer_key_dir else root / "answer_key"
    ids = case_ids(root)
    levels: Counter = Counter()
    violations: list[str] = []
    for cid in ids:
        try:
            violations += validate_case(root, keys, cid, levels)
        except (OSError, RcaDataError) as e:
            violations.append(f"{cid}: {e}")
    return {"cases": len(ids), "entity_levels": dict(levels.most_common()), "violations": violations}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="RCA-100 root (cases/, manifest.txt, answer_key/)")
    ap.add_argument("--answer-key-dir", default=None)
    args = ap.parse_args(argv)
    try:
        report = validate(args.data, args.answer_key_dir)
    except RcaDataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1))
    return 0 if not report["violations"] else 1


if __name__ == "__main__":
    sys.exit(main())
