"""End to end: one PoS sweep with the scripted backbone over ALFWorld (real engine, a few real
games), the RCA-100 synthetic fixture and the ClinDiag fictional fixture stays green: every
episode ok and won/solved, with belief and Sentinel calls, the ALFWorld policy seeing admissible
commands, and the manifests recording the upstream text sources."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from benchmarks.alfworld import engine
from tests.conftest import shared_path
from tests.runners.sweep_helpers import REPO, cell_records


@pytest.mark.skipif(not engine.available(), reason=f"alfworld engine not importable; {engine.INSTALL_HINT}")
@pytest.mark.parametrize(
    "limit",
    # the default profile: one task per benchmark (most of the time is the ALFWorld engine's start and each game's
    # PDDL load); the long profile two, so that a second episode of a cell also runs after the first
    [pytest.param(2, id="2_tasks", marks=pytest.mark.long), pytest.param(1, id="1_task")],
)
def test_pos_sweep_over_alfworld_rca_clindiag(tmp_path, limit):
    alf = shared_path("alfworld")
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "method=pos",
        "backbone=scripted",
        "++experiment.grid.benchmark=[alfworld,rca100,clindiag]",
        "benchmark.params.data_dir=fixtures",
        f"runner.limit={limit}",
        "experiment.name=pos_e2e",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO), "ALFWORLD_DATA": str(alf)}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = list(csv.DictReader(open(tmp_path / "pos_e2e" / "tables" / "metrics.csv", encoding="utf-8")))
    got = {
        (r["benchmark"], r["metric"]): float(r["value"])
        for r in rows
        if r["method"] == "pos" and r["value"] not in ("", "None")
    }
    assert got[("alfworld", "SR")] == 100.0 and got[("rca100", "joint_entity_type_accuracy")] == 100.0
    assert ("clindiag", "diagnosis_accuracy") in got
    for cell in (tmp_path / "pos_e2e").glob("pos__scripted__*"):
        eps = cell_records(cell)
        assert (
            len(eps) == limit
            and all(e["status"] == "ok" for e in eps)
            and {"state", "sentinel"} <= set(eps[0]["calls_by_role"])
        )
        manifest = json.loads((cell / "manifest.json").read_text())
        if "alfworld" in cell.name:
            assert eps[0]["requests"][0]["steps"][0]["observation"][
                "actions"
            ]  # the admissible commands reached the policy
        if "rca100" in cell.name:
            assert manifest["benchmark_notes"]["text_sources"]["paraphrased"] == []
