"""Run the sweep CLI as a subprocess, the way users do."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def sweep_cmd(out: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "runners.sweep", f"runner.output_dir={out}", "runner.display=plain", *overrides]


def run_sweep(out: Path, *overrides: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {**os.environ, **(env or {})}
    return subprocess.run(sweep_cmd(out, *overrides), cwd=REPO, capture_output=True, text=True, timeout=timeout, env=e)


def metrics_csv(path: Path) -> dict[tuple[str, str, str], float]:
    with open(path, newline="") as f:
        return {(r["method"], r["benchmark"], r["metric"]): float(r["value"]) for r in csv.DictReader(f) if r["value"] not in ("", "None")}
