"""scripts/perf/tail.py runs a variant without transcripts (the figure of what the transcripts cost), and prints
the machine's yardstick beside the CPU per call."""

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
            "--background-chars",
            "300",
            "--reply-chars",
            "100",
            "--variant",
            "++runner.transcripts=False",  # Hydra's spellings count too, not only `runner.transcripts=false`
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines()[-3:] if line.strip()}
    assert {"this", "variant"} <= set(rows)
    # the last column is the CPU per call in units of the machine's loop (scripts/perf/calibrate.py)
    assert float(rows["this"][-1]) > 0 and p.stdout.count("  machine  python loop ") == 1
    assert "machine (median of 1): python loop" in p.stdout
    assert "300 background / 100 reply chars" in p.stdout.splitlines()[0]
