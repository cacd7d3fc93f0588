"""Hydra-level mistakes on the command line end like every other configuration error: one
`error: … Fix: …` line (no traceback, no Hydra search path) and exit code 2, before any work."""

import pytest

from tests.runners.sweep_helpers import record_files, run_sweep


@pytest.mark.parametrize(
    "arg, said",
    [
        (
            "method=flowstat",
            ["unknown method 'flowstat'", "did you mean flowstate", "full_context", "conf/method/flowstat.yaml"],
        ),
        ("experiment=nope", ["unknown experiment 'nope'", "pos_table1"]),
        (
            "runner.concurency=3",
            ["unknown configuration key 'runner.concurency'", "did you mean runner.concurrency", "+runner.concurency="],
        ),
        ("method=[a", ["cannot parse a command-line override", "'++experiment.grid.method=[full_context,flowstate]'"]),
        (  # a sweep without -m
            "method=full_context,flowstate",
            ["-m is missing", "Fix: add -m", "'++experiment.grid.method=[full_context,flowstate]'"],
        ),
        ("runner.limit=1,2", ["'runner.limit=1,2' gives several values", "Fix: add -m"]),
        ("hydra.run.dir=/tmp/elsewhere", ["hydra.run.dir is Hydra's own output folder", "runner.output_dir=/tmp/"]),
    ],
)
def test_hydra_mistakes_are_configuration_errors_with_the_fix(tmp_path, arg, said):
    _check(tmp_path, [arg], said)


def test_a_key_the_preset_does_not_set_says_how_to_add_it(tmp_path):
    # flowstate_table1 sets no scripted_noise: "did you mean experiment.scripted_noise?" named the key it was given
    err = _check(
        tmp_path,
        ["experiment=flowstate_table1", "experiment.scripted_noise={}", "runner.plan=true"],
        ["'experiment.scripted_noise' is a configuration key", "++experiment.scripted_noise=<value>"],
    )
    assert "did you mean" not in err


def _check(tmp_path, args, said):
    p = run_sweep(tmp_path, *args)
    assert p.returncode == 2, p.stderr
    err = p.stderr.strip()
    assert err.startswith("error: ") and err.count("error:") == 1 and "Fix: " in err, err
    assert "Traceback" not in err and "Config search path" not in err and "HYDRA_FULL_ERROR" not in err
    assert "see above" not in err  # nothing is printed above it
    for s in said:
        assert s in err, (s, err)
    assert not record_files(tmp_path)
    return err


def test_help_renders_with_the_grid_forms():
    import subprocess
    import sys

    from tests.runners.sweep_helpers import REPO

    p = subprocess.run(
        [sys.executable, "-m", "runners.sweep", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "-m method=full_context,flowstate" in p.stdout and "experiment=quickstart" in p.stdout
