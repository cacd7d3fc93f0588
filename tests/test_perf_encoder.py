"""scripts/perf/encoder.py measures what its docstring says it does."""

import json
import random
import subprocess
import sys

from runners.records.transcripts import Encoder, Pending
from scripts.perf.encoder import _episode
from tests.runners.sweep_helpers import REPO


def test_the_encoder_workload_grows_its_prompts_and_stores_the_history_as_deltas():
    prompts = _episode(random.Random(1))
    assert [len(p) for p in prompts] == [2 + 2 * k for k in range(12)]
    assert all(a[1]["content"] in b[1]["content"] and a[1] is not b[1] for a, b in zip(prompts, prompts[1:]))
    enc, deltas = Encoder(), 0
    for p in prompts:
        pending = Pending()
        enc.messages(p, pending, "agent")
        deltas += sum(isinstance(v, tuple) for v in pending.blobs.values())
    assert deltas == 11  # the grown user message of every call after the first


def test_the_encoder_benchmark_prints_one_measurement_of_this_checkout():
    p = subprocess.run(
        [sys.executable, "-m", "scripts.perf.encoder", "--json", "--episodes", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["harness"] == str(REPO) and got["messages_us"] > 0 and got["line_delta_grew_us"] > 0
