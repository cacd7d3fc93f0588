"""Running the cells of a sweep in this process: one `Scheduler` for every cell (skip finished
(task, trial) pairs, run the rest as concurrent episodes, append each record as it finishes), and
`run_here`, what a sweep of one process, a worker process (runners/procs.py) and a Ray task
(runners/ray_exec.py) run. Whether a sweep runs here or as worker processes is decided by
runners/launch.py; the sweep's backbones are runners/pool.py, the cells' preparation
runners/prepare.py."""

from __future__ import annotations

import contextlib
import pickle
import asyncio
import sys
import traceback
import zlib
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Iterator

from runners.api import Backbone, task_ids
from runners.secrets import redact_secrets
from runners.config import BackboneCfg, CellConfig, FatalRunError
from runners.cost import call_usd, role_prices
from runners.episode import Episode
from runners.interrupts import STATE, checkpoint
from runners.records.schema import CallLog, EpisodeRecord
from runners.progress import CellReport, Progress
from runners.records.store import (
    EPISODES,
    CellStore,
    code_fingerprint,
    finished_elsewhere,
    finished_texts,
    has_records,
    read_back,
    shard_dirs,
    text_fingerprint,
    text_mismatch,
    data_fingerprint,
    data_mismatch,
)
from runners.records.transcripts import TranscriptStore
from runners.pool import BackbonePool, InFlight, Resampled, preflight
from runners.access import check_access
from runners.prepare import PreparedCell, manifest_for, method_notes, skip_unavailable, survey


def storage_failure(rec: EpisodeRecord, e: Exception) -> EpisodeRecord:
    """The harness-error record stored in place of `rec` when storing `rec` failed (no transcript,
    no steps: only what identifies and costs the episode, so a resume runs it again)."""
    failed = EpisodeRecord(
        cell=rec.cell,
        task_id=rec.task_id,
        trial=rec.trial,
        seed=rec.seed,
        status="harness_error",
        error=(
            f"storing the episode record failed ({type(e).__name__}: {str(e)[:300]}); the episode "
            "is recorded as a harness error and run again on resume"
        ),
        scripted=rec.scripted,
        started_at=rec.started_at,
        wall_s=rec.wall_s,
        usage_by_role=rec.usage_by_role,
        calls_by_role=rec.calls_by_role,
    )
    for extra in ("code", "resample"):  # the run's fingerprint fields, when the record has them
        if hasattr(rec, extra):
            setattr(failed, extra, getattr(rec, extra))
    return failed


def storable(rec: EpisodeRecord) -> EpisodeRecord | None:
    """`rec` with lone surrogates replaced by U+FFFD in every string (text a benchmark made at run
    time, e.g. a tool output, that UTF-8 cannot store; data files are cleaned at load by
    runners/inputs.py), the replacement noted in `hygiene`; None when it holds none. The call
    transcripts were stored already (the transcript store keeps such text as it was)."""
    from runners.inputs import sanitize

    data, n = sanitize(rec.model_dump())
    if not n:
        return None
    clean = EpisodeRecord.model_validate(data)
    clean.hygiene.append(
        f"sanitized: {n} lone surrogate(s) in text made during the episode replaced by U+FFFD to store the record"
    )
    return clean


def case_error_counts(cell_dir: Path) -> dict[tuple[str, int], int]:
    """(task_id, trial) → how many earlier runs ended in a case error (from errors.jsonl)."""
    from runners.records.store import ERRORS, read_jsonl

    path = cell_dir / ERRORS
    if not path.is_file():
        return {}
    counts: dict[tuple[str, int], int] = {}
    for r in read_jsonl(path)[0]:
        if r.get("case_error"):
            key = (r["task_id"], int(r["trial"]))
            counts[key] = counts.get(key, 0) + 1
    return counts


def _warn_store(store: CellStore, cell: str, code: str, progress: Progress) -> None:
    """Say loudly what opening the cell found: a replaced damaged manifest, results moved aside by
    `runner.fresh=true`, finished episodes produced by other code than this run's."""
    for w in store.warnings:
        print(f"warning: {w}", file=sys.stderr, flush=True)
    if store.moved_to is not None:
        progress.note(f"[cell] {cell}: runner.fresh=true: earlier results moved aside to {store.moved_to}")
    other = {c: n for c, n in store.codes.items() if c != code}
    if other:
        was = ", ".join(f"{n} by {c}" for c, n in sorted(other.items()))
        print(
            f"warning: {cell}: RESUMING UNDER DIFFERENT CODE: finished episodes were produced by different code "
            f"({was}); "
            f"this run is {code}. They are kept and not re-run; the tables mark the cell [mixed code]. "
            "To re-run the cell from scratch, add runner.fresh=true (old results are moved aside, not deleted).",
            file=sys.stderr,
            flush=True,
        )


