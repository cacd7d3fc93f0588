"""Behaviour-equivalence check in the spirit of upstream PoS's scripts/check_behavior_equivalence.py:
our PoS arithmetic against upstream's own formulas, on the windows a run recorded.

    python -m pos.equivalence results/<experiment>/<pos cell> [...]   # or its episodes.jsonl(.zst)

For every step of every recorded PoS request where progress health was computed, the window is
rebuilt from the request's exported `transitions` and `snapshots` and the step's committed belief
(its Active Gap), then scored twice: by `pos.health.detect` (ours) and by upstream's
`detect_belief_trapping` (belief/trappingDetection.py, loaded from the pinned file at run time and
executed as is: it needs only the standard library). Every diagnostic progress label is recomputed
with upstream's `diagnostic_progress` (belief/progressScoring.py) from the recorded before/after
worlds. Reported: windows compared, mismatches (field, ours, upstream), and the recorded value
too. Exit status 0 iff no mismatch; 2 when the upstream files are unavailable."""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path
from typing import Any

from pos.health import HealthConfig, detect
from pos.projection import project_on_gap
from pos.sentinel import confidence_change
from pos.world import World
from runners.records.results import episode_records
from runners.upstream import UpstreamFile, file_text

TRAPPING = UpstreamFile("PoS", "belief/trappingDetection.py")
PROGRESS = UpstreamFile("PoS", "belief/progressScoring.py")
FIELDS = (
    "persistence_e",
    "persistence_a",
    "stagnation",
    "recurrence",
    "recurrence_period",
    "health_score",
    "trapping_pattern",
)
TOL = 1e-9


def load_upstream(f: UpstreamFile) -> types.ModuleType:
    src = file_text(f)
    if src is None:
        raise FileNotFoundError(
            f"upstream {f.path} unavailable; set $HARNESS_UPSTREAM_DIR to a PoS checkout at {f.commit}"
        )
    mod = types.ModuleType(f"upstream_pos_{Path(f.path).stem}")
    sys.modules[mod.__name__] = mod  # dataclasses resolve their module by name
    exec(compile(src, f"{f.folder}/{f.path}", "exec"), mod.__dict__)
    return mod


def _dict_world(lists: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    ids = {"entities": "entity_id", "states": "state_id", "relations": "relation_id"}
    return {k: {r[ids[k]]: r for r in lists.get(k, [])} for k in ids}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) <= TOL
    return a == b


def compare_request(rr: dict[str, Any], cfg: HealthConfig, up: types.ModuleType) -> tuple[int, list[dict[str, Any]]]:
    """(windows compared, mismatches) of one recorded request."""
    method = rr.get("method") or {}
    snaps, trans = method.get("snapshots") or [], method.get("transitions") or []
    n, bad = 0, []
    for s in rr.get("steps", []):
        log = s.get("method") or {}
        if "health" not in log or "transition" not in log or "belief" not in log:
            continue
        k = log["transition"]["step"]
        b = log["belief"]
        gap = (
            next(
                (
                    {"gap_type": b["frontier"]["gap_type"], "target": g["target"], "reason": g.get("reason", "")}
                    for g in b.get(f"{b['frontier']['gap_type']}_gaps", [])
                    if b.get("frontier") and g["target"] == b["frontier"]["target"]
                ),
                None,
            )
            if b.get("frontier")
            else None
        )
        by_step = {x["step"]: x for x in snaps if x["step"] <= k}
        window_t = [t for t in trans if t["step"] <= k]
        ours_in = [
            {
                "step": t["step"],
                "progress": t["progress"],
                "epistemic_gaps": by_step[t["step"]]["epistemic_gap_ids"] if t["step"] in by_step else [],
                "achievement_gaps": by_step[t["step"]]["achievement_gap_ids"] if t["step"] in by_step else [],
                "world": by_step[t["step"]]["world"] if t["step"] in by_step else None,
                "active_gap_world": project_on_gap(by_step[t["step"]]["world"], gap) if t["step"] in by_step else None,
            }
            for t in window_t
        ]
        ours = detect(ours_in, cfg).model_dump()
        upstream = up.detect_belief_trapping(
            [{"step": t["step"], "progress": t["progress"]} for t in window_t],
            [
                {
                    "step": x["step"],
                    "world": _dict_world(x["world"]),
                    "epistemic_gap_ids": x["epistemic_gap_ids"],
                    "achievement_gap_ids": x["achievement_gap_ids"],
                }
                for x in by_step.values()
            ],
            active_gap=gap,
            window_size=cfg.window_size,
            health_threshold=cfg.health_threshold,
            cycle_threshold=cfg.cycle_threshold,
            recurrence_epsilon=cfg.recurrence_epsilon,
            max_cycle_length=cfg.max_cycle_length,
        )
        n += 1
        if not upstream.window_ready and not ours["window_ready"]:
            continue
        for f in FIELDS:
            u = getattr(upstream, f)
            if not _same(ours[f], u):
                bad.append(
                    {
                        "request": rr["request"]["request_id"],
                        "step": k,
                        "field": f,
                        "ours": ours[f],
                        "upstream": u,
                        "recorded": log["health"].get(f),
                    }
                )
    return n, bad


def compare_diagnostic(rr: dict[str, Any], up: types.ModuleType) -> tuple[int, list[dict[str, Any]]]:
    """Diagnostic labels: d and u from our `confidence_change` vs upstream's `diagnostic_progress`."""
    snaps = {x["step"]: x for x in (rr.get("method") or {}).get("snapshots") or []}
    n, bad = 0, []
    for t in (rr.get("method") or {}).get("transitions") or []:
        if (
            t.get("scoring_method") != "diagnostic_confidence_change"
            or t["step"] not in snaps
            or t["step"] - 1 not in snaps
        ):
            continue
        before, after = snaps[t["step"] - 1]["world"], snaps[t["step"]]["world"]
        d, _ = confidence_change(World(**_dict_world(before)), World(**_dict_world(after)))
        u = up.diagnostic_progress({"world": _dict_world(before)}, {"world": _dict_world(after)}, None, 0.3)
        n += 1
        if not _same(d, u["score"]):
            bad.append(
                {
                    "request": rr["request"]["request_id"],
                    "step": t["step"],
                    "field": "diagnostic_score",
                    "ours": d,
                    "upstream": u["score"],
                    "recorded": t.get("score"),
                }
            )
    return n, bad


def check(paths: list[Path], cfg: HealthConfig | None = None) -> dict[str, Any]:
    cfg = cfg or HealthConfig()
    trapping, progress = load_upstream(TRAPPING), load_upstream(PROGRESS)
    windows = labels = 0
    mismatches: list[dict[str, Any]] = []
    for p in paths:
        for rec in episode_records(p):
            for rr in rec.get("requests", []):
                n, bad = compare_request(rr, cfg, trapping)
                m, bad2 = compare_diagnostic(rr, progress)
                windows, labels, mismatches = windows + n, labels + m, mismatches + bad + bad2
    return {
        "windows": windows,
        "diagnostic_labels": labels,
        "mismatches": len(mismatches),
        "examples": mismatches[:10],
        "upstream": [TRAPPING.provenance(), PROGRESS.provenance()],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "episodes",
        nargs="+",
        type=Path,
        help="PoS cells: their directories, episodes.jsonl or episodes.jsonl.zst (.xz: finished before zstd)",
    )
    args = ap.parse_args(argv)
    try:
        report = check(args.episodes)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, default=str))
    return 0 if report["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
