"""Ctrl-C (or SIGTERM) while the sweep starts: in the checks before Hydra, or while Hydra composes
the config, where OmegaConf and Hydra wrap the interrupt in their own exception (a
ConfigCompositionException with an empty message). The sweep exits as an interrupted start-up
(130 / 143, one line, no traceback), never with the wrapper's error."""

import signal
import subprocess
import sys
import textwrap

from hydra.errors import ConfigCompositionException

from runners import interrupts
from runners.interrupts import signal_inside
from runners.sweep import describe_hydra_error
from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import REPO

# The interrupt lands inside OmegaConf while Hydra composes the config, and OmegaConf fails as it
# unwinds: Hydra raises a ConfigCompositionException without a message, from OmegaConf's error,
# whose context is the interrupt (the chaos suite's SIGINT attack once ended so, with
# "IndexError: list index out of range" from the message's first line). Here Hydra's composition
# itself is where the interrupt lands, in every environment (whatever plugins are installed).
LAUNCH = textwrap.dedent(
    """
    import sys
    import omegaconf.errors
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from runners import interrupts, sweep

    kind = sys.argv.pop(1)

    def _load_configuration_impl(self, *a, **k):
        try:
            raise KeyboardInterrupt() if kind == "INT" else interrupts.Interrupted(15)
        except BaseException:  # OmegaConf fails while the interrupt unwinds: Hydra wraps that failure in
            raise omegaconf.errors.ValidationError("")  # a ConfigCompositionException with no message

    ConfigLoaderImpl._load_configuration_impl = _load_configuration_impl
    sys.argv[0] = "runners.sweep"
    sweep.main()
    """
)


def _run(kind: str, tmp_path, launch: str = LAUNCH) -> subprocess.CompletedProcess:
    """The sweep started by `launch` (its first argument `kind`: INT or TERM), its output in `tmp_path`."""
    return subprocess.run(
        [sys.executable, "-c", launch, kind, f"runner.output_dir={tmp_path}", "runner.display=plain"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_sigint,
    )


def test_ctrl_c_while_hydra_composes_is_an_interrupted_start_up(tmp_path):
    p = _run("INT", tmp_path)
    assert p.returncode == 130, p.stderr[-3000:]  # before: 1, "IndexError: list index out of range"
    assert "interrupted (SIGINT) while starting up" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
    assert not list(tmp_path.iterdir())  # nothing was written


def test_sigterm_while_hydra_composes_is_a_terminated_start_up(tmp_path):
    p = _run("TERM", tmp_path)
    assert p.returncode == 143, p.stderr[-3000:]
    assert "terminated (SIGTERM) while starting up" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]


def test_the_signal_is_found_in_the_chain_and_an_empty_message_is_described():
    wrapped = ConfigCompositionException("")
    try:
        try:
            raise KeyboardInterrupt()
        except KeyboardInterrupt as ki:
            raise wrapped from ki
    except ConfigCompositionException:
        pass
    assert signal_inside(wrapped) == signal.SIGINT
    implicit = ConfigCompositionException("")
    try:
        try:
            raise interrupts.Interrupted(signal.SIGTERM)
        except interrupts.Interrupted:
            raise implicit  # implicitly chained (__context__)
    except ConfigCompositionException:
        pass
    assert signal_inside(implicit) == signal.SIGTERM
    assert signal_inside(ConfigCompositionException("Could not override 'x'")) is None
    assert describe_hydra_error(ConfigCompositionException("")).startswith("ConfigCompositionException. Fix:")


def test_ctrl_c_while_the_launcher_check_imports_is_an_interrupted_start_up(tmp_path):
    """The checks before Hydra (the launcher plugins named on the command line) import pydantic and
    the plugins: a Ctrl-C there ends as an interrupted start-up too, not Python's traceback and a
    death by SIGINT."""
    launch = textwrap.dedent(
        """
        import sys
        import runners.availability
        from runners import sweep

        def launcher_missing(argv):
            raise KeyboardInterrupt()

        runners.availability.launcher_missing = launcher_missing
        sys.argv[0] = "runners.sweep"
        del sys.argv[1]  # the kind: only Ctrl-C here
        sweep.main()
        """
    )
    p = _run("INT", tmp_path, launch)
    assert p.returncode == 130, (p.returncode, p.stderr[-3000:])  # before: -2 (killed by SIGINT), a traceback
    assert "interrupted (SIGINT) while starting up" in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]
