"""Run a scripted sweep in a subprocess and read its metrics and episode records (shared by the
RCA-100 and ClinDiag end-to-end tests)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from tests.runners.sweep_helpers import cell_records

REPO = Path(__file__).resolve().parents[2]


def run_sweep(out: Path, benchmark: str, *overrides: str) -> dict[tuple[str, str], float]:
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={out}",
        f"benchmark={benchmark}",
        "experiment.grid.method=[full_context,pos]",
        "runner.display=none",
        *overrides,
    ]
    proc = subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = list(csv.DictReader(open(next(out.glob("*/tables/metrics.csv")), encoding="utf-8")))
    return {(r["method"], r["metric"]): float(r["value"]) for r in rows if r["benchmark"] == benchmark}


def episodes(out: Path, method: str) -> list[dict]:
    return cell_records(next(out.glob(f"*/{method}__scripted__*/")))
