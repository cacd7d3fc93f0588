"""scripts/perf/compact_levels.py tells its storage run from its CPU run by role: equal episode
counts for both are a valid choice (they crashed it when runs were told apart by size)."""

import subprocess
import sys

from tests.runners.sweep_helpers import REPO


def test_compact_levels_with_equal_counts_measures_both_runs():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.perf.compact_levels",
            "--levels",
            "1",
            "--rounds",
            "1",
            "--episodes",
            "2",
            "--storage-episodes",
            "2",
            "--concurrency",
            "2",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    row = p.stdout.strip().splitlines()[-1].split()
    assert row[0] == "1" and float(row[-1]) > 0  # the level's storage and CPU per call both measured
