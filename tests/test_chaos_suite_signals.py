"""The chaos suite's sweeps can be interrupted with SIGINT even when the suite itself was started with
SIGINT ignored (a background job of a non-interactive shell, nohup): its SIGINT attacks must land."""

import signal
import subprocess
import sys
import textwrap

from tests.runners.sweep_helpers import REPO

# A Suite whose "sweep" is a child that says whether it ignores SIGINT; run by `Suite.sweep` and by
# `Suite.popen`, the two ways the suite starts its sweeps.
PROBE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from scripts.chaos.suite import Suite

    class Probe(Suite):
        def __init__(self):
            self.printed = []

        def args(self, out, *extra):
            return [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"]

        def env(self, **kw):
            return dict(os.environ)

    p = Probe()
    print("suite ignores SIGINT:", signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    print("sweep ignores SIGINT:", p.sweep(Path(".")).stdout.strip())
    print("popen ignores SIGINT:", p.popen(Path(".")).communicate()[0].strip())
    """
)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_suites_sweeps_get_sigint_back_when_the_suite_ignores_it():
    p = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_ignore_sigint,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines() == [
        "suite ignores SIGINT: True",  # as from a background job
        "sweep ignores SIGINT: False",
        "popen ignores SIGINT: False",
    ], p.stdout
