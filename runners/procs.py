"""`runner.processes=N`: the sweep as N worker processes on one machine.

One sweep process runs every episode on one event loop, and that loop (under the GIL, with the
records' compression and the transcript commits beside it) is what limits a sweep with hundreds of
episodes in flight, not the endpoint. With `runner.processes=N` the sweep process becomes a
coordinator: it validates every cell, loads and checks what is missing, checks the endpoints once,
then starts N worker processes (`spawn`) and shows one progress display and prints one
completeness report from what they send it.

Worker `i` runs the `i`-th of `N` contiguous task ranges of every cell, exactly as
`runner.shard=i/N` does (the mechanism Slurm array jobs use): its own store
`<cell>/shard-i-of-N/` (records, transcripts, lock) inside the cell's folder, which every reader
(`runners.records.store.load_cell`, the tables, the report, `runners.results`) reads as one
cell. Each worker gets `ceil(concurrency / N)` episodes in flight and `max_inflight // N` (at
least 1) of every endpoint's in-flight bound, so the whole run stays within the bounds set.
A resume with another N (or with one process) skips the episodes finished in the cell's other
stores (`runners.records.store.finished_elsewhere`): nothing runs twice.

Signals: the workers ignore SIGINT; the coordinator alone handles Ctrl-C and SIGTERM and sends
each worker one SIGTERM, which unwinds it as it unwinds a single-process sweep (finished
episodes kept, stores closed); a worker whose coordinator died (SIGKILL) stops itself the same
way within a second. A worker that ends with a fatal error (a dead endpoint, a bad key) stops the
others the same way and the sweep exits with that error.

`auto` (the default) uses one process per `PER_PROCESS` episodes in flight, at most one per
`CORES_PER_PROCESS` cores and at most the smallest endpoint bound: below 256 in flight, or on fewer
than 4 cores, that is one process (scripts/perf/README.md measures where one stops). It stays at
one process with `runner.budget_usd` (one process keeps the budget), with a managed local server
(one server per sweep) and with `runner.executor=ray`; asking for more than one there is a
configuration error. A job that is itself `runner.shard=s/m` (one node of a Slurm
array) splits its range among its workers: worker `i` runs shard `s·N+i` of `m·N`, whose ranges
together are exactly shard `s/m`'s, so nodes × processes is one mechanism.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, fields
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from runners.config import CellConfig, ConfigError, FatalRunError
from runners.progress import CellReport, Progress

PER_PROCESS = 128
"""`runner.processes=auto`: one worker process per this many episodes in flight."""

CORES_PER_PROCESS = 2
"""`runner.processes=auto`: at most one worker per this many cores. A busy sweep process uses more
than one core (the event loop, and beside it the records' compression and the transcript commits);
on 2 cores two workers ran no faster than one (scripts/perf/README.md, "All cores")."""

STOP_GRACE_S = 60.0
"""After the coordinator's SIGTERM, how long a worker may take to unwind before it is killed."""

_SUMMED = tuple(f.name for f in fields(CellReport) if f.type in ("int", "float") and f.name != "started")
"""A cell's counts over its workers: every counter of `CellReport` (not its clock)."""


def _blockers(cells: list[CellConfig]) -> list[str]:
    r = cells[0].runner
    why = []
    if r.budget_usd is not None:
        why.append("runner.budget_usd (one process keeps the budget)")
    if r.executor != "local":
        why.append(f"runner.executor={r.executor}")
    if any(
        b is not None and b.kind == "managed" for c in cells for b in (c.backbone, *(x for _, x in c.roles.items()))
    ):
        why.append("a managed local server (one server per sweep)")
    return why


def processes_for(cells: list[CellConfig]) -> int:
    """How many worker processes run `cells` (1: this process runs them itself). An explicit
    `runner.processes` > 1 that cannot apply is a ConfigError naming why."""
    asked = cells[0].runner.processes
    why = _blockers(cells)
    bounds = {
        b.name: b.max_inflight
        for c in cells
        for b in (c.backbone, *(x for _, x in c.roles.items()))
        if b is not None and b.kind != "scripted"
    }
    least = min(bounds.values(), default=None)
    if asked == "auto":
        if why:
            return 1
        in_flight = max(c.runner.concurrency for c in cells)
        return max(1, min((os.cpu_count() or 1) // CORES_PER_PROCESS, in_flight // PER_PROCESS, least or in_flight))
    if asked > 1 and why:
        raise ConfigError(
            f"runner.processes={asked} cannot be used with {'; '.join(why)}. Fix: drop runner.processes "
            "(or set it to 1)"
        )
    if least is not None and asked > least:
        name = min(bounds, key=lambda k: bounds[k])
        raise ConfigError(
            f"runner.processes={asked}: backbone {name}'s max_inflight={least} cannot be shared by {asked} worker "
            f"processes (each needs at least one call in flight). Fix: runner.processes={least} or less, or raise "
            f"backbone.max_inflight"
        )
    return int(asked)


def worker_cells(cells: list[CellConfig], i: int, n: int) -> list[CellConfig]:
    """`cells` as worker `i` of `n` runs them: shard i/n, its share of the episodes in flight and of
    every endpoint's in-flight bound, one process."""
    out = []
    for c in cells:
        # a job that is itself shard s/m (a Slurm array task): its workers split its range further,
        # shard s·n+i of m·n, whose ranges together are exactly shard s/m's
        s, m = (int(x) for x in c.runner.shard.split("/")) if c.runner.shard else (0, 1)
        runner = c.runner.model_copy(
            update={"shard": f"{s * n + i}/{m * n}", "concurrency": math.ceil(c.runner.concurrency / n), "processes": 1}
        )

        def share(b: Any) -> Any:
            return None if b is None else b.model_copy(update={"max_inflight": max(1, b.max_inflight // n)})

        roles = c.roles.model_copy(update={r: share(b) for r, b in c.roles.items()})
        out.append(c.model_copy(update={"runner": runner, "backbone": share(c.backbone), "roles": roles}))
    return out


# ----------------------------------------------------------------------------------------- the worker


class RelayProgress(Progress):
    """A worker's display: nothing drawn; every event goes to the coordinator with the cell's counts."""

    def __init__(self, conn: Connection, index: int) -> None:
        super().__init__("none", heartbeat_s=None)
        self.conn, self.index = conn, index
        self._lock = threading.Lock()
        self._last_sent = 0.0

    def _send(self, kind: str, cp: CellReport | None, *extra: Any) -> None:
        msg = (kind, self.index, asdict(cp) if cp is not None else None, self.in_flight, self.calls_in_flight, *extra)
        with self._lock:
            self.conn.send(msg)

    def start_cell(self, cell: CellReport) -> CellReport:
        super().start_cell(cell)
        self._send("start", cell)
        return cell

    def call(self, cp: CellReport) -> None:
        now = time.perf_counter()
        if now - self._last_sent > 0.25:  # counts of calls between episodes: a few times a second at most
            self._last_sent = now
            self._send("update", cp)

    def episode(self, cp: CellReport, *, status: str, task: str, **_: Any) -> None:
        self._send("episode", cp, status, task)

    def finish_cell(self, cp: CellReport) -> None:
        super().finish_cell(cp)
        self._send("finish", cp)

    def retry(self, url: str, error: str, wait_s: float, name: str = "") -> None:
        self._send("retry", None, url, error, wait_s, name)

    def note(self, line: str) -> None:
        self._send("note", None, line)

    def _emit(self, line: str) -> None:  # mode "none": nothing is printed here
        pass


def _watch_parent(parent: int) -> None:
    """A worker whose coordinator is gone (killed) unwinds as if it had been sent SIGTERM."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return


def _worker(
    cells: list[CellConfig],
    root: str,
    index: int,
    conn: Connection,
    parent: int,
    sweep: dict[str, Any],
    said: set[str],
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the coordinator, which stops the workers
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()
    from runners import interrupts
    from runners.records import store

    store.SWEEP.update(sweep)  # the records name the coordinator's sweep (id, start, overrides)
    from runners import upstream

    upstream._SAID.update(said)  # a warning the coordinator printed (an upstream file not downloaded) is not repeated
    from runners.run import TERMINATED, run_here

    interrupts.install()
    end: tuple[str, str] | None = None
    try:
        asyncio.run(run_here(cells, Path(root), "none", progress=RelayProgress(conn, index), check_endpoints=False))
        if TERMINATED:
            end = ("interrupted", "")
    except FatalRunError as e:
        end = ("fatal", str(e))
    except (KeyboardInterrupt, asyncio.CancelledError, interrupts.Interrupted):
        end = ("interrupted", "")
    except BaseException as e:  # noqa: BLE001 - every failure goes to the coordinator, which reports it
        from runners.availability import Unavailable
        from runners.records.store import StoreError

        if isinstance(e, (StoreError, ConfigError, Unavailable)):
            end = ("fatal", str(e))
        else:
            end = ("error", "".join(traceback.format_exception(e)))
    try:
        conn.send(("end", index, None, 0, 0, end))
    except OSError:
        pass
    conn.close()


# ------------------------------------------------------------------------------------ the coordinator


class _Merged:
    """Each cell's counts over the workers: the sum of the last counts each worker sent."""

    def __init__(self, n: int, order: list[str], suffix: str = "") -> None:
        self.n, self.suffix = n, suffix  # suffix: ' [shard s/m]' when the whole job is one shard
        self.parts: dict[str, dict[int, dict[str, Any]]] = {}
        self.reports: dict[str, CellReport] = {}
        self.order = order
        self.shown: set[str] = set()

    def update(self, index: int, d: dict[str, Any]) -> tuple[CellReport, bool, bool]:
        """(the cell's merged report, every worker has opened it, every worker has finished it)."""
        name = d["cell"].split(" [shard ", 1)[0]
        parts = self.parts.setdefault(name, {})
        parts[index] = d
        rep = self.reports.setdefault(name, CellReport(cell=name + self.suffix))
        for f in _SUMMED:
            setattr(rep, f, sum(p[f] for p in parts.values()))
        rep.errors = [e for _, p in sorted(parts.items()) for e in p["errors"]]
        opened = len(parts) == self.n
        finished = opened and all(p["finished"] is not None for p in parts.values())
        return rep, opened, finished

    def in_order(self) -> list[CellReport]:
        rank = {name: k for k, name in enumerate(self.order)}
        return [r for name, r in sorted(self.reports.items(), key=lambda kv: rank.get(kv[0], len(rank)))]


async def run_processes(cells: list[CellConfig], root: Path, display: str, n: int) -> list[CellReport]:
    """Run `cells` as `n` worker processes (see the module's text); returns each cell's counts
    over all workers, in cell order."""
    from runners import interrupts, upstream
    from runners.records.store import SWEEP

    ctx = multiprocessing.get_context("spawn")
    merged = _Merged(
        n, [c.cell_name for c in cells], f" [shard {cells[0].runner.shard}]" if cells[0].runner.shard else ""
    )
    procs: dict[int, Any] = {}
    readers: dict[int, Connection] = {}
    ends: dict[int, tuple[str, str] | None] = {}
    flights: dict[int, tuple[int, int]] = {}
    stopping = False
    first = cells[0].runner

    def stop_all() -> None:
        nonlocal stopping
        stopping = True
        for p in procs.values():
            if p.is_alive():
                try:
                    os.kill(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    interrupts.STATE.update(phase="running", reports=[])
    with Progress(display, heartbeat_s=first.heartbeat_s) as progress:
        progress.expect_cells(len(cells))
        progress.note(f"[processes] {n} worker processes, each a 1/{n} task range of every cell (runners/procs.py)")
        try:
            for i in range(n):
                r, w = ctx.Pipe(duplex=False)
                p = ctx.Process(
                    target=_worker,
                    args=(worker_cells(cells, i, n), str(root), i, w, os.getpid(), dict(SWEEP), set(upstream._SAID)),
                    name=f"sweep-worker-{i}",
                )
                p.start()
                w.close()  # the worker holds the only writer: its exit is this reader's EOF
                procs[i], readers[i] = p, r
            while readers:
                ready = await asyncio.to_thread(wait, list(readers.values()), 0.5)
                for ready_conn in ready:
                    i = next(k for k, v in readers.items() if v is ready_conn)
                    conn = readers[i]
                    try:
                        msg: tuple[Any, ...] = conn.recv()
                    except (EOFError, OSError):
                        readers.pop(i).close()
                        procs[i].join(5)
                        if i not in ends:
                            ends[i] = (
                                "error",
                                f"worker process {i} exited with status {procs[i].exitcode} and no report",
                            )
                            stop_all()
                        continue
                    kind, d, in_flight, calls_in_flight, extra = msg[0], msg[2], msg[3], msg[4], list(msg[5:])
                    flights[i] = (in_flight, calls_in_flight)
                    progress.in_flight = sum(a for a, _ in flights.values())
                    progress.calls_in_flight = sum(b for _, b in flights.values())
                    if kind == "end":
                        ends[i] = extra[0]
                        if extra[0] and extra[0][0] in ("fatal", "error") and not stopping:
                            stop_all()
                        continue
                    if kind == "retry":
                        progress.retry(*extra)
                        continue
                    if kind == "note":
                        progress.note(extra[0])
                        continue
                    rep, opened, finished = merged.update(i, d)
                    name = d["cell"].split(" [shard ", 1)[0]
                    if opened and name not in merged.shown:
                        merged.shown.add(name)
                        progress.start_cell(rep)
                        rep.started = min(p["started"] for p in merged.parts[name].values())
                        interrupts.STATE["reports"] = merged.in_order()
                    if name not in merged.shown:
                        continue
                    if kind == "episode":
                        progress.episode(rep, status=extra[0], task=extra[1])
                    elif kind == "update":
                        progress.call(rep)
                    if finished and rep.finished is None:
                        progress.finish_cell(rep)
        finally:
            if readers:  # interrupted (Ctrl-C, SIGTERM) or failed here: each worker unwinds once
                stop_all()
            for p in procs.values():
                p.join(STOP_GRACE_S)
                if p.is_alive():
                    p.kill()
                    p.join(5)
            for r in readers.values():
                r.close()
    failed = [(i, e) for i, e in sorted(ends.items()) if e and e[0] in ("fatal", "error")]
    if failed:
        i, (kind, text) = failed[0]
        if kind == "fatal":
            raise FatalRunError(text)
        print(text, file=sys.stderr, flush=True)
        raise FatalRunError(
            f"worker process {i} of {n} failed ({text.strip().splitlines()[-1] if text.strip() else 'no detail'}); "
            "the other workers were stopped and every finished episode is kept. Run again to resume, or with "
            "runner.processes=1 to see the error in one process"
        )
    outside = [i for i, e in sorted(ends.items()) if e and e[0] == "interrupted"]
    if outside and not stopping:  # a worker signalled by someone else: the others finished their share
        raise FatalRunError(
            f"worker process {outside[0]} of {n} was stopped by a signal from outside the sweep; every finished "
            "episode is kept. Run the same command again to resume"
        )
    return merged.in_order()
