"""Every method runs on every benchmark the harness has (one task each, scripted backbone) and aggregates
into one table.

- default profile: every method and every benchmark at least once, each method on the next benchmark in
  turn (19 cells instead of 209), in this process through the sweep's own steps (Hydra compose, validate,
  one scheduler, the aggregator), so data and models load once;
- long profile (`-m long`, its own CI step): every method × every benchmark through the sweep CLI."""

import asyncio
import importlib.util
import io
import os

import pytest
from hydra import compose, initialize_config_dir

from runners.analysis.tables import aggregate_dir
from runners.config import CONF_DIR, available, method_aliases, validate
from runners.launch import run_all
from runners.sweep import expand_cells, register_resolvers
from tests.conftest import SHARED_DATA
from tests.runners.sweep_helpers import metrics_csv, run_sweep

HEADLINE = {
    "memoryarena_math": "SR",
    "memoryarena_phys": "SR",
    "memoryarena_shopping": "SR",
    "memoryarena_travel": "SR",
    "tau_airline": "Pass1",
    "tau_retail": "Pass1",
    "alfworld": "SR",
    "rca100": "joint_entity_type_accuracy",
    "clindiag": "diagnosis_accuracy",
    "loca": "task_success",
    "toy": "SR",
}


def matrix_axes() -> tuple[list[str], list[str], dict[str, str]]:
    """(methods, benchmarks, environment) this machine can run: the TravelPlanner database and the
    ALFWorld games only where the shared data (and the alfworld extra) are; mem0 and reasoningbank
    only with the mem0 extra (reasoningbank's local MiniLM embedder ships with it)."""
    env = {}
    benches = [
        "memoryarena_math",
        "memoryarena_phys",
        "memoryarena_shopping",
        "tau_airline",
        "tau_retail",
        "rca100",
        "clindiag",
        "loca",
        "toy",
    ]
    if (SHARED_DATA / "memoryarena-travel-db").is_dir():
        benches.append("memoryarena_travel")
        env["TRAVELPLANNER_DB_DIR"] = str(SHARED_DATA / "memoryarena-travel-db")
    if (SHARED_DATA / "alfworld").is_dir() and importlib.util.find_spec("alfworld"):
        benches.append("alfworld")
        env["ALFWORLD_DATA"] = str(SHARED_DATA / "alfworld")
    methods = [m for m in available("method") if m not in method_aliases()]  # an alias is the same cell as its method
    if not importlib.util.find_spec("mem0"):
        methods.remove("mem0")
    if not importlib.util.find_spec("sentence_transformers"):
        methods.remove("reasoningbank")
    assert set(benches) <= set(HEADLINE) and set(available("benchmark")) <= set(HEADLINE), (
        "a new benchmark needs its headline here"
    )
    return methods, benches, env


def assert_every_cell_solved(metrics: dict, pairs: list[tuple[str, str]]) -> None:
    for method, b in pairs:
        assert metrics[(method, b, HEADLINE[b])] == 100.0, (method, b)
        assert metrics[(method, b, "Tok")] > 0, (method, b)


def test_every_method_and_every_benchmark(tmp_path, monkeypatch):
    methods, benches, env = matrix_axes()
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # each method on the next benchmark in turn: every method and every benchmark at least once
    pairs = [(methods[i % len(methods)], benches[i % len(benches)]) for i in range(max(len(methods), len(benches)))]
    assert {m for m, _ in pairs} == set(methods) and {b for _, b in pairs} == set(benches)
    register_resolvers()
    common = ["runner.limit=1", "experiment.name=matrix", f"runner.output_dir={tmp_path}", "runner.display=none"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cells = []
        for m, b in pairs:
            overrides = common + [f"method={m}", f"benchmark={b}"]
            cells += [validate(c) for c in expand_cells(compose(config_name="config", overrides=overrides), overrides)]
    root = tmp_path / "matrix"
    reports = asyncio.run(run_all(cells, root, "none"))
    assert [(r.ok, r.total) for r in reports] == [(1, 1)] * len(pairs), [
        (r.cell, r.errors) for r in reports if r.ok != r.total
    ]
    aggregate_dir(root, with_paper=False, out=io.StringIO())
    assert_every_cell_solved(metrics_csv(root / "tables" / "metrics.csv"), pairs)


@pytest.mark.long
@pytest.mark.timeout(2000)  # the sweep's own limit below is 1800 s
def test_every_method_on_every_benchmark(tmp_path):
    methods, benches, env = matrix_axes()
    p = run_sweep(
        tmp_path,
        "runner.limit=1",
        "experiment.name=matrix",
        f"experiment.grid.method=[{','.join(methods)}]",
        f"experiment.grid.benchmark=[{','.join(benches)}]",
        env={**os.environ, **env},
        timeout=1800,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"{len(methods) * len(benches)}/{len(methods) * len(benches)} episodes done" in p.stdout
    assert_every_cell_solved(
        metrics_csv(tmp_path / "matrix" / "tables" / "metrics.csv"), [(m, b) for m in methods for b in benches]
    )