def shard_tasks(tasks: Sequence[Any], i: int, n: int) -> Sequence[Any]:
    """The i-th (0-based) of n contiguous, near-equal task ranges; together they cover every task once."""
    k = len(tasks)
    return tasks[i * k // n : (i + 1) * k // n]


class TableFold:
    """The tables' per-episode numbers, kept as this run's episodes finish: what the compact form of
    each finished record keeps (`runners.analysis.cells.compact_parts`; parsed as the readers parse
    the line written: of the record itself, only the fields kept are serialised and read back, by
    the same serialiser and reader, ~1 KB instead of the ~30 KB line), so the end-of-run tables need
    not read back what this run just wrote (`runners.analysis.tables.aggregate_dir(folded=...)`).
    Only a cell whose every finished record this run wrote is folded: its own store empty when
    opened, no shard stores, every line written read back clean and nothing lost on the way. Any
    other cell (a resume, shards, worker processes, a write that failed) is read from disk as
    `runners.aggregate` reads it, so the tables are the same either way.

    Kept packed while the run goes on: `BLOCK` records at a time pickled and compressed (zlib)
    (~40 bytes a memoryarena_math episode instead of ~0.7 KB as compact records, so the sweep's
    memory does not grow with its episodes); `cells()` makes the compact records
    (`compact_from_parts`, in the order written) when the tables are built."""

    BLOCK = 1024  # records per compressed block

    def __init__(self) -> None:
        from runners.analysis.cells import compact_from_parts, compact_parts

        self._parts: Any = compact_parts
        self._make: Any = compact_from_parts
        fields = tuple(EpisodeRecord.model_fields)
        kept = compact_parts(dict.fromkeys(fields))[0]  # the record's fields the compact form keeps
        self._dropped = frozenset(fields) - frozenset(kept)  # what compact_parts of the whole line leaves out
        # of the requests, only each step's method log (`_skeleton`); the other kept fields whole
        self._include: dict[str, Any] = {k: True for k in kept}
        if "requests" in kept:
            self._include["requests"] = {"__all__": {"steps": {"__all__": {"method"}}}}
        self._blocks: dict[str, list[bytes]] = {}  # cell → its full blocks, compressed
        self._pending: dict[str, list[tuple[Any, ...]]] = {}  # cell → the records of its open block
        self._count: dict[str, int] = {}
        self._stores: dict[str, CellStore | int] = {}  # its store while open, then its number finished

    def start(self, name: str, store: CellStore, alone: bool) -> None:
        """A cell opened by this run: folded when `alone` (no other store holds its records) and its
        own store held no record when opened."""
        if alone and not store.idle and not store.done and store.records_bytes == 0:
            self._blocks[name], self._pending[name], self._count[name], self._stores[name] = [], [], 0, store

    def add(self, name: str, line: bytes | None, rec: EpisodeRecord | None = None) -> None:
        """A finished record's line, on disk now (None: not written); `rec`: the record the line was
        written of (`rec.model_dump_json()`), whose kept fields alone are then serialised and read
        back (the same values as the line's, the line not parsed again)."""
        if name not in self._blocks or line is None:
            return
        whole = rec is None or type(rec) is not EpisodeRecord
        r = read_back(line if whole else rec.model_dump_json(include=self._include).encode())  # type: ignore[union-attr]
        if r is None:  # a line the readers would skip or set aside (with a note): the cell is read from disk
            self.spoil(name)
            return
        pending = self._pending[name]
        if whole:
            pending.append(self._parts(r))
        else:
            kept, _, texts = self._parts(r)
            pending.append((kept, self._dropped, texts))
        self._count[name] += 1
        if len(pending) >= self.BLOCK:
            self._blocks[name].append(_pack(pending))
            pending.clear()

    def spoil(self, name: str) -> None:
        """Something of the cell this run did not see whole (a failed write): read from disk instead."""
        self._blocks.pop(name, None)
        self._pending.pop(name, None)

    def closed(self, name: str) -> None:
        """The cell's store is closed: its count of finished episodes is kept, not the store (nor
        its set of finished (task, trial), ~170 bytes an episode, while the tables are built)."""
        s = self._stores.get(name)
        if s is not None and not isinstance(s, int):
            self._stores[name] = len(s.done)

    def records(self, name: str) -> Iterator[dict[str, Any]]:
        """The cell's compact records, in the order written (each value repeated across them one object)."""
        shared: dict[Any, Any] = {}
        for block in self._blocks[name]:
            for parts in _unpack(block):
                yield self._make(*parts, shared)
        for parts in self._pending[name]:
            yield self._make(*parts, shared)

    def cells(self) -> dict[str, list[dict[str, Any]]]:
        """Cell name → the compact records, in the order written, of each cell folded whole (as many as
        its store counts finished)."""
        done = {n: s if isinstance(s, int) else len(s.done) for n, s in self._stores.items()}
        return {n: list(self.records(n)) for n in self._blocks if self._count[n] == done[n]}


def _pack(parts: list[tuple[Any, ...]]) -> bytes:
    """A block of `compact_parts` (pickled: every value exactly as parsed, NaN and big ints too), compressed."""
    return zlib.compress(pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL))  # zstandard's bytes keep its bound


