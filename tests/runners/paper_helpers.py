"""Synthetic experiments in the real record format (runners.records.schema) for the paper artefacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runners.api import Decision, Observation, Request, Usage
from runners.records.schema import EpisodeRecord, RequestRecord, StepRecord

TARGETS = {
    "memoryarena_shopping": ("benchmarks.memoryarena.shopping.BundledShopping", {}),
    "memoryarena_math": ("benchmarks.memoryarena.formal.FormalReasoning", {"config": "formal_reasoning_math"}),
    "memoryarena_phys": ("benchmarks.memoryarena.formal.FormalReasoning", {"config": "formal_reasoning_phys"}),
    "alfworld": ("benchmarks.alfworld.benchmark.Alfworld", {}),
    "loca": ("benchmarks.loca.benchmark.Loca", {}),
    "rca100": ("benchmarks.rca100.benchmark.Rca100", {}),
}
BENCH_ROLES = {
    "memoryarena_shopping": {},
    "memoryarena_math": {"judge": "gpt_5_mini", "tool": "gpt_5_mini"},
    "memoryarena_phys": {"judge": "gpt_5_mini", "tool": "gpt_5_mini"},
}


def formal_scores(correct: list[int]) -> dict[str, Any]:
    return {"subtask_correct": correct, "success": int(bool(correct) and bool(correct[-1]))}


def shopping_scores(correct: list[int]) -> dict[str, Any]:
    return {"steps": [{"match": bool(c), "reward": float(c)} for c in correct], "subtask_correct": correct}


def health_step(t: int, trapped: bool, pattern: str | None = None) -> StepRecord:
    health = {"health_score": 0.1 if trapped else 0.9, "trapped": trapped, "trapping_pattern": pattern}
    return StepRecord(t=t, observation=Observation(), decision=Decision(message="act"), method={"health": health})


def episode(
    cell: str,
    task_id: str,
    scores: dict[str, Any],
    tokens: dict[str, int],
    trial: int = 0,
    steps: list[StepRecord] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    rec = EpisodeRecord(
        cell=cell,
        task_id=task_id,
        trial=trial,
        seed=0,
        scores=scores,
        usage_by_role={r: Usage(prompt_tokens=n) for r, n in tokens.items()},
        requests=[RequestRecord(request=Request(index=0, request_id=f"{task_id}/q0", text="do it"), steps=steps or [])],
    )
    out = rec.model_dump(mode="json")
    out.update(extra)
    return out


def write_cell(
    root: Path,
    method: str,
    backbone: str,
    benchmark: str,
    episodes: list[dict[str, Any]],
    *,
    data_dir: str | None = None,
    n_tasks: int | None = None,
    roles: dict[str, Any] | None = None,
    paraphrased: list[str] | None = None,
    params: dict[str, Any] | None = None,
) -> Path:
    target, base = TARGETS[benchmark]
    name = f"{method}__{backbone}__{benchmark}__{abs(hash((method, backbone, benchmark))) % 10**10:010d}"
    d = Path(root) / name
    d.mkdir(parents=True)
    cfg = {
        "method": {"name": method},
        "backbone": {"name": backbone, "kind": "openai"},
        "benchmark": {
            "name": benchmark,
            "_target_": target,
            "params": {**base, "data_dir": data_dir, **(params or {})},
            "roles": BENCH_ROLES.get(benchmark, {}),
        },
        "roles": roles or {},
    }
    ids = list(dict.fromkeys(e["task_id"] for e in episodes))
    manifest = {
        "config": cfg,
        "scripted": False,
        "n_tasks": n_tasks or len(ids),
        "task_ids": ids,
        "trials": 1,
        "benchmark_notes": {"text_sources": {"paraphrased": paraphrased or []}},
    }
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "episodes.jsonl").write_text("".join(json.dumps(dict(e, cell=name)) + "\n" for e in episodes))
    return d
