"""SIGINT and SIGTERM in every phase of a sweep: an orderly unwind, exit 130 / 143, and one message
that says what state the run is in and what to do next.

The sweep moves through phases (`set_phase`): `startup` (config composed and validated), `loading`
(backbones built, data loaded), `running` (episodes; a cell's end-of-cell `compaction` runs inside
it), `report` (the completeness report), `tables` (writing the paper-style tables), `wandb`.
SIGINT raises KeyboardInterrupt as usual; SIGTERM raises `Interrupted` (outside the event loop) or
cancels the main task (inside it, runners/run.py `unwind_on_sigterm`), so every `finally` runs:
finished episodes stay on disk, stores close, managed servers stop. `message()` then says, e.g.,
"all 30 episodes done; tables not written: run `python -m runners.aggregate …`".

Testing and chaos: `HARNESS_SIGNAL_AT=<phase>[:INT|TERM]` makes the process send itself that
signal (default TERM) once, when it reaches that phase, so that every phase can be hit exactly
(`checkpoint`). Nothing else reads the variable; it is not a user setting.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

ENV = "HARNESS_SIGNAL_AT"
PHASES = ("startup", "loading", "running", "compaction", "report", "tables", "wandb")


class Interrupted(BaseException):
    """A SIGTERM (or another handled signal) ended the sweep; `signum` says which. A BaseException,
    like KeyboardInterrupt, so no `except Exception` swallows it on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


STATE: dict[str, Any] = {"phase": "startup", "reports": None, "root": None}
_FIRED: list[str] = []
_LOCK = threading.Lock()


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


def install() -> Any:
    """SIGTERM raises `Interrupted` in the main thread (outside the event loop, which installs its own
    handler and, on closing, resets SIGTERM to the default: call this again after `asyncio.run`).
    Returns the handler it replaced (None outside the main thread, where nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def restore(previous: Any) -> None:
    """Put back the SIGTERM handler `install` replaced."""
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)


def set_phase(phase: str, **facts: Any) -> None:
    """The sweep entered `phase` (facts: `reports`, `root`); fires the test trigger of that phase."""
    STATE.update(phase=phase, **facts)
    checkpoint(phase)


def checkpoint(phase: str) -> None:
    """Send this process the signal `HARNESS_SIGNAL_AT` names when it names `phase` (once per process)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    name, _, sig = spec.partition(":")
    if name != phase:
        return
    with _LOCK:
        if _FIRED:
            return
        _FIRED.append(phase)
    os.kill(os.getpid(), signal.SIGINT if sig.strip().upper() in ("INT", "SIGINT") else signal.SIGTERM)


def signal_inside(e: BaseException) -> int | None:
    """The signal an exception stands for: a `KeyboardInterrupt` (SIGINT) or `Interrupted` anywhere
    in its chain (`__cause__`, else `__context__`). Hydra and OmegaConf turn an interrupt that lands
    while they compose the config into their own exception (a `ConfigCompositionException` with an
    empty message). None for any other error."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, KeyboardInterrupt):
            return int(signal.SIGINT)
        if isinstance(cur, Interrupted):
            return int(cur.signum)
        cur = cur.__cause__ or cur.__context__
    return None


def exit_code(signum: int) -> int:
    return 128 + int(signum)


def _counts() -> tuple[int, int, int, int] | None:
    """(done, total, failed, cells) over the cells opened so far; None before any opened."""
    reports = STATE.get("reports")
    if not reports:
        return None
    done = sum(r.ok + r.skipped for r in reports)
    total = sum(r.total for r in reports)
    failed = sum(r.infra_error + r.harness_error for r in reports)
    return done, total, failed, len(reports)


def message(signum: int) -> str:
    """What the run has done and what to do next, for the phase the signal arrived in."""
    what = "interrupted (SIGINT)" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
    phase, root = STATE.get("phase", "startup"), STATE.get("root")
    counts = _counts()
    if phase in ("startup", "loading") or (phase == "running" and counts is None):
        where = {"startup": "while starting up", "loading": "while loading data and backbones"}.get(
            phase, "before any cell opened"
        )
        return f"{what} {where}, before any episode ran; nothing was written. Run the same command again."
    done, total, failed, cells = counts or (0, 0, 0, 0)
    state = f"all {total} episodes done" if done == total and not failed else f"{done}/{total} episodes done"
    if phase in ("running", "compaction"):
        return (
            f"{what} while running ({state} in {cells} opened cell(s)); finished episodes are saved. "
            "Run the same command again to resume."
        )
    aggregate = f"python -m runners.aggregate {root}" if root else "python -m runners.aggregate <experiment dir>"
    retry = f"; {failed} failed episode(s) are retried by running the same command again" if failed else ""
    if phase in ("report", "tables"):
        part = "" if phase == "report" else " (or only some of their files)"
        return (
            f"{what} while {'reporting' if phase == 'report' else 'writing the tables'}: {state}{retry}; tables not "
            f"written{part}: run `{aggregate}` (or the same command again)."
        )
    return (
        f"{what} while logging to W&B: {state}{retry}; tables are written under {root}/tables. "
        "Run the same command again to log."
    )


def handled() -> None:
    """The interrupt was handled: clear CPython's mark of an unhandled KeyboardInterrupt. CPython marks one
    that leaves code it runs from source text (`exec` of a string, which `dataclasses` and `namedtuple` use
    to build their methods while modules import) even when a caller catches it further out, and a
    `python -m` process so marked ends by killing itself with SIGINT (status -2) instead of exiting with
    the status the program chose. Every evaluation of source text starts by clearing the mark, so one of
    nothing clears it (tests/runners/test_interrupts_exit.py)."""
    exec("pass")


def default_sigint() -> None:
    """`preexec_fn` for a child that is to be interrupted with SIGINT: SIGINT back to its default action.
    A process started from a background job (`cmd &` in a non-interactive shell, nohup) inherits SIGINT
    ignored, and so would each child it starts; a child that ignores SIGINT never sees a Ctrl-C (the chaos
    suite's SIGINT attacks, the tests that interrupt a sweep)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def report(signum: int, out: Any = None) -> int:
    """Print `message(signum)` and return the exit status (128 + signal: 130 for SIGINT, 143 for SIGTERM)."""
    handled()
    print(f"\n{message(signum)}", file=out or sys.stderr, flush=True)
    return exit_code(signum)


def reader_cli(main: Any, what: str) -> int:
    """Run a reader's command line (`runners.aggregate`, `runners.view`, `runners.paper`): Ctrl-C
    ends it with one line saying `what` became of its output, and exit status 130, no traceback."""
    try:
        return int(main())
    except KeyboardInterrupt:
        handled()
        print(f"\ninterrupted (Ctrl-C): {what}", file=sys.stderr)
        return 130
