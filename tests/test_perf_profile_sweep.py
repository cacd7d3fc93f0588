"""scripts/perf/profile_sweep.py profiles a run with sweep overrides (`--variant`): where the rest of
the CPU goes once a part is off."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runners.sweep_helpers import REPO


def test_profile_sweep_runs_a_variant_without_transcripts_and_checks_it_as_one(tmp_path):
    if not (shutil.which("py-spy") or Path(sys.executable).with_name("py-spy").exists()):
        pytest.skip("py-spy is not installed (the dev extra installs it)")
    raw = tmp_path / "raw.txt"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.perf.profile_sweep",
            "--episodes",
            "2",
            "--concurrency",
            "2",
            "--raw",
            str(raw),
            "--variant",
            "++runner.transcripts=False",  # checked as a run whose calls have no transcript
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if "py-spy failed" in p.stderr:
        pytest.skip(f"py-spy cannot sample a child process here: {p.stderr.strip()[-300:]}")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "by thread:" in p.stdout and raw.stat().st_size > 0
    assert "transcripts" not in p.stdout.split("by group")[0]  # no transcript thread ran
