"""A Ctrl-C the project handles ends `python -m` with the status it chose (130), also when the interrupt
landed in code CPython ran from source text (`exec` of a string, as `dataclasses` builds methods while
modules import): CPython marks such an interrupt as unhandled even when it is caught further out, and a
marked `python -m` process kills itself with SIGINT at exit (status -2) unless the mark is cleared
(runners.interrupts.handled). A sweep interrupted in its first ~0.3 s, while pydantic imported, ended so."""

import subprocess
import sys
import textwrap

import pytest

from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import REPO

# the interrupt lands inside code run from source text, as SIGINT does in dataclasses' `exec`
LANDS_IN_EXEC = 'exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nx = 1")'

MODULES = {
    "sweep_start": f"""
        import signal, sys
        from runners import interrupts
        try:
            {LANDS_IN_EXEC}
        except KeyboardInterrupt:  # as runners.sweep.main does
            sys.exit(interrupts.report(signal.SIGINT))
        """,
    "reader": f"""
        import sys
        from runners import interrupts
        def main():
            {LANDS_IN_EXEC}
            return 0
        sys.exit(interrupts.reader_cli(main, "nothing was written"))
        """,
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_handled_interrupt_inside_code_run_from_text_exits_130(tmp_path, name):
    (tmp_path / f"{name}_mod.py").write_text(textwrap.dedent(MODULES[name]))
    p = subprocess.run(
        [sys.executable, "-m", f"{name}_mod"],
        cwd=tmp_path,
        env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=default_sigint,
    )
    assert p.returncode == 130, (p.returncode, p.stderr[-2000:])
    assert "interrupted" in p.stderr and "Traceback" not in p.stderr
