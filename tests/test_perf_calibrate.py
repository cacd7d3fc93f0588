"""scripts/perf/calibrate.py: the machine's yardstick that `tail` prints beside the CPU per call."""

import json
import subprocess
import sys

from scripts.perf import calibrate
from tests.runners.sweep_helpers import REPO


def test_the_loop_figure_is_the_loops_cpu():
    # twice the iterations cost about twice the CPU: the figure measures the loop, not a constant
    short = min(calibrate.loop_ms(20_000) for _ in range(3))
    long = min(calibrate.loop_ms(80_000) for _ in range(3))
    assert short > 0
    assert 2.0 < long / short < 8.0


def test_the_loopback_figure_counts_answered_round_trips():
    us = calibrate.loopback_us(200)
    assert 0 < us < 50_000  # this process's CPU per round trip, not the wall time of a wait


def test_the_command_prints_both_figures_as_json():
    p = subprocess.run(
        [sys.executable, "-m", "scripts.perf.calibrate", "--repeats", "1", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert set(got) == {"loop_ms", "loopback_us"} and all(v > 0 for v in got.values())
