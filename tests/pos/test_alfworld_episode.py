"""PoS on real ALFWorld games (scripted backbone playing the expert walkthrough): the belief
loop runs on every step and the games are won. Needs the alfworld extra and the shared data."""

from __future__ import annotations

from runners.config import group_config

import asyncio
from pathlib import Path

import pytest
import yaml

from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.conftest import shared_path

REPO = Path(__file__).resolve().parents[2]


def test_pos_wins_walkthrough_games():
    method = "pos"
    pytest.importorskip("alfworld", reason="the [alfworld] extra is not installed")
    data = shared_path("alfworld")
    from benchmarks.alfworld.benchmark import Alfworld
    from pos.method import PoS

    bparams = yaml.safe_load((REPO / "conf/benchmark/alfworld.yaml").read_text())["params"] | {
        "data_dir": str(data),
        "limit": 2,
    }
    mparams = group_config("method", method)["params"]
    bench = Alfworld(name="alfworld", **bparams)
    for task in bench.load_tasks()[:2]:
        ep = Episode(ScriptedBackbone(), cell=method, task_id=task.task_id)
        rec = asyncio.run(ep.run(ep.make_env(bench, task), PoS(ep.agent, **mparams)))
        assert rec.status == "ok", rec.error
        assert rec.scores["won"] is True
        steps = rec.requests[0].steps
        assert rec.calls_by_role["agent"] == len(steps) and {"state", "sentinel"} <= set(rec.calls_by_role)
        # every non-first step committed one belief update for the previous action
        assert [s.method["update"]["step"] for s in steps] == list(range(-1, len(steps) - 1))
        assert all(s.method["update"]["status"] in ("validated", "unaudited") for s in steps)
