"""The plan's numbers (runners/plan.py), in-process on a composed cell and records in the store's
format: what a resumed run counts as done, which stored roles make up the method's estimate, how a
paper's #Tok is split into input, cached input and output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from runners.config import CONF_DIR, validate
from runners.plan import StoredRuns, episodes_done, plan_cell
from runners.sweep import expand_cells, register_resolvers

PAPER_MATH_TOK_PER_TASK = 40.60e6 / 40  # FlowState Table 1: Full Context on Math, DeepSeek-V4-Flash, 40 tasks


def cell(tmp_path: Path, *overrides: str):
    register_resolvers()
    ov = [
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "experiment.name=exp",
        f"runner.output_dir={tmp_path}",
        *overrides,
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        (c,) = [validate(x) for x in expand_cells(compose(config_name="config", overrides=ov), ov)]
    return c


def store(cfg, usage: dict[str, dict[str, int]], keys: list[tuple[str, int]], name: str | None = None) -> Path:
    """A finished, non-scripted cell of `cfg` under its output dir: one ok record per (task, trial)."""
    d = Path(cfg.runner.output_dir) / cfg.experiment.name / (name or cfg.cell_name)
    d.mkdir(parents=True)
    config = {
        "method": {"name": cfg.method.name},
        "benchmark": {"name": cfg.benchmark.name},
        "backbone": {"name": cfg.backbone.name, "model": cfg.backbone.model},
    }
    manifest = {"config": config, "scripted": False, "trials": 1}
    (d / "manifest.json").write_text(json.dumps(manifest))
    recs = [
        {
            "task_id": t,
            "trial": k,
            "status": "ok",
            "usage_by_role": {
                r: {"prompt_tokens": u["prompt"], "cached_prompt_tokens": u.get("cached", 0), "completion_tokens": 1}
                for r, u in usage.items()
            },
            "calls_by_role": {r: 1 for r in usage},
        }
        for t, k in keys
    ]
    (d / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def test_a_stored_trial_beyond_the_configured_trials_is_not_done(tmp_path):
    cfg = cell(tmp_path, "runner.trials=2")
    # trials 0-2 of two tasks on disk (an earlier run with runner.trials=3), plus a task not asked for now
    store(cfg, {"agent": {"prompt": 1}}, [(t, k) for t in ("0", "1") for k in range(3)] + [("7", 0)])
    assert episodes_done(cfg, ["0", "1"]) == 4
    assert episodes_done(cfg, None) == 5  # every task id counts when the plan did not load the tasks


def test_the_methods_estimate_sums_its_roles_on_the_agent_backbone(tmp_path):
    cfg = cell(tmp_path, "backbone=openai_compatible", "backbone.model=fake-model")
    usage = {r: {"prompt": p} for r, p in (("agent", 1000), ("state", 200), ("memory", 30), ("sentinel", 4))}
    store(cfg, {**usage, "judge": {"prompt": 50_000}}, [("0", 0), ("1", 0)])
    plan = plan_cell(cfg, 2, "loaded here", StoredRuns(tmp_path), ("judge",))
    agent = next(r for r in plan.roles if r.role == "agent (method)")
    assert (agent.prompt, agent.completion, agent.calls) == (1234, 4, 4)  # state, memory, sentinel included


def test_the_papers_tok_is_split_by_the_stored_runs_shares(tmp_path):
    cfg = cell(tmp_path, "backbone=deepseek_v4_flash")
    store(cfg, {"agent": {"prompt": 999, "cached": 500}}, [("0", 0)])  # + 1 completion token: 999 in, 1 out
    plan = plan_cell(cfg, 1, "loaded here", StoredRuns(tmp_path), ())
    (agent,) = plan.roles
    assert agent.source.startswith("paper: FlowState Table 1 #Tok 40.6M / 40 tasks (input/output split of the stored")
    assert agent.prompt == pytest.approx(PAPER_MATH_TOK_PER_TASK * 0.999)
    assert agent.completion == pytest.approx(PAPER_MATH_TOK_PER_TASK * 0.001)
    assert agent.cached == pytest.approx(agent.prompt * 500 / 999)  # the stored cache-hit share of the input


def test_without_a_stored_run_the_paper_tok_is_95_percent_input_without_cache_hits(tmp_path):
    cfg = cell(tmp_path, "backbone=deepseek_v4_flash")
    (agent,) = plan_cell(cfg, 1, "loaded here", StoredRuns(tmp_path), ()).roles
    assert "assumed 95% input, no cache hits" in agent.source  # docs/runner.md states this split
    assert agent.prompt == pytest.approx(PAPER_MATH_TOK_PER_TASK * 0.95)
    assert agent.completion == pytest.approx(PAPER_MATH_TOK_PER_TASK * 0.05)
    assert agent.cached == 0