def _unpack(block: bytes) -> list[tuple[Any, ...]]:
    return pickle.loads(zlib.decompress(block))  # noqa: S301 (this process's own bytes)


@dataclass
class _CellRun:
    """One cell inside the sweep's scheduler: its store, report (its progress row too) and work left."""

    prep: PreparedCell
    store: CellStore
    report: CellReport
    todo: list  # (index in `tasks`, trial) of each episode to run: a task is read when its episode starts
    remaining: int = 0
    closed: bool = False
    finishing: bool = False
    transcripts: Any = None  # TranscriptStore, written off the loop (its group-commit thread)
    case_errors: dict = field(default_factory=dict)
    code: str = ""
    prices: dict = field(default_factory=dict)  # role → prices (runners.cost.role_prices)
    costs: Any = field(default_factory=lambda: array("d"))  # list-price cost of each finished episode (estimates)
    plan_usd: float | None = None  # the plan's estimate of one episode (runners.budget.plan_estimate)
    cost_total: float = 0.0  # sum of costs
    tasks: Sequence[Any] = field(default_factory=list)  # the cell's tasks (its shard's, with runner.shard), in order
    name: str = ""  # cfg.cell_name, computed once (it hashes the cell's whole configuration)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if self.transcripts is not None:
                self.transcripts.close()
        finally:
            self.store.close()


