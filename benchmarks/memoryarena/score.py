"""Score MemoryArena travel or shopping predictions against task rows (docs/memoryarena.md §5.1, §5.3).

    python -m benchmarks.memoryarena.score --domain travel --tasks TASKS.jsonl --predictions PRED.jsonl
    python -m benchmarks.memoryarena.score --domain shopping --tasks TASKS.jsonl --predictions PRED.jsonl

TASKS.jsonl is in the Hugging Face schema. Prediction lines: travel `{"id": ..., "plans": [<list of
daily-plan dicts (or plan text) per traveller, in question order>]}`; shopping `{"id": ...,
"purchases": ["<asin>" or null, ...]}`. Prints one JSON object of fractions in [0, 1]: travel SR,
PS, PS_group, PS_persons, sPS; shopping SR, PS, soft_reward, PS_soft, SR_soft, average_success_rate. Only tasks
present in both files are scored (upstream: groups "in both gold and submission"). The shopping soft reward
here uses the substring attribute test (upstream `--no-llm`); LLM matching runs inside the
environment (`llm_attributes: true`, role `judge`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.memoryarena import shopping_score
from benchmarks.memoryarena import travel_score
from benchmarks.memoryarena.catalogue import CatalogueSource, load_catalogues
from benchmarks.memoryarena.loader import read_rows


def _pairs(tasks: list[dict[str, Any]], preds: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    by_id = {str(p.get("id")): p for p in preds if isinstance(p, dict)}
    return [(t, by_id[str(t["id"])]) for t in tasks if str(t.get("id")) in by_id]


def _plan(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, str):
        return travel_score.parse_days(value)
    return travel_score.normalise_days(value) if value else None


def score_travel(
    tasks: list[dict[str, Any]],
    preds: list[dict[str, Any]],
    *,
    ps_pooling: str = "group",
    sr_missing: str = "skip",
    prefix_only: bool = True,
) -> dict[str, Any]:
    groups = []
    for t, p in _pairs(tasks, preds):
        plans: Any = p.get("plans") if isinstance(p.get("plans"), list) else []
        groups.append(
            travel_score.score_group(
                t["answers"], [_plan(x) for x in plans], t["base_person"]["daily_plans"], prefix_only=prefix_only
            )
        )
    out: dict[str, Any] = travel_score.aggregate(groups, ps_pooling=ps_pooling, sr_missing=sr_missing)  # type: ignore[arg-type]
    out.update(groups_scored=len(groups), ps_pooling=ps_pooling)
    return out


def score_shopping(
    tasks: list[dict[str, Any]], preds: list[dict[str, Any]], *, catalogues: Any = None
) -> dict[str, Any]:
    bundles = []
    source = CatalogueSource(catalogues)
    for t, p in _pairs(tasks, preds):
        cat = source.for_task(t)
        bought: Any = p.get("purchases") if isinstance(p.get("purchases"), list) else []
        steps = []
        for i, ans in enumerate(t["answers"]):
            asin = bought[i] if i < len(bought) and isinstance(bought[i], str) and bought[i].strip() else None
            steps.append(
                {
                    "match": shopping_score.step_match(asin, ans["target_asin"]),
                    "reward": shopping_score.soft_reward(
                        bought=cat.get(asin),
                        bought_asin=asin,
                        target_asin=ans["target_asin"],
                        target=cat.get(ans["target_asin"]),
                        attributes=ans.get("attributes", []),
                    ),
                }
            )
        bundles.append(steps)
    out: dict[str, Any] = shopping_score.aggregate(bundles)
    out.update(bundles_scored=len(bundles), attribute_matcher="substring (--no-llm)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.memoryarena.score", description=__doc__.split("\n\n")[0])
    ap.add_argument("--domain", required=True, choices=["travel", "shopping"])
    ap.add_argument("--tasks", required=True, type=Path, help="task rows in the Hugging Face schema (JSON lines)")
    ap.add_argument("--predictions", required=True, type=Path, help="prediction JSON lines")
    ap.add_argument(
        "--ps-pooling",
        choices=["group", "persons"],
        default="group",
        help="travel PS: mean per group (MemoryArena paper) or pooled persons (upstream code, FlowState B.5)",
    )
    ap.add_argument(
        "--sr-missing",
        choices=["skip", "fail"],
        default="skip",
        help="travel SR: travellers absent from a prediction's plans list are skipped (upstream) or fail the group; a "
        "null or unparsable plan always fails",
    )
    ap.add_argument(
        "--full-similarity", action="store_true", help="travel: compare whole strings, not the common-length prefix"
    )
    ap.add_argument(
        "--catalogue",
        type=Path,
        default=None,
        help="shopping: catalogue JSON ({task id: [products]} or [products]); default catalogue.json beside --tasks, "
        "else synthetic",
    )
    ap.add_argument(
        "--no-llm", action="store_true", help="shopping: substring attribute test (the only one this command runs)"
    )
    a = ap.parse_args(argv)
    for label, path in (("--tasks", a.tasks), ("--predictions", a.predictions)):
        if not path.is_file():
            ap.error(f"{label}: file not found: {path}")
    tasks, preds = read_rows(a.tasks), read_rows(a.predictions)
    if a.domain == "travel":
        out = score_travel(
            tasks, preds, ps_pooling=a.ps_pooling, sr_missing=a.sr_missing, prefix_only=not a.full_similarity
        )
    else:
        cat_path = a.catalogue or (a.tasks.parent / "catalogue.json")
        cats = load_catalogues(cat_path) if (a.catalogue or cat_path.is_file()) else None
        out = score_shopping(tasks, preds, catalogues=cats)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
