"""Ctrl-C on the readers (`runners.aggregate`, `runners.view`, `runners.paper`): one line saying what
became of the output, exit 130, no traceback. The SIGINT is real (the process sends it to itself
from inside the command's work)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import REPO

# the command's work, replaced by a real SIGINT to the process
WORK = {
    "aggregate": ("runners.aggregate", "aggregate_dir", "the tables were not changed"),
    "view": ("runners.analysis.report", "build_report", "the report was not written"),
    "paper": ("runners.analysis.paper", "write_all", "not every artefact was written"),
}


@pytest.mark.parametrize("name", sorted(WORK))
def test_ctrl_c_on_a_reader_exits_130_with_one_line(name, tmp_path):
    module, work, said = WORK[name]
    (tmp_path / "exp").mkdir()
    code = (
        "import os, signal, sys, importlib\n"
        f"m = importlib.import_module({module!r})\n"
        f"setattr(m, {work!r}, lambda *a, **k: os.kill(os.getpid(), signal.SIGINT))\n"
        f"import runners.{name} as cli\n"
        f"sys.exit(cli.cli([{str(tmp_path / 'exp')!r}]))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, preexec_fn=default_sigint
    )
    assert p.returncode == 130, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and p.stderr.strip().splitlines() == [p.stderr.strip().splitlines()[-1]], (
        p.stderr
    )
    assert p.stderr.strip().startswith(f"interrupted (Ctrl-C): {said}")