class Scheduler:
    """One scheduler for every cell of a sweep: `concurrency` workers take (cell, task, trial)
    episodes in cell order from one queue, so a small cell never leaves the endpoint idle while
    it finishes; the per-endpoint in-flight bound (`max_inflight`, shared by every backbone of an
    endpoint) is the only limit on model calls. Each cell still gets its own store, report and
    progress row, and is marked DONE as soon as its last episode is on disk.

    With a budget (`runner.budget_usd`, the experiment's total: runners/budget.py) the order is
    fair instead: task 1 of every cell, then task 2 of every cell, … (trial 0 of every task before
    trial 1), and a new round starts only when the budget left (what the experiment's stored
    records spent and this run spends, less what the episodes in flight are still expected to
    spend) covers the whole round at each cell's own estimate, so a run the budget stops has run
    the same tasks in every cell of a benchmark and its tables still compare the methods. One
    round is in flight at a time; while nothing is known about costs, episodes run one at a time;
    a call is refused once the cap is reached (`runners.budget.BudgetGuard`)."""

    def __init__(
        self,
        root: Path,
        pool: BackbonePool,
        progress: Progress,
        concurrency: int,
        budget_usd: float | None = None,
        fold: TableFold | None = None,
    ) -> None:
        self.root, self.pool, self.progress, self.concurrency = root, pool, progress, max(1, concurrency)
        self.fold = fold  # the end-of-run tables' per-episode numbers, kept as episodes finish
        self.stop = asyncio.Event()
        self.fatal: list[str] = []
        self.budget = budget_usd  # runner.budget_usd: episodes in fair rounds (`_admit`), calls guarded
        self.spent = 0.0  # by this run (cache hits cost nothing)
        self.spent_before = 0.0  # by the experiment's stored records when the run started (runners/budget.py)
        self.episode_costs = array("d")  # 8 bytes an episode (a list of floats: 32)
        self.episode_total = 0.0  # sum of episode_costs (estimates are read per episode: no re-summing)
        self.in_flight = 0
        self.budget_reached = False
        self.cut_short = 0  # episodes a refused call ended (runners.budget.BudgetReached)
        self.calls_flying = 0  # endpoint calls in flight (runners.budget.BudgetGuard)
        self.call_total, self.call_count = 0.0, 0  # list price and number of this run's endpoint calls
        self.code = code_fingerprint()
        self.rounds: dict[
            tuple[int, int], list[_CellRun]
        ] = {}  # fair order: round (trial, task index) → cells not started
        self.round_started: tuple[int, int] = (-1, -1)
        self.settled = asyncio.Condition()  # notified whenever an episode ends (a waiting admission re-checks)
        self.stored: dict[str, Any] = {}  # cell → runners.budget.CellCost of its stored records
        self.runs: list[_CellRun] = []
        self._stored_runs: dict[str, Any] = {}  # output dir → runners.plan.StoredRuns (read once per run)

    def estimate(self, run: "_CellRun") -> float | None:
        """The list-price cost one more episode of `run`'s cell is expected to have: the mean of its
        stored and finished episodes, else the plan's estimate, else the mean of the sweep's other
        cells, else None (nothing known yet)."""
        if run.costs:
            return run.cost_total / len(run.costs)
        if run.plan_usd is not None:
            return run.plan_usd
        return self.episode_total / len(self.episode_costs) if self.episode_costs else None

    @property
    def total_spent(self) -> float:
        return self.spent_before + self.spent

    def exhausted(self, calls: bool = False) -> str | None:
        """Why no further model call may be made (the budget is spent), else None. `calls`: a call
        about to start, which also counts what the calls in flight are expected to cost (the mean
        cost of this run's calls), so concurrent calls do not all pass the cap at once."""
        flying = self.calls_flying * (self.call_total / self.call_count) if calls and self.call_count else 0.0
        if self.budget is None or self.total_spent + flying < self.budget:
            return None
        self.budget_reached = True
        return (
            f"runner.budget_usd reached: ${self.total_spent:.4f} of ${self.budget:g} spent by the experiment; "
            "the call was not made and the episode runs again on resume (raise runner.budget_usd to continue)"
        )

    async def _admit(self, run: "_CellRun", rnd: tuple[int, int] | None) -> bool:
        """Whether one more episode of `run` (in fair round `rnd`) may start within the budget. A
        new round waits until the episodes in flight have ended (so a round the cap cut short is
        the last one: no cell runs task k+1 while another's task k is unfinished), then starts only
        when the budget left covers every cell's episode of it at the cell's own estimate; while
        nothing is known about costs, its episodes run one at a time (probes)."""
        if self.budget is None:
            return True
        async with self.settled:
            while True:
                if self.budget_reached or self.exhausted():
                    return False
                if rnd is None or rnd <= self.round_started:
                    return True  # inside a round admitted whole
                if self.in_flight:  # the round before (or a probe) still running: its spend decides
                    await self.settled.wait()
                    continue
                cells = self.rounds.get(rnd) or [run]
                ests = [self.estimate(r) for r in cells]
                if any(e is None for e in ests):
                    return True  # nothing known yet: a probe; the round is not admitted yet
                need = sum(e or 0.0 for e in ests)
                if self.total_spent + need > self.budget:  # nothing is in flight here (waited above)
                    self.budget_reached = True
                    return False
                self.round_started = rnd
                return True

    def finishing_cost(self, runs: list["_CellRun"]) -> tuple[float, int]:
        """(estimated list-price cost of every episode the cells have left, cells without an estimate)."""
        total, unknown = 0.0, 0
        for r in runs:
            left = r.report.total - r.report.skipped - r.report.ok
            if left <= 0:
                continue
            e = self.estimate(r)
            if e is None:
                unknown += 1
            else:
                total += left * e
        return total, unknown

    def _on_call(self, run: _CellRun, log: CallLog, prices: dict, acc: list[float]) -> None:
        listed = call_usd(log.role, log.usage, prices) or 0.0
        cost = 0.0 if log.cached else listed
        self.spent += cost
        acc[0] += cost
        acc[1] += listed
        if not log.cached:
            self.call_total += listed
            self.call_count += 1
        run.report.count_call(log, cost)
        self.progress.call(run.report)

    def _count_stored(self, prepared: list[PreparedCell]) -> None:
        """What the experiment's stored records spent (runners.budget.stored_spend), this run's
        cells at this run's prices."""
        from runners.budget import manifest_prices, stored_spend

        current = {p.cfg.cell_name: role_prices(p.cfg) for p in prepared}
        self.stored = stored_spend(self.root, lambda cell, m: manifest_prices(cell, m, current))
        self.spent_before = sum(c.spent for c in self.stored.values())

    def _plan_usd(self, cfg: CellConfig) -> float | None:
        from runners.budget import plan_estimate

        return plan_estimate(cfg, self._stored_runs)

    def _check_texts(self, prepared: list[PreparedCell]) -> None:
        """Refuse the sweep before any work when a cell to resume holds finished episodes that ran
        on other model-facing texts than this run would send (runners.records.store.text_mismatch)."""
        for p in prepared:
            if p.cfg.runner.fresh:
                continue
            cell_dir = self.root / p.cfg.cell_name
            records = []
            for d in [cell_dir, *shard_dirs(cell_dir)]:
                if has_records(d / EPISODES):
                    records += finished_texts(d)  # a finished cell's index spares parsing its records
            if not records:
                continue
            notes = {
                "benchmark_notes": p.bench.notes(),
                "method_notes": method_notes(p.method_cls, p.cfg.method.params, p.bench),
            }
            why = text_mismatch(p.cfg.cell_name, records, text_fingerprint(notes)) or data_mismatch(
                p.cfg.cell_name, [cell_dir, *shard_dirs(cell_dir)], data_fingerprint(notes["benchmark_notes"])
            )  # texts and data alike: a resume never mixes two versions in one cell
            if why:
                raise FatalRunError(why.removeprefix("error: ") + " Nothing was run.")

    def _open(self, prep: PreparedCell) -> _CellRun:
        cfg, pool = prep.cfg, self.pool
        endpoints = {
            role: getattr(pool.get(b), "display_url", None) or ""
            for role, b in (("agent", cfg.backbone), *cfg.roles.items())
            if b is not None and b.kind != "scripted"
        }
        tasks = prep.tasks
        trials = cfg.runner.trials
        cell_dir = self.root / cfg.cell_name
        if (
            cfg.runner.shard
        ):  # runner.shard=i/n: the i-th contiguous task range, in <cell>/shard-i-of-n/ (own store and lock)
            i, n = (int(x) for x in cfg.runner.shard.split("/"))
            tasks = shard_tasks(prep.tasks, i, n)
            own = cell_dir / f"shard-{i}-of-{n}"
        else:
            own = cell_dir
        # episodes finished in the cell's other stores (its folder, shards of another runner.shard or
        # runner.processes) are not run again (never with runner.fresh, which starts this store anew)
        elsewhere = set() if cfg.runner.fresh else finished_elsewhere(cell_dir, own)
        ids = task_ids(tasks)  # a lazy sequence's own (runners.api.JsonlTasks): no task parsed here
        expect = [(t, k) for k in range(trials) for t in ids if (t, k) not in elsewhere]
        manifest = manifest_for(cfg, prep.bench, len(tasks), endpoints, prep.method_cls, ids)
        if cfg.runner.shard:
            manifest["shard"] = {"index": i, "of": n, "n_tasks_total": len(prep.tasks)}
        if prep.input_hygiene:  # lone surrogates replaced at load (runners/inputs.py): the data the run saw
            manifest["input_hygiene"] = prep.input_hygiene
        # a finished cell with nothing to run is opened without restoring or scanning its records
        store = CellStore(own.parent, own.name).open(manifest, fresh=cfg.runner.fresh, expect=expect)
        if cfg.runner.compact_records and not store.idle:
            store.compact_as_written(
                cfg.runner.compact_level
            )  # the records compressed as they come, not all after the cell's last episode
        try:
            transcripts = TranscriptStore(store.dir).open() if cfg.runner.transcripts else None
        except BaseException:
            store.close()
            raise
        if self.fold is not None:
            self.fold.start(cfg.cell_name, store, own == cell_dir and not elsewhere and not shard_dirs(cell_dir))
        report = CellReport(cell=cfg.cell_name + (f" [shard {cfg.runner.shard}]" if cfg.runner.shard else ""))
        todo = [
            (i, trial)
            for trial in range(cfg.runner.trials)
            for i, t in enumerate(ids)
            if (t, trial) not in store.done and (t, trial) not in elsewhere
        ]
        report.total = len(tasks) * cfg.runner.trials
        report.skipped = report.total - len(todo)
        return _CellRun(
            prep,
            store,
            report,
            todo,
            remaining=len(todo),
            transcripts=transcripts,
            case_errors=case_error_counts(store.dir),
            code=self.code,
            prices=role_prices(cfg),
            tasks=tasks,
            name=cfg.cell_name,
        )

    async def _finish(self, run: _CellRun) -> None:
        if run.closed or run.finishing:
            return
        run.finishing = True
        try:
            r = run.report
            if not self.fatal and r.ok + r.skipped == r.total:
                # DONE and the records' compaction, off the loop (a large cell takes seconds to compress)
                noted = len(run.store.warnings)
                with ThreadPoolExecutor(max_workers=1, thread_name_prefix="mark-done") as ex:

                    def mark_done() -> None:
                        checkpoint("compaction")  # the test trigger only (runners/interrupts.py)
                        run.store.mark_done(
                            {"total": r.total, "ok": r.total}, compact=run.prep.cfg.runner.compact_records
                        )

                    cf = ex.submit(mark_done)
                    try:
                        await asyncio.wrap_future(cf)
                    except asyncio.CancelledError:
                        cf.result()  # interrupted: the compaction (atomic) ends before the store closes
                        raise
                for w in run.store.warnings[noted:]:
                    print(f"warning: {w}", file=sys.stderr, flush=True)
        finally:
            self._close(run)
            self.progress.finish_cell(run.report)

    def _close(self, run: _CellRun) -> None:
        run.close()
        if self.fold is not None:
            self.fold.closed(run.name)

    def _task(self, run: _CellRun, i: int) -> Any:
        """Task `i` of the cell, read now (a lazy sequence parses its row here); if it cannot be
        read (its data file changed under the run) the sweep stops with why, as on a fatal error."""
        try:
            return run.tasks[i]
        except Exception as e:
            self.fatal.append(f"cell {run.name}: task {i + 1} of its {len(run.tasks)} could not be read: {e}")
            self.stop.set()
            return None

    async def _episode(self, run: _CellRun, task: Any, trial: int) -> None:
        cfg, bench, method_cls, store, report, pool = (
            run.prep.cfg,
            run.prep.bench,
            run.prep.method_cls,
            run.store,
            run.report,
            self.pool,
        )
        spent = [0.0, 0.0]  # [spent (cache hits free), list price]
        prices = run.prices  # a role's calls are priced by its own backbone (runners.cost.role_prices, as the tables)

        def on_call(c: CallLog) -> None:  # live calls/tokens/retries/cost
            self._on_call(run, c, prices, spent)

        resample = min(run.case_errors.get((task.task_id, trial), 0), cfg.runner.case_error_resamples)

        def episode_backbone(bcfg: BackboneCfg) -> Backbone:
            b = pool.for_episode(
                bcfg, trial, cfg.runner.seed, cfg.runner.fresh, self if self.budget is not None else None
            )
            return InFlight(Resampled(b, resample) if resample else b, self.progress)

        ep = Episode(
            episode_backbone(cfg.backbone),
            **{role: episode_backbone(rc) for role, rc in cfg.roles.items() if rc is not None},
            cell=run.name or cfg.cell_name,
            task_id=task.task_id,
            trial=trial,
            seed=cfg.runner.seed + trial,
            transcripts=run.transcripts is not None,
            on_call=on_call,
        )
        try:
            env = ep.make_env(bench, task)
            method = method_cls(backbone=ep.agent, **cfg.method.params)
        except Exception as e:  # a benchmark/method bug for this task: record it, keep the other episodes going
            rec = EpisodeRecord(
                cell=run.name or cfg.cell_name,
                task_id=task.task_id,
                trial=trial,
                seed=ep.seed,
                status="harness_error",
                error=f"setting up the episode failed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}",
            )
        else:
            rec = await ep.run(env, method)
            rec.resample = resample
        rec.code = run.code
        rec.texts = store.texts
        if rec.error:
            rec.error = redact_secrets(
                rec.error, self.pool.secrets()
            )  # every configured secret, not only key-shaped text
        rec = await self._store(run, rec)
        checkpoint("running")  # the test trigger only: a signal once an episode is on disk (runners/interrupts.py)
        if rec.status == "ok":  # a finished episode's list price: the estimate of the cell's next ones
            self.episode_costs.append(spent[1])
            self.episode_total += spent[1]
            run.costs.append(spent[1])
            run.cost_total += spent[1]
        elif rec.error and "runner.budget_usd reached" in rec.error:
            self.cut_short += 1
        report.count_episode(rec.status, f"{task.task_id}#{trial}", rec.error)
        if rec.status != "ok" and rec.fatal:
            self.fatal.append(rec.error or "fatal backbone error")
            self.stop.set()
        self.progress.episode(report, status=rec.status, task=task.task_id)

    async def _store(self, run: _CellRun, rec: EpisodeRecord) -> EpisodeRecord:
        """Store one episode off the event loop: the transcript first (the cell's transcript thread),
        then the record line (the store's writer thread, fsynced before this returns). An error while
        storing never ends the sweep: the episode becomes a harness error (retried on resume) that
        names the cause, stored without its transcript; only if even that cannot be written does the
        error propagate."""
        try:
            if run.transcripts is not None:  # durable before the record line that references it (group commits)
                await run.transcripts.put_async(rec)
            line = await run.store.append_async(rec)
        except Exception as e:  # e.g. a value that cannot be serialised; the sweep goes on
            if self.fold is not None:
                self.fold.spoil(run.name)
            if "surrogates not allowed" in str(e):  # never a harness error forever: stored with the text sanitised
                clean = storable(rec)
                if clean is not None:
                    try:
                        await run.store.append_async(clean)
                        return clean
                    except Exception as again:
                        e = again
            failed = storage_failure(rec, e)
            await run.store.append_async(failed)
            return failed
        if self.fold is not None and rec.status == "ok":  # on disk: its numbers kept for the tables
            self.fold.add(run.name, line, rec)
        return rec

    async def run(self, prepared: list[PreparedCell]) -> list[CellReport]:
        runs: list[_CellRun] = []
        queue: asyncio.Queue = asyncio.Queue()
        n = self.concurrency

        self._check_texts(prepared)  # before any cell opens: a mixed-source resume is refused up front

        async def producer() -> None:
            """Open the cells in order, off the loop (manifest, git revision, reading earlier
            records), queueing each cell's episodes as soon as it is open: the first cell's
            episodes run while the next cells open. In fair order (a budget) every cell is
            opened first, then the episodes are queued round by round (`fair_order`)."""
            try:
                fair: list = []
                if self.budget is not None:  # the experiment's spend so far, from its stored records
                    await asyncio.to_thread(self._count_stored, prepared)
                for p in prepared:
                    if self.stop.is_set():
                        break
                    r = await asyncio.to_thread(self._open, p)
                    if self.budget is not None:
                        r.costs = array("d", getattr(self.stored.get(p.cfg.cell_name), "listed", []))
                        r.cost_total = sum(r.costs)
                        r.plan_usd = None if r.costs else await asyncio.to_thread(self._plan_usd, p.cfg)
                    runs.append(r)
                    STATE["reports"].append(r.report)
                    _warn_store(r.store, p.cfg.cell_name, self.code, self.progress)
                    self.progress.start_cell(r.report)
                    if not r.todo:
                        await self._finish(r)
                    if self.budget is not None:  # fair order
                        fair.append(r)
                        continue
                    for t, trial in r.todo:
                        queue.put_nowait((r, t, trial, None))
                    r.todo = []  # queued: not held twice (~100 bytes an episode)
                for item in fair_order(fair):
                    self.rounds.setdefault(item[3], []).append(item[0])
                    queue.put_nowait(item)
                for r in fair:
                    r.todo = []
                self.runs = runs
            finally:
                for _ in range(n):
                    queue.put_nowait(None)

        async def worker() -> None:
            while (item := await queue.get()) is not None:  # one queue: episodes start in cell (or fair) order
                r, t, trial, rnd = item
                if self.stop.is_set():
                    continue
                admitted = await self._admit(r, rnd)
                waiting = self.rounds.get(rnd, []) if rnd is not None else []
                at = next((i for i, x in enumerate(waiting) if x is r), None)
                if at is not None:
                    del waiting[at]  # the round's cells not started yet (what a new round needs)
                if not admitted:
                    r.report.not_started += 1
                    r.remaining -= 1
                    if r.remaining == 0:
                        await self._finish(r)
                    continue
                self.in_flight += 1
                self.progress.in_flight = self.in_flight
                try:
                    task = self._task(r, t)
                    if task is not None:
                        await self._episode(r, task, trial)
                finally:
                    self.in_flight -= 1
                    self.progress.in_flight = self.in_flight
                    if self.budget is not None:
                        async with self.settled:
                            self.settled.notify_all()
                r.remaining -= 1
                if r.remaining == 0:
                    await self._finish(r)

        self.progress.expect_cells(len(prepared))
        STATE.update(phase="running", reports=[])  # what a signal's message counts (runners/interrupts.py)
        try:
            workers = [asyncio.ensure_future(producer())] + [asyncio.ensure_future(worker()) for _ in range(n)]
            try:
                await asyncio.gather(*workers)
            except (
                BaseException
            ):  # an unexpected error (disk full, display bug): stop the siblings before the stores close
                for w in workers:
                    w.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
            if self.fatal:
                raise FatalRunError(self.fatal[0])
            if self.budget is not None:
                from runners import budget

                finishing, unknown = self.finishing_cost(runs)
                budget.LAST.update(
                    budget=self.budget,
                    spent_before=self.spent_before,
                    spent=self.spent,
                    finishing=finishing,
                    unknown=unknown,
                    cut_short=self.cut_short,
                )
            return [r.report for r in runs]
        finally:
            for r in runs:
                self._close(r)


