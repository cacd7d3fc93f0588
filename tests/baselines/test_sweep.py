"""The offline sweep over every baseline of this package on the Formal Reasoning fixture, then
aggregation into one table (the CLI, as users run it)."""

import subprocess
import sys

import pytest

from baselines.mem0_method import mem0_version
from tests.runners.sweep_helpers import REPO, metrics_csv

OFFLINE = ["full_context", "bm25", "zipact", "zipact_bm25"]
# The default profile sweeps the baselines that need no extra over 2 tasks; the long profile every baseline
# (reasoningbank and mem0 load MiniLM and torch when the mem0 extra is installed: most of the test's time) over
# every task. reasoningbank's and mem0's own behaviour is tested in-process in test_reasoningbank.py/test_mem0.py.
PROFILES = [
    pytest.param(
        OFFLINE + (["reasoningbank", "mem0"] if mem0_version() else []), None, id="all", marks=pytest.mark.long
    ),
    pytest.param(OFFLINE, 2, id="offline_2_tasks"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("methods", "limit"), PROFILES)
def test_sweep_of_baselines_aggregates_into_one_table(tmp_path, methods, limit):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"++experiment.grid.method=[{','.join(methods)}]",
        "benchmark=memoryarena_math",
        f"runner.output_dir={tmp_path}",
        "runner.display=plain",
        "experiment.name=offline_demo",
        *([f"runner.limit={limit}"] if limit else []),
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
    assert {k[0] for k in m} == set(methods)
    for method in methods:
        assert m[(method, "memoryarena_math", "SR")] == pytest.approx(100.0)
        assert m[(method, "memoryarena_math", "Tok")] > 0
    md = (tmp_path / "offline_demo" / "tables" / "summary.md").read_text()
    assert all(f"| {method} [scripted]" in md for method in methods)
