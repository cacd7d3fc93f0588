"""The offline sweep over every baseline of this package on the Formal Reasoning fixture, then
aggregation into one table (the CLI, as users run it)."""

import subprocess
import sys

import pytest

from baselines.mem0_method import mem0_version
from tests.runners.sweep_helpers import REPO, metrics_csv

METHODS = ["full_context", "bm25", "zipact", "zipact_bm25"] + (["reasoningbank", "mem0"] if mem0_version() else [])


@pytest.mark.slow
def test_sweep_of_baselines_aggregates_into_one_table(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"++experiment.grid.method=[{','.join(METHODS)}]",
        "benchmark=memoryarena_math",
        f"runner.output_dir={tmp_path}",
        "runner.display=plain",
        "experiment.name=offline_demo",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    agg = subprocess.run(
        [sys.executable, "-m", "runners.aggregate", str(tmp_path / "offline_demo")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert agg.returncode == 0, agg.stderr[-3000:]
    m = metrics_csv(tmp_path / "offline_demo" / "tables" / "metrics.csv")
    assert {k[0] for k in m} == set(METHODS)
    for method in METHODS:
        assert m[(method, "memoryarena_math", "SR")] == pytest.approx(100.0)
        assert m[(method, "memoryarena_math", "Tok")] > 0
    md = (tmp_path / "offline_demo" / "tables" / "summary.md").read_text()
    assert all(f"| {method} [scripted]" in md for method in METHODS)