def fair_order(runs: list) -> list[tuple]:
    """(run, task index, trial, round) of every episode left in `runs`, round by round: round =
    (trial, the task's place in its cell's task list), so task k of every cell comes before task
    k+1 of any cell and every cell's trial 0 before any trial 1 (cells of different sizes too),
    also when a resumed cell has fewer episodes left than another."""
    items = []
    for ci, r in enumerate(runs):
        for i, trial in r.todo:
            items.append(((trial, i), ci, r, i, trial))
    items.sort(key=lambda x: (x[0], x[1]))
    return [(r, t, trial, rnd) for rnd, _, r, t, trial in items]


async def run_cell(prep: PreparedCell, root: Path, pool: BackbonePool, progress: Progress) -> CellReport:
    """Run one prepared cell on its own (`prepare_cell`/`prepare_cells` load data and check params
    first; a sweep runs all its cells through one `Scheduler`)."""
    return (await Scheduler(root, pool, progress, prep.cfg.runner.concurrency, prep.cfg.runner.budget_usd).run([prep]))[
        0
    ]


# ------------------------------------------------------- the whole run: signals, budget, one scheduler for all cells


YOUNG = 100_000
"""The cyclic collector's young-generation threshold while the episodes run (`few_collections`)."""


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """While the episodes run: what is loaded by then (tasks, configs, modules) frozen out of the
    cyclic collector's passes, and the young generation collected every `YOUNG` (100,000)
    allocations instead of 700 (an episode allocates thousands of short-lived objects, nearly all
    freed by their reference counts). About a tenth less harness CPU per call at 10,000; at
    100,000 the collector's time in a 512-episode run fell again from 0.20 to 0.08 s (~4 % of the
    CPU per call; scripts/perf/README.md, "Harness CPU per call"), while a cycle of garbage waits
    at most 100,000 allocations (a few MB). The thresholds are restored afterwards, and the objects
    frozen here are thawed unless some were frozen before (gc cannot thaw only ours): the sweep
    freezes what it loaded before calling this (runners/sweep.py), so there everything stays frozen
    to the end of the process."""
    import gc

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, before[1], before[2])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:  # objects frozen by the caller before (gc cannot thaw only ours) stay frozen
            gc.unfreeze()


