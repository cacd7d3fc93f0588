"""scripts/perf/insitu.py times the functions it names inside the real sweep process."""

import json
import subprocess
import sys

import pytest

from scripts.perf.inspect_compare import CALLS_PER_EPISODE
from tests.runners.sweep_helpers import REPO


def test_insitu_counts_every_run_of_a_wrapped_function_in_the_sweep_process():
    episodes = 3
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.perf.insitu",
            "--json",
            "--episodes",
            str(episodes),
            "--concurrency",
            "3",
            "--latency",
            "0.005",
            "--wrap",
            "runners.records.transcripts:Encoder.messages",  # a method, once per model call
            "runners.records.store:CellStore._line",  # once per episode
            "runners.records.transcripts:digest",  # a module-level function
            "no.such.module:f",  # never imported
            "runners.records.transcripts:Encoder.nope",  # imported whole, without such a name
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    calls = episodes * CALLS_PER_EPISODE
    w = got["wrapped"]
    assert got["calls"] == calls and got["cpu_per_call_us"] > 0
    assert w["runners.records.transcripts:Encoder.messages"]["runs"] == calls
    assert w["runners.records.store:CellStore._line"]["runs"] == episodes
    assert w["runners.records.transcripts:digest"]["runs"] >= calls  # at least the reply of every call
    missing = ["no.such.module:f", "runners.records.transcripts:Encoder.nope"]
    assert all(w[t]["us_each_raw"] > 0 for t in w if t not in missing)
    # the wrapper's own clock reads, measured on an empty function at the sweep's exit, are taken off each run
    over = got["wrapper_us_per_run"]
    assert over > 0
    for t in w:
        if t not in missing:
            assert w[t]["us_each"] == pytest.approx(max(0.0, w[t]["us_each_raw"] - over))
    enc = w["runners.records.transcripts:Encoder.messages"]
    assert enc["us_per_call"] == pytest.approx(enc["us_each"])  # one run a call
    assert got["unwrapped"] == missing and all(w[t]["runs"] == 0 for t in missing)


def test_insitu_refuses_a_target_without_its_module():
    p = subprocess.run(
        [sys.executable, "-m", "scripts.perf.insitu", "--wrap", "Encoder.messages"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "MODULE:QUALNAME" in p.stderr
