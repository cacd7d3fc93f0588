"""Whole scripted episodes through runners.episode.Episode, each method built from its
conf/method YAML: MemoryArena formal (fixtures) and, when available, 2 real ALFWorld games."""

from runners.config import group_config
import asyncio
import importlib
from pathlib import Path

import pytest
import yaml

from benchmarks.memoryarena.formal import FormalReasoning
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.conftest import shared_path
from tests.pos_baselines.helpers import FnBackbone, act, drive

REPO = Path(__file__).resolve().parents[2]
METHODS = ["acon", "pace", "hiagent", "longhorizon_harness"]


def build(name, backbone, **override):
    cfg = group_config("method", name)
    assert cfg["name"] == name
    mod, cls = cfg["_target_"].rsplit(".", 1)
    return getattr(importlib.import_module(mod), cls)(backbone, **(cfg["params"] | override))


def episode(bench, task, method_name, **override):
    ep = Episode(ScriptedBackbone(), cell=method_name, task_id=task.task_id)
    return asyncio.run(ep.run(ep.make_env(bench, task), build(method_name, ep.agent, **override)))


@pytest.mark.parametrize("name", METHODS)
def test_formal_math_episode(name):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    rec = episode(bench, task, name)
    assert rec.status == "ok", rec.error
    assert rec.scores["subtask_correct"] == [1, 1, 1] and len(rec.requests) == 3
    assert rec.calls_by_role["agent"] == 3


def test_formal_aux_calls_are_split_from_the_policy():
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    rec = episode(bench, task, "acon", history_threshold_tokens=10, obs_threshold_tokens=10)
    assert rec.status == "ok" and rec.usage_by_role["memory"].total > 0 and rec.usage_by_role["agent"].total > 0
    rec = episode(bench, task, "longhorizon_harness")
    assert rec.calls_by_role["state"] == 3  # one manager round per request
    assert "Request 1 ended" in rec.requests[2].method["verified_progress"][0]


@pytest.mark.parametrize("name", METHODS)
def test_alfworld_walkthrough_games(name):
    pytest.importorskip("alfworld", reason="the [alfworld] extra is not installed")
    data = shared_path("alfworld")
    from benchmarks.alfworld.benchmark import Alfworld

    params = yaml.safe_load((REPO / "conf/benchmark/alfworld.yaml").read_text())["params"] | {
        "data_dir": str(data),
        "limit": 2,
    }
    bench = Alfworld(name="alfworld", **params)
    tasks = bench.load_tasks()[:2]
    assert len(tasks) == 2
    for task in tasks:
        rec = episode(bench, task, name, **({"executor_max_actions": 2} if name == "longhorizon_harness" else {}))
        assert rec.status == "ok", rec.error
        assert rec.scores["won"] is True
        steps = rec.requests[0].steps
        assert rec.calls_by_role["agent"] == len(steps) == rec.scores["actions"]
        if name == "pace":
            assert rec.calls_by_role["memory"] == len(steps) - 1  # one summary per step whose observation arrived
        if name == "longhorizon_harness":
            assert rec.calls_by_role["state"] >= 2 * (len(steps) // 2) - 1  # manager + auditor per 2-action round


def test_context_overflow_is_recorded_not_truncated():
    bb = FnBackbone(lambda role, m: act("look"))
    m = build("acon", bb, context_window_tokens=50, history_compression=False)
    decisions = drive(m, ["", "o1"])
    assert all(d.is_empty for d in decisions) and bb.calls == []
    assert m.step_log()["context_overflow"] is True


@pytest.mark.parametrize("name", METHODS)
def test_yaml_rejects_unknown_params(name):
    with pytest.raises(ValueError, match=f"conf/method/{name}.yaml"):
        build(name, FnBackbone(lambda r, m: ""), no_such_switch=1)
