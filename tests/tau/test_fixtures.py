"""The project's own τ fixture (benchmarks/tau/fixtures, upstream layout, not τ² data): offline
episodes through the real loop reach reward 1; hand-checked DB changes. Needs no shared data."""

from __future__ import annotations

import asyncio
import json

import pytest

from baselines.full_context import FullContext
from benchmarks.tau import evaluation
from benchmarks.tau.benchmark import TauBenchmark
from benchmarks.tau.data import FIXTURE_SOURCE, DomainData
from benchmarks.tau.replay import main as replay_main, replay_task
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.tau.helpers import empty_trajectory, gold_trajectory


def run(domain: str):
    bench = TauBenchmark(name=f"tau_{domain}", domain=domain, data_dir="fixtures")
    recs = []
    for task in bench.load_tasks():
        ep = Episode(ScriptedBackbone(), cell="f", task_id=task.task_id)
        recs.append(asyncio.run(ep.run(ep.make_env(bench, task), FullContext(ep.agent))).model_dump())
    return bench, recs


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_offline_scripted_episodes_score_one(domain):
    bench, recs = run(domain)
    assert [r["status"] for r in recs] == ["ok", "ok"]
    assert all(r["scores"]["reward"] == 1.0 and r["scores"]["termination"] == "user_stop" for r in recs)
    assert bench.metrics(recs) == {"Pass1": 100.0, "DB": 100.0, "ActionAcc": 100.0, "avg_reward": 1.0, "episodes": 2.0}
    assert bench.notes()["data"]["source"] == FIXTURE_SOURCE and not bench.notes()["data"]["checksums_verified"]


def test_fixture_gold_changes_by_hand():
    air = DomainData("airline", "fixtures")
    out = replay_task(air, air.split("base")[0])
    res = json.loads(out["outputs"][1]["content"])
    assert res["status"] == "cancelled" and res["payment_history"][-1] == {
        "payment_id": "credit_card_100",
        "amount": -340,
    }
    ret = DomainData("retail", "fixtures")
    out = replay_task(ret, ret.split("base")[0])
    assert out["outputs"][0]["content"] == "cy_fixture_2"
    order = json.loads(out["outputs"][1]["content"])
    assert order["items"][0]["item_id"] == "2000000002" and order["items"][0]["price"] == 12.25
    assert order["payment_history"][-1] == {
        "transaction_type": "payment",
        "amount": 12.25 - 10.5,
        "payment_method_id": "paypal_400",
    }
    for data in (air, ret):
        for task in data.split("base"):
            changes = evaluation.gold_db_hash(data, task) != evaluation.initial_db_hash(data)
            assert changes == (task["id"] == "0" or data.domain == "retail"), (data.domain, task["id"])
            assert evaluation.db_check(data, task, empty_trajectory())["db_match"] is (not changes)
            assert evaluation.db_check(data, task, gold_trajectory(data, task))["db_match"]


def test_replay_cli_on_fixture(capsys):
    assert replay_main(["--domain", "retail", "--data-dir", "fixtures", "--split", "test"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["task_id"] for r in lines] == ["1"] and lines[0]["outputs"][1]["error"] is False
    assert replay_main(["--domain", "retail", "--data-dir", "/nonexistent", "--split", "base"]) == 2
    assert "has no tau2/domains" in capsys.readouterr().err
