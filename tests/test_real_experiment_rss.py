"""`scripts/perf/real_experiment.py` measures the sweep's own peak memory (VmHWM), not the driver's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts.perf.real_experiment import high_water_kb


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/status (Linux)")
def test_high_water_mark_is_the_childs_own_not_the_parents_copied_at_fork():
    ballast = bytearray(200 * 1024 * 1024)  # 200 MB resident in this process (the driver's rows)
    ballast[::4096] = b"x" * len(ballast[::4096])
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        child = high_water_kb(p.pid)
    finally:
        p.communicate(b"")
    assert 0 < child < 100 * 1024  # a bare interpreter: tens of MB, not the parent's 200 MB
    assert high_water_kb(p.pid) == 0  # gone: nothing to read
    del ballast