TERMINATED: list[int] = []
"""Set when a SIGTERM ended the sweep (`unwind_on_sigterm`)."""


def unwind_on_sigterm() -> None:
    """SIGTERM (`timeout`, a batch scheduler, `kill`) unwinds the running sweep as Ctrl-C does:
    the main task is cancelled, so every `finally` runs — finished episodes are kept, stores
    close, managed servers stop (`BackbonePool.aclose`) — instead of the process dying on the
    spot. A second SIGTERM while unwinding changes nothing; SIGKILL is covered by the managed
    server's guard (runners/backbones/managed.py)."""
    import signal

    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    assert task is not None  # run_all runs as a task

    def on_sigterm() -> None:
        if not TERMINATED:
            TERMINATED.append(signal.SIGTERM)
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)  # removed again when asyncio.run closes the loop
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no Unix signals
        pass


def ready(cells: list[CellConfig], root: Path) -> tuple[list[PreparedCell], BackbonePool]:
    """Every cell's backbones, extras and data checked (and the data loaded) before any work: what
    is missing is listed all at once, or its cells skipped with runner.skip_unavailable=true; then
    the cells that run, and the pool with every backbone they use built (a missing key fails here)."""
    first = cells[0]
    cache_path = None
    if first.runner.cache:
        cache_path = (
            Path(first.runner.cache_path)
            if first.runner.cache_path
            else Path(first.runner.output_dir) / ".cache" / "responses.sqlite"
        )
    pool = BackbonePool(cache_path)
    s = survey(cells)
    skip_unavailable(s, cells, root)
    pool.prepare([p.cfg for p in s.prepared])
    return s.prepared, pool


