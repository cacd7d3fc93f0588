"""Offline end-to-end sweep (the CLI users run) on each domain's fixture with the scripted backbone."""

import pytest

from tests.conftest import shared_path
from tests.runners.sweep_helpers import metrics_csv, run_sweep


@pytest.mark.parametrize(
    "bench, extra, metrics",
    [
        ("memoryarena_travel", ["benchmark.params.flights_path=fixtures"], ["SR", "PS", "sPS"]),
        ("memoryarena_shopping", [], ["SR", "PS", "soft_reward"]),
    ],
)
def test_scripted_sweep_scores_100(tmp_path, bench, extra, metrics):
    env = {"TRAVELPLANNER_DB_DIR": str(shared_path("memoryarena-travel-db"))} if bench == "memoryarena_travel" else {}
    p = run_sweep(tmp_path, f"benchmark={bench}", "method=full_context", *extra, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    got = metrics_csv(next(tmp_path.glob("*/tables/metrics.csv")))
    for m in metrics:
        assert got[("full_context", bench, m)] == 100.0, m
