"""Slurm through hydra-submitit-launcher, checked with its local executor: every (cell, shard)
is a separate process, each writes its own store, and the tables of the whole experiment are
exact afterwards; job logs and Hydra's sweep files sit under the experiment folder."""

import re
import subprocess
import sys

import pytest

from tests.runners.sweep_helpers import REPO

pytest.importorskip(
    "hydra_plugins.hydra_submitit_launcher", reason="hydra-submitit-launcher missing: install the `slurm` extra"
)


def test_submitit_local_jobs_with_shards_give_the_whole_experiments_tables(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        "-m",
        "hydra/launcher=slurm_local",
        "method=full_context,flowstate",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.shard=0/2,1/2",
        "runner.trials=2",
        f"runner.output_dir={tmp_path}",
        "experiment.name=slurm",
        "runner.display=plain",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    exp = tmp_path / "slurm"
    logs = sorted(exp.glob(".slurm/*/*_log.out"))
    pids = {f.name.split("_")[0] for f in logs}
    assert len(logs) == 4 and len(pids) == 4  # four jobs, four processes
    assert all("Experiment 'slurm'" in f.read_text() for f in logs)
    assert (
        exp / ".multirun" / "multirun.yaml"
    ).exists()  # Hydra's sweep files too: nothing outside the experiment folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["slurm"]
    for method in ("full_context", "flowstate"):
        cell = next(exp.glob(f"{method}__*"))
        assert sorted(d.name for d in cell.iterdir() if d.is_dir()) == ["shard-0-of-2", "shard-1-of-2"]
        assert all((d / "DONE").exists() for d in cell.iterdir() if d.is_dir())
    summary = (exp / "tables" / "summary.md").read_text()
    counts = re.findall(r"- (\w+?)__scripted__memoryarena_math__\w+: (\d+)/(\d+) episodes", summary)
    assert sorted(counts) == [
        ("flowstate", "6", "6"),
        ("full_context", "6", "6"),
    ]  # 3 tasks x 2 trials, from two shards each
    assert "[partial]" not in summary
