"""Kill the sweep (SIGKILL, and SIGINT) at several points, rerun: exactly one record per
(cell, task, trial) and the same aggregate as an uninterrupted run."""

import collections
import os
import signal
import subprocess
import time

import pytest

from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import (
    REPO,
    cell_records,
    metrics_csv,
    record_files,
    run_sweep,
    sweep_cmd,
)

ARGS = (
    "backbone.scripted.latency_s=0.03",
    "runner.trials=2",
    "runner.concurrency=2",
    "backbone.scripted.wrong_requests=[formal_reasoning_math-0/q2,formal_reasoning_phys-1/q1]",
    "backbone.scripted.perturb=tests.runners.hold:hold",
)  # inert unless HOLD_DIR is set (tests/runners/hold.py)


def episode_lines(root):
    return sum(len(cell_records(p.parent)) for p in record_files(root))


def kill_after(out, n_lines: int, sig: int) -> int:
    p = subprocess.Popen(sweep_cmd(out, *ARGS), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if episode_lines(out) >= n_lines:
            break
        time.sleep(0.01)
    p.send_signal(sig)
    return p.wait(timeout=30)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted")
    assert run_sweep(out, *ARGS).returncode == 0
    return metrics_csv(out / "offline_demo" / "tables" / "metrics.csv")


@pytest.mark.parametrize(
    "points",
    # (3, 7, 9), three kills in a row, runs in the long profile; by default a kill before any record and two in a row
    [(0,), (1, 4), pytest.param((3, 7, 9), marks=pytest.mark.long)],
)
def test_sigkill_then_resume(tmp_path, baseline, points):
    for n in points:
        kill_after(tmp_path, n, signal.SIGKILL)
    p = run_sweep(tmp_path, *ARGS)
    assert p.returncode == 0, p.stderr
    for f in record_files(tmp_path / "offline_demo"):
        keys = [(r["task_id"], r["trial"]) for r in cell_records(f.parent)]
        assert keys and max(collections.Counter(keys).values()) == 1
    # 2 methods (full_context, flowstate) × (math 3 + phys 2 tasks) × 2 trials
    assert episode_lines(tmp_path) == 2 * (3 + 2) * 2
    assert metrics_csv(tmp_path / "offline_demo" / "tables" / "metrics.csv") == baseline
    assert_transcripts_complete(tmp_path / "offline_demo")


def assert_transcripts_complete(root):
    """Every call of every surviving record reads back in full from its cell's transcripts."""
    from runners.records.results import open_experiment

    n = 0
    for cell in open_experiment(root).cells:
        for ep in cell.episodes(errors=True):
            for call in ep.calls():
                assert call.has_transcript and len(call.messages) == call.n_messages > 0 and call.text
                n += 1
    assert n > 0


def test_ctrl_c_says_how_to_resume(tmp_path, baseline):
    """Ctrl-C in the middle of an episode, with two episodes on disk. The sweep is held inside a model
    call (tests/runners/hold.py) until the SIGINT has been handled, so it cannot finish, or not have
    started, when the signal arrives, however loaded the machine is."""
    hold = tmp_path / "hold"
    hold.mkdir()
    out = tmp_path / "results"
    env = {**os.environ, "HOLD_DIR": str(hold), "HOLD_OUTPUT": str(out), "HOLD_AFTER": "2"}
    log, errlog = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(log, "w") as so, open(errlog, "w") as se:  # files, not pipes: a full pipe would stall the sweep
        p = subprocess.Popen(
            sweep_cmd(out, *ARGS), cwd=REPO, stdout=so, stderr=se, text=True, env=env, preexec_fn=default_sigint
        )
        try:
            deadline = time.monotonic() + 600  # a failure guard only: the test waits for the hold, not for a time
            while not (hold / "held").exists() and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert (hold / "held").exists(), (
                f"the sweep never reached its third episode (rc={p.poll()}): {errlog.read_text()[-2000:]}"
            )
            on_disk = episode_lines(out)
            p.send_signal(signal.SIGINT)
            p.wait(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    err = errlog.read_text()
    assert p.returncode == 130, err[-2000:]
    assert (
        "interrupted (SIGINT) while running" in err
        and "finished episodes are saved. Run the same command again to resume." in err
    )
    assert 2 <= on_disk <= episode_lines(out) < 2 * (3 + 2) * 2  # the held episode was not recorded
    assert run_sweep(out, *ARGS).returncode == 0
    assert episode_lines(out) == 2 * (3 + 2) * 2
    assert metrics_csv(out / "offline_demo" / "tables" / "metrics.csv") == baseline


# ------------------------------------------------------------------ a signal in every phase (HARNESS_SIGNAL_AT)
PHASES = [
    ("startup", "before any episode ran"),
    ("loading", "before any episode ran"),
    ("running", "finished episodes are saved"),
    ("compaction", "finished episodes are saved"),
    ("report", "tables not written: run `python -m runners.aggregate"),
    ("tables", "tables not written (or only some of their files): run `python -m runners.aggregate"),
]


@pytest.mark.parametrize(
    "phase, says, sig",
    # Every phase by default, with SIGTERM and SIGINT taking turns (each signal in three phases, each phase's
    # state message checked); the other signal of each phase in the long profile: 2 sweeps per case.
    [
        pytest.param(phase, says, sig, marks=[pytest.mark.long] if (i + j) % 2 else [])
        for i, (phase, says) in enumerate(PHASES)
        for j, sig in enumerate(("TERM", "INT"))
    ],
)
def test_signal_in_every_phase_unwinds_and_says_the_state(tmp_path, baseline, phase, sig, says):
    """SIGTERM / SIGINT sent when the sweep reaches `phase`: exit 143 / 130 (never a bare -15 or a
    traceback), one message that says what state the run is in, nothing lost, and the same command
    again finishes with the uninterrupted tables."""
    p = run_sweep(tmp_path, *ARGS, env={"HARNESS_SIGNAL_AT": f"{phase}:{sig}"})
    code = 143 if sig == "TERM" else 130
    assert p.returncode == code, (p.returncode, p.stderr[-2000:])
    assert says in p.stderr and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert ("terminated (SIGTERM)" if sig == "TERM" else "interrupted (SIGINT)") in p.stderr
    root = tmp_path / "offline_demo"
    if phase in ("report", "tables"):  # every episode was done: the message says so, and how to get the tables
        assert "all 20 episodes done" in p.stderr and not (root / "tables" / "metrics.csv").exists()
        assert episode_lines(tmp_path) == 20
    if phase == "compaction":  # the compaction in flight ended before the store closed: records intact
        keys = [(f.parent.name, r["task_id"], r["trial"]) for f in record_files(root) for r in cell_records(f.parent)]
        assert keys and max(collections.Counter(keys).values()) == 1
    again = run_sweep(tmp_path, *ARGS)
    assert again.returncode == 0, again.stderr[-2000:]
    assert episode_lines(tmp_path) == 20
    assert metrics_csv(root / "tables" / "metrics.csv") == baseline
