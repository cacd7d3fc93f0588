"""scripts/perf/tail.py runs a variant without transcripts (the figure of what the transcripts cost)."""

import subprocess
import sys

from tests.runners.sweep_helpers import REPO


def test_tail_runs_a_variant_without_transcripts_and_checks_it_as_one():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.perf.tail",
            "--episodes",
            "2",
            "--concurrency",
            "2",
            "--repeats",
            "1",
            "--latency",
            "0.005",
            "--variant",
            "++runner.transcripts=False",  # Hydra's spellings count too, not only `runner.transcripts=false`
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    rows = {line.split()[0] for line in p.stdout.splitlines()[-3:] if line.strip()}
    assert {"this", "variant"} <= rows