async def run_prepared(
    prepared: list[PreparedCell],
    cells: list[CellConfig],
    root: Path,
    pool: BackbonePool,
    display: str,
    progress: Progress | None = None,
    fold: TableFold | None = None,
) -> list[Any]:
    """The prepared cells through one scheduler in this process (small cells overlap, the endpoint
    bound is shared). `progress`: the display to feed (default: a new one of `display`); `fold`:
    where the finished episodes' numbers for the end-of-run tables are kept (`TableFold`)."""
    first = cells[0]
    with few_collections(), progress or Progress(display, heartbeat_s=first.runner.heartbeat_s) as progress:
        pool.set_on_retry(progress.retry)
        sched = Scheduler(root, pool, progress, max(c.runner.concurrency for c in cells), first.runner.budget_usd, fold)
        return await sched.run(prepared)


async def run_here(
    cells: list[CellConfig],
    root: Path,
    display: str,
    progress: Progress | None = None,
    check_endpoints: bool = True,
) -> list[Any]:
    """Every cell through one scheduler in this process: a worker process's share of a sweep
    (runners/procs.py), a Ray task's cell, or a whole sweep that runs in one process
    (runners.launch.run_all decides). `check_endpoints=False` skips the preflight (a worker
    process: its coordinator checked them)."""
    from runners import interrupts

    unwind_on_sigterm()
    interrupts.set_phase("loading")
    prepared, pool = ready(cells, root)
    try:
        if check_endpoints:
            await preflight(pool, cells[0].runner.preflight_s)  # a dead endpoint fails here, naming its URL
            await check_access(pool, cells[0].runner.check_access)  # a refused key or unknown model (runners/access.py)
        return await run_prepared(prepared, cells, root, pool, display, progress)
    finally:
        await pool.aclose()


def check_budget(cells: list[CellConfig]) -> None:
    """runner.budget_usd needs prices on every backbone that is called."""
    if cells[0].runner.budget_usd is None:
        return
    if cells[0].runner.executor == "ray":
        from runners.config import ConfigError

        raise ConfigError(
            "runner.budget_usd is kept by one process's scheduler and is not supported with runner.executor=ray; "
            "drop one of them (or run locally)"
        )
    unpriced = sorted(
        {
            b.name
            for c in cells
            for b in (c.backbone, c.roles.judge, c.roles.user_sim, c.roles.tool)
            if b is not None and b.prices is None
        }
    )
    if unpriced:
        from runners.config import ConfigError

        raise ConfigError(
            f"runner.budget_usd is set but backbone(s) {', '.join(unpriced)} have no prices; add "
            "`prices: {input: <USD per 1M>, cached_input: <USD per 1M>, output: <USD per 1M>}` to their config "
            "(or backbone.prices={input:..,output:..} on the command line), or drop runner.budget_usd"
        )
