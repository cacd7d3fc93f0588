"""Running one cell: load tasks, skip finished (task, trial) pairs, run the rest as concurrent
episodes, append each record as it finishes."""

from __future__ import annotations

import contextlib
import asyncio
import json
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from runners.api import Backbone, Benchmark, Completion, Message, Method, Protocol, Role
from runners.secrets import redact_secrets
from runners.config import BackboneCfg, CellConfig, ConfigError
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
    shard_dirs,
    text_fingerprint,
    text_mismatch,
)
from runners.records.transcripts import TranscriptStore

if TYPE_CHECKING:
    from runners.cache import ResponseCache


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


class FatalRunError(RuntimeError):
    """A configuration-level failure (bad key, unknown model): stop the sweep."""


class BackbonePool:
    """One backbone object per distinct config for the whole sweep, so per-endpoint in-flight
    bounds and the response cache are shared across cells."""

    def __init__(self, cache_path: Path | None) -> None:
        self._by_key: dict[str, Backbone] = {}
        self.cache: ResponseCache | None = None
        self.cache_path = cache_path

    def get(self, cfg: BackboneCfg) -> Backbone:
        """The shared backbone of `cfg`; a missing key variable or a bad option is a ConfigError."""
        key = cfg.model_dump_json()
        if key not in self._by_key:
            try:
                if cfg.kind == "scripted":
                    from runners.backbones.scripted import ScriptedBackbone

                    self._by_key[key] = ScriptedBackbone(name=cfg.name, model=cfg.model, **cfg.scripted)
                elif (
                    cfg.kind == "managed"
                ):  # a local server the harness starts and stops (runners/backbones/managed.py)
                    from runners.backbones.managed import ManagedBackbone

                    self._by_key[key] = ManagedBackbone(cfg.model_dump())
                else:
                    from runners.backbones.openai import build_openai_backbone

                    self._by_key[key] = build_openai_backbone(cfg.model_dump())
            except (ValueError, TypeError) as e:
                raise ConfigError(f"backbone '{cfg.name}' cannot be built: {e}") from None
        return self._by_key[key]

    def prepare(self, cells: list[CellConfig]) -> None:
        """Build every backbone the cells use (agent and role backbones) before any episode runs,
        so a missing API key variable fails the sweep up front, not in the middle of a cell."""
        for c in cells:
            self.get(c.backbone)
            for role, b in c.roles.items():
                if b is None:
                    continue
                try:
                    self.get(b)
                except ConfigError as e:
                    users = [r for r, o in c.roles.items() if o is not None and o.name == b.name]
                    where = "; ".join(f"{r}: {c.roles.origin.get(r, '')}" for r in users)
                    fix = " ".join(f"roles.{r}=agent" for r in users)
                    raise ConfigError(
                        f"{e} — it serves role(s) {', '.join(users)} of cell {c.cell_name} ({where}); "
                        f"set the variable, or run them on the agent's backbone with {fix}"
                    ) from None
        if self.cache_path is not None and any(
            b.kind != "scripted" for c in cells for b in (c.backbone, *(r for _, r in c.roles.items())) if b
        ):
            self.open_cache()

    def open_cache(self) -> None:
        """Open the response cache before any episode runs: an unreadable file is an error with the fix."""
        if self.cache is not None or self.cache_path is None:
            return
        from runners.cache import ResponseCache

        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache = ResponseCache(self.cache_path)
        except Exception as e:  # sqlite3 / OS errors, or the cache's own RuntimeError naming the fix
            raise FatalRunError(
                f"the response cache {self.cache_path} cannot be used ({type(e).__name__}: {e}). Fix: move the file "
                "away to start an empty cache, point runner.cache_path at another file, or set runner.cache=false"
            ) from None

    def for_episode(self, cfg: BackboneCfg, trial: int, seed: int = 0, fresh: bool = False) -> Backbone:
        """The backbone one episode uses: cached per (trial, run seed `runner.seed`) for endpoints;
        `fresh` (runner.fresh=true) turns cache reads off (every call re-sampled, answers still written)."""
        inner = self.get(cfg)
        if cfg.kind == "scripted" or self.cache_path is None:
            return inner
        from runners.cache import CachedBackbone

        if self.cache is None:
            self.open_cache()
        assert self.cache is not None  # open_cache raised otherwise
        return CachedBackbone(inner, self.cache, trial, seed, read=not fresh)

    def endpoints(self) -> dict[str, list[str]]:
        """base_url (as the client sees it, no credentials) → names of the backbones that call it."""
        out: dict[str, list[str]] = {}
        for b in self._by_key.values():
            if getattr(b, "base_url", None) and not getattr(
                b, "managed", False
            ):  # a managed server starts later, itself
                out.setdefault(getattr(b, "base_url"), []).append(b.name)
        return out

    def secrets(self) -> tuple[str, ...]:
        """Every configured secret value of the sweep's backbones (keys, URL passwords), for redaction."""
        return tuple(
            x
            for b in self._by_key.values()
            for x in (getattr(b, "_secrets", None) or getattr(getattr(b, "inner", None), "_secrets", ()) or ())
        )

    def set_on_retry(self, callback: Callable[..., Any]) -> None:
        """Report every backbone retry to `callback(url, error, wait_s, name)` (the live display)."""
        for b in self._by_key.values():
            if hasattr(b, "on_retry"):
                b.on_retry = callback

    async def aclose(self) -> None:
        for b in self._by_key.values():
            await b.aclose()
        if self.cache is not None:
            await asyncio.to_thread(self.cache.close)  # commits the last batch (bounded) off the loop
            self.cache = None


RESAMPLE_STRIDE = 1_000_000
"""Attempt offset per fresh-sample generation: far above any re-ask count within one episode."""


class Resampled(Backbone):
    """`inner` with every call's sample index moved to generation `n`: the response cache and the
    scripted backbone then draw afresh, so a rerun of a case that ended in a CaseError does not
    replay the replies that caused it (upstream PoS reruns such a case from scratch)."""

    def __init__(self, inner: Backbone, n: int) -> None:
        self.inner, self.n = inner, n
        self.name, self.model = inner.name, inner.model

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        return await self.inner.complete(
            messages, role=role, protocol=protocol, attempt=attempt + self.n * RESAMPLE_STRIDE, **sampling
        )

    def bind(
        self, scope: Any
    ) -> Backbone:  # the scripted backbone answers from the episode's oracle: keep that, resampled
        return Resampled(self.inner.bind(scope), self.n)

    async def aclose(self) -> None:
        return None  # the inner backbone is shared; the pool closes it


class InFlight(Backbone):
    """`inner` counting its calls in flight on `progress.calls_in_flight` (the plain display's
    heartbeat shows it: a slow model is visibly working before any call finishes)."""

    def __init__(self, inner: Backbone, progress: Any) -> None:
        self.inner, self.progress = inner, progress
        self.name, self.model = inner.name, inner.model

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        self.progress.calls_in_flight += 1
        try:
            return await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        finally:
            self.progress.calls_in_flight -= 1

    def bind(self, scope: Any) -> Backbone:
        return InFlight(self.inner.bind(scope), self.progress)

    async def aclose(self) -> None:
        return None  # the inner backbone is shared; the pool closes it


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


async def preflight(pool: BackbonePool, window_s: float) -> None:
    """Before any episode: every endpoint must accept a TCP connection within `window_s` seconds
    (retried every 0.25 s, all endpoints at once); otherwise a FatalRunError names each dead URL
    and the fix. `window_s=0` skips the check."""
    import time
    import urllib.parse

    from runners.secrets import redact_url

    if window_s <= 0:
        return

    async def check(url: str) -> str | None:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or (443 if parts.scheme == "https" else 80)
        deadline = time.monotonic() + window_s
        last = "no attempt"
        while True:
            try:
                async with asyncio.timeout(max(0.1, min(2.0, deadline - time.monotonic()))):
                    _, writer = await asyncio.open_connection(host, port)
                writer.close()
                return None
            except ConnectionRefusedError:
                last = "connection refused"
            except (OSError, TimeoutError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            if time.monotonic() + 0.25 > deadline:
                return last
            await asyncio.sleep(0.25)

    urls = pool.endpoints()
    results = await asyncio.gather(*(check(u) for u in urls))
    dead = [(u, why) for u, why in zip(urls, results) if why]
    if dead:
        lines = "; ".join(
            f"{redact_url(u)} (backbone {', '.join(urls[u])}): {why} for {window_s:g}s" for u, why in dead
        )
        raise FatalRunError(
            f"endpoint not reachable before the sweep started: {lines}. Nothing was run. Fix: start the server "
            "or correct `base_url` (or the variable named by `base_url_env`); runner.preflight_s sets the wait"
        )


def _without_url_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The dumped config with `user:password@` cut out of every backbone's base_url."""
    from runners.secrets import redact_url

    for b in (config.get("backbone"), *((config.get("roles") or {}).get(r) for r in ("judge", "user_sim", "tool"))):
        if isinstance(b, dict) and b.get("base_url"):
            b["base_url"] = redact_url(b["base_url"])
    return config


def method_notes(method_cls: type[Method] | None, params: dict[str, Any], bench: Benchmark) -> dict[str, Any]:
    """The method's manifest facts (`Method.notes`) for the task kinds this cell's benchmark declares
    (`Benchmark.task_kinds`): a method records only the texts it may send on this benchmark (a Full
    Context cell on MemoryArena claims no PoS text)."""
    if method_cls is None:
        return {}
    return method_cls.notes(params, kinds=tuple(bench.task_kinds) or None)


def manifest_for(
    cfg: CellConfig,
    bench: Benchmark,
    n_tasks: int,
    endpoints: dict[str, str] | None = None,
    method_cls: type[Any] | None = None,
    task_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Everything needed to reproduce the cell, without secrets (key values never enter cfg).
    `endpoints`: role → the URL actually called (a `base_url_env` variable overrides the config's
    `base_url`, so the config alone does not say where requests went), credentials cut out."""
    return {
        "endpoints": endpoints or {},
        "cell": cfg.cell_name,
        "cell_key": cfg.key(),
        "config": _without_url_credentials(cfg.model_dump(mode="json", by_alias=True)),
        "scripted": cfg.scripted,
        "label": "SCRIPTED RUN (deterministic test backbone; not a model result)" if cfg.scripted else None,
        "benchmark_notes": bench.notes(),
        "method_notes": method_notes(method_cls, cfg.method.params, bench),
        "n_tasks": n_tasks,
        "task_ids": list(task_ids) if task_ids is not None else None,  # what the tables count (with trials)
        "trials": cfg.runner.trials,
        "seed": cfg.runner.seed,
    }


@dataclass
class PreparedCell:
    cfg: CellConfig
    bench: Benchmark
    tasks: list
    method_cls: type
    input_hygiene: dict = field(
        default_factory=dict
    )  # what loading changed in the data (runners/inputs.py), for the manifest


def prepare_cells(cells: list[CellConfig]) -> list[PreparedCell]:
    """Prepare every cell; cells with the same benchmark config share one loaded benchmark. Any
    missing piece of any cell raises `Unavailable`, listing all of them (`survey`)."""
    s = survey(cells)
    if s.missing:
        from runners.availability import Unavailable

        raise Unavailable(s.missing, s.labels, len(cells))
    return s.prepared


@dataclass
class Survey:
    """What `survey` found: the cells that can run (prepared: tasks loaded, method checked) and,
    per cell that cannot, every missing piece."""

    prepared: list[PreparedCell]
    missing: dict[str, list]  # cell name → [runners.api.Missing]; only cells that cannot run
    labels: dict[str, str]  # cell name → method/backbone/benchmark
    cfgs: dict[str, CellConfig]


def survey(cells: list[CellConfig], env: Mapping[str, str] | None = None) -> Survey:
    """Before any work: every cell's backbones (`runners.availability.backbone_missing`), method
    (`Method.missing`) and benchmark (`Benchmark.missing`, then `load_tasks`, once per distinct
    benchmark config) checked, every missing piece kept, so one message can list them all. A bad
    parameter or duplicate task ids still fail at once (ConfigError / FatalRunError): those are
    mistakes to fix, not pieces to install."""
    from runners.api import Missing
    from runners.availability import _dedupe, backbone_missing, cell_label

    missing: dict[str, list] = {}
    for c in cells:
        found = backbone_missing(c.backbone, env)
        served: dict[str, list[str]] = {}  # a role backbone serving several roles is checked once
        for role, b in c.roles.items():
            if b is not None and b.name != c.backbone.name:
                served.setdefault(b.name, []).append(role)
        for name, roles in served.items():
            found += backbone_missing(getattr(c.roles, roles[0]), env, roles)
        try:
            found += list(c.method.cls.missing(dict(c.method.params)))
        except Exception as e:  # a broken check must not hide the others
            found.append(
                Missing(what=f"method '{c.method.name}': its availability check failed ({type(e).__name__}: {e})")
            )
        missing[c.cell_name] = found
    loaded: dict[str, Any] = {}
    prepared = []
    for c in cells:
        key = json.dumps([c.benchmark.model_dump(by_alias=True), c.runner.limit], sort_keys=True, default=str)
        if key not in loaded:
            loaded[key] = _load_benchmark(c)
        got = loaded[key]
        if isinstance(got, list):
            missing[c.cell_name] += got
        if missing[c.cell_name]:
            continue
        prepared.append(PreparedCell(c, got.bench, got.tasks, probe_method(c), got.input_hygiene))
    missing = {k: _dedupe(v) for k, v in missing.items() if v}
    return Survey(prepared, missing, {c.cell_name: cell_label(c) for c in cells}, {c.cell_name: c for c in cells})


def _load_benchmark(cfg: CellConfig) -> PreparedCell | list[Any]:
    """The benchmark of `cfg` with its tasks (a PreparedCell without method), or the list of what
    it misses: its declared `missing()`, else why `load_tasks` failed (the loader's message names its fix)."""
    from runners.api import Missing

    from runners.inputs import noted, notes_since

    params = dict(cfg.benchmark.params)
    if cfg.runner.limit:
        params["limit"] = cfg.runner.limit
    before = noted()
    try:
        bench: Benchmark = cfg.benchmark.cls(name=cfg.benchmark.name, **params)
        declared = list(bench.missing())
        if declared:
            return declared
        tasks = bench.load_tasks()
    except Exception as e:  # missing/corrupt data or bad params: kept with the loader's message
        return [Missing(what=f"benchmark '{cfg.benchmark.name}' could not load its tasks: {e}")]
    if not tasks:  # nothing to run is never a success: an empty data file or a filter that matches nothing
        return [Missing(what=f"benchmark '{cfg.benchmark.name}' loaded no tasks; nothing was run", fix=NO_TASKS_FIX)]
    _check_unique(cfg, tasks)
    return PreparedCell(cfg, bench, tasks, None, notes_since(before))  # type: ignore[arg-type]


NO_TASKS_FIX = "check its data files (benchmark.params.data_dir) and filters (runner.limit, split, subset)"


def _check_unique(cfg: CellConfig, tasks: list) -> None:
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(
        ids
    ):  # records are keyed by (task_id, trial): duplicates would be skipped or double-counted
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise FatalRunError(
            f"benchmark '{cfg.benchmark.name}' loaded duplicate task ids {dup}; "
            "task ids must be unique (fix the adapter's load_tasks or the data file)"
        )


class _ProbeBackbone(Backbone):
    """Stands in for the agent backbone while a method's params are checked (never called)."""

    name = model = "probe"

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,  # pragma: no cover - never called
        **sampling: Any,
    ) -> Completion:
        raise RuntimeError("probe backbone is not callable")


def probe_method(cfg: CellConfig) -> type:
    """The method class, after instantiating it once with the cell's params, so a bad value
    (or an argument the constructor rejects) fails before any work, not inside a running cell."""
    cls = cfg.method.cls
    try:
        cls(backbone=_ProbeBackbone(), **cfg.method.params)
    except Exception as e:  # any constructor rejection is a config problem
        raise ConfigError(
            f"method '{cfg.method.name}' rejects its params ({type(e).__name__}: {e}); "
            f"fix conf/method/{cfg.method.name}.yaml or the method.params.* override"
        ) from None
    return cls


def prepare_cell(cfg: CellConfig) -> PreparedCell:
    """Instantiate the benchmark and load its tasks (before any cell runs, so missing data fails
    the sweep up front)."""
    bench_cls = cfg.benchmark.cls
    params = dict(cfg.benchmark.params)
    if cfg.runner.limit:
        params["limit"] = cfg.runner.limit
    from runners.inputs import noted, notes_since

    before = noted()
    try:
        bench: Benchmark = bench_cls(name=cfg.benchmark.name, **params)
        tasks = bench.load_tasks()
    except Exception as e:  # missing/corrupt data or bad params: stop before any work, with the loader's message
        raise FatalRunError(f"benchmark '{cfg.benchmark.name}' could not load its tasks: {e}") from None
    if not tasks:  # nothing to run is never a success: an empty data file or a filter that matches nothing
        raise FatalRunError(f"benchmark '{cfg.benchmark.name}' loaded no tasks; nothing was run. Fix: {NO_TASKS_FIX}")
    _check_unique(cfg, tasks)
    return PreparedCell(cfg, bench, tasks, probe_method(cfg), notes_since(before))


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


def shard_tasks(tasks: list, i: int, n: int) -> list:
    """The i-th (0-based) of n contiguous, near-equal task ranges; together they cover every task once."""
    k = len(tasks)
    return tasks[i * k // n : (i + 1) * k // n]


@dataclass
class _CellRun:
    """One cell inside the sweep's scheduler: its store, report (its progress row too) and work left."""

    prep: PreparedCell
    store: CellStore
    report: CellReport
    todo: list
    remaining: int = 0
    closed: bool = False
    finishing: bool = False
    transcripts: Any = None  # TranscriptStore, written off the loop (its group-commit thread)
    case_errors: dict = field(default_factory=dict)
    code: str = ""
    prices: dict = field(default_factory=dict)  # role → prices (runners.cost.role_prices)
    costs: list = field(default_factory=list)  # cost of each finished episode (the budget's estimate)
    tasks: list = field(default_factory=list)  # the cell's tasks (its shard's, with runner.shard), in order

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

    With a budget (`runner.budget_usd`) the order is fair instead: task 1 of every cell, then
    task 2 of every cell, … (trial 0 of every task before trial 1), and a new round starts only
    when the whole round is expected to fit in the budget (each cell's mean episode cost so
    far), so a run the budget stops has run the same tasks in every cell of a benchmark and its
    tables still compare the methods. Nothing is known about costs before the first round, so
    it runs whole once started (it may pass a budget smaller than one round)."""

    def __init__(
        self, root: Path, pool: BackbonePool, progress: Progress, concurrency: int, budget_usd: float | None = None
    ) -> None:
        self.root, self.pool, self.progress, self.concurrency = root, pool, progress, max(1, concurrency)
        self.stop = asyncio.Event()
        self.fatal: list[str] = []
        # runner.budget_usd: an episode starts only while spent + (episodes in flight + 1) × the
        # mean cost of a finished episode stays within the budget; episodes in flight finish.
        self.budget = budget_usd
        self.spent = 0.0
        self.episode_costs: list[float] = []
        self.in_flight = 0
        self.budget_reached = False
        self.code = code_fingerprint()
        self.fair = budget_usd is not None
        self.rounds: dict[tuple[int, int], list[_CellRun]] = {}  # fair order: round (trial, task index) → its cells
        self.round_started: tuple[int, int] = (-1, -1)

    def _mean(self, run: "_CellRun | None" = None) -> float:
        """Expected cost of one episode: the cell's own mean once it has finished one, else the sweep's."""
        costs = run.costs if run is not None and run.costs else self.episode_costs
        return sum(costs) / len(costs) if costs else 0.0

    def _affordable(self, run: "_CellRun | None" = None, rnd: tuple[int, int] | None = None) -> bool:
        """Whether one more episode (of `run`, in fair round `rnd`) may start within the budget.
        Once the budget is reached no episode starts any more."""
        if self.budget is None:
            return True
        if self.budget_reached:
            return False
        in_flight = self._mean() * self.in_flight
        if rnd is not None and rnd > self.round_started:  # a new round: all of it must fit
            need = sum(self._mean(r) for r in self.rounds.get(rnd, [run]))
            if self.spent >= self.budget or self.spent + in_flight + need > self.budget:
                self.budget_reached = True
                return False
            self.round_started = rnd
            return True
        # inside a started fair round only the cell's own costs count (round 1 has none yet: it
        # runs whole, or the cells would already differ); otherwise the sweep's mean
        own = (self._mean(run) if run is not None and run.costs else 0.0) if rnd is not None else self._mean(run)
        if self.spent >= self.budget or self.spent + in_flight + own > self.budget:
            self.budget_reached = True
            return False
        return True

    def _on_call(self, run: _CellRun, log: CallLog, prices: dict, acc: list[float]) -> None:
        cost = 0.0 if log.cached else (call_usd(log.role, log.usage, prices) or 0.0)
        self.spent += cost
        acc[0] += cost
        run.report.count_call(log, cost)
        self.progress.call(run.report)

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
            why = text_mismatch(p.cfg.cell_name, records, text_fingerprint(notes))
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
        expect = [(t.task_id, k) for k in range(trials) for t in tasks if (t.task_id, k) not in elsewhere]
        manifest = manifest_for(cfg, prep.bench, len(tasks), endpoints, prep.method_cls, [t.task_id for t in tasks])
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
        report = CellReport(cell=cfg.cell_name + (f" [shard {cfg.runner.shard}]" if cfg.runner.shard else ""))
        todo = [
            (t, trial)
            for trial in range(cfg.runner.trials)
            for t in tasks
            if (t.task_id, trial) not in store.done and (t.task_id, trial) not in elsewhere
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
            run.close()
            self.progress.finish_cell(run.report)

    async def _episode(self, run: _CellRun, task: Any, trial: int) -> None:
        cfg, bench, method_cls, store, report, pool = (
            run.prep.cfg,
            run.prep.bench,
            run.prep.method_cls,
            run.store,
            run.report,
            self.pool,
        )
        spent = [0.0]
        prices = run.prices  # a role's calls are priced by its own backbone (runners.cost.role_prices, as the tables)

        def on_call(c: CallLog) -> None:  # live calls/tokens/retries/cost
            self._on_call(run, c, prices, spent)

        resample = min(run.case_errors.get((task.task_id, trial), 0), cfg.runner.case_error_resamples)

        def episode_backbone(bcfg: BackboneCfg) -> Backbone:
            b = pool.for_episode(bcfg, trial, cfg.runner.seed, cfg.runner.fresh)
            return InFlight(Resampled(b, resample) if resample else b, self.progress)

        ep = Episode(
            episode_backbone(cfg.backbone),
            **{role: episode_backbone(rc) for role, rc in cfg.roles.items() if rc is not None},
            cell=cfg.cell_name,
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
                cell=cfg.cell_name,
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
        self.episode_costs.append(spent[0])
        run.costs.append(spent[0])
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
            await run.store.append_async(rec)
            return rec
        except Exception as e:  # e.g. a value that cannot be serialised; the sweep goes on
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
                for p in prepared:
                    if self.stop.is_set():
                        break
                    r = await asyncio.to_thread(self._open, p)
                    runs.append(r)
                    STATE["reports"].append(r.report)
                    _warn_store(r.store, p.cfg.cell_name, self.code, self.progress)
                    self.progress.start_cell(r.report)
                    if not r.todo:
                        await self._finish(r)
                    if self.fair:
                        fair.append(r)
                        continue
                    for t, trial in r.todo:
                        queue.put_nowait((r, t, trial, None))
                for item in fair_order(fair):
                    self.rounds.setdefault(item[3], []).append(item[0])
                    queue.put_nowait(item)
            finally:
                for _ in range(n):
                    queue.put_nowait(None)

        async def worker() -> None:
            while (item := await queue.get()) is not None:  # one queue: episodes start in cell (or fair) order
                r, t, trial, rnd = item
                if self.stop.is_set():
                    continue
                if not self._affordable(r, rnd):
                    r.report.not_started += 1
                    r.remaining -= 1
                    if r.remaining == 0:
                        await self._finish(r)
                    continue
                self.in_flight += 1
                self.progress.in_flight = self.in_flight
                try:
                    await self._episode(r, t, trial)
                finally:
                    self.in_flight -= 1
                    self.progress.in_flight = self.in_flight
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
            return [r.report for r in runs]
        finally:
            for r in runs:
                r.close()


def fair_order(runs: list) -> list[tuple]:
    """(run, task, trial, round) of every episode left in `runs`, round by round: round =
    (trial, the task's place in its cell's task list), so task k of every cell comes before task
    k+1 of any cell and every cell's trial 0 before any trial 1 (cells of different sizes too),
    also when a resumed cell has fewer episodes left than another."""
    items = []
    for ci, r in enumerate(runs):
        index = {t.task_id: i for i, t in enumerate(r.tasks or r.prep.tasks)}
        for t, trial in r.todo:
            items.append(((trial, index.get(t.task_id, 0)), ci, r, t, trial))
    items.sort(key=lambda x: (x[0], x[1]))
    return [(r, t, trial, rnd) for rnd, _, r, t, trial in items]


async def run_cell(prep: PreparedCell, root: Path, pool: BackbonePool, progress: Progress) -> CellReport:
    """Run one prepared cell on its own (`prepare_cell`/`prepare_cells` load data and check params
    first; a sweep runs all its cells through one `Scheduler`)."""
    return (await Scheduler(root, pool, progress, prep.cfg.runner.concurrency, prep.cfg.runner.budget_usd).run([prep]))[
        0
    ]


# ------------------------------------------------------- the whole run: signals, budget, one scheduler for all cells


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """While the episodes run: what is loaded by then (tasks, configs, modules) frozen out of the
    cyclic collector's passes, and the young generation collected every 10,000 allocations
    instead of 700 (an episode allocates thousands of short-lived objects, nearly all freed by
    their reference counts). About a tenth less harness CPU per call (scripts/perf/README.md,
    "Harness CPU per call"); the thresholds and the frozen objects are restored afterwards."""
    import gc

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, before[1], before[2])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if not frozen:  # objects frozen by the caller before (gc cannot thaw only ours) stay frozen
            gc.unfreeze()


TERMINATED: list[int] = []
"""Set when a SIGTERM ended the sweep (`_unwind_on_sigterm`)."""


def _unwind_on_sigterm() -> None:
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


async def run_all(
    cells: list[CellConfig],
    root: Path,
    display: str,
    progress: Progress | None = None,
    check_endpoints: bool = True,
) -> list[Any]:
    """Every cell through one scheduler in this process, or, with `runner.processes` > 1
    (runners/procs.py), through that many worker processes each running its share of every cell.
    `progress`: the display to feed (default: a new one of `display`); `check_endpoints=False`
    skips the preflight (a worker process: its parent checked them)."""
    from runners import interrupts

    _unwind_on_sigterm()
    interrupts.set_phase("loading")
    first = cells[0]
    cache_path = None
    if first.runner.cache:
        cache_path = (
            Path(first.runner.cache_path)
            if first.runner.cache_path
            else Path(first.runner.output_dir) / ".cache" / "responses.sqlite"
        )
    pool = BackbonePool(cache_path)
    # every cell's backbones, extras and data checked (and the data loaded) before any work; what is
    # missing is listed all at once, or its cells skipped with runner.skip_unavailable=true
    s = survey(cells)
    skip_unavailable(s, cells, root)
    prepared = s.prepared
    pool.prepare([p.cfg for p in prepared])
    reports = []
    from runners.procs import processes_for, run_processes

    n_proc = processes_for([p.cfg for p in prepared])
    try:
        if check_endpoints:
            await preflight(pool, first.runner.preflight_s)  # a dead endpoint fails here, naming its URL
        if n_proc > 1:  # worker processes, each its share of every cell; this process shows and counts
            await pool.aclose()
            return await run_processes([p.cfg for p in prepared], root, display, n_proc)
        with few_collections(), progress or Progress(display, heartbeat_s=first.runner.heartbeat_s) as progress:
            pool.set_on_retry(progress.retry)
            # one scheduler for all cells: small cells overlap, the endpoint bound is shared
            sched = Scheduler(
                root, pool, progress, max(c.runner.concurrency for c in cells), cells[0].runner.budget_usd
            )
            reports = await sched.run(prepared)
    finally:
        await pool.aclose()
    return reports


def skip_unavailable(s: Survey, cells: list[CellConfig], root: Path) -> None:
    """Raise `Unavailable` (every missing piece, all cells) unless runner.skip_unavailable=true;
    then print the skipped cells and record them in `<root>/skipped.json` (the tables' footnote
    reads it), or raise when no cell at all can run."""
    from runners.availability import Unavailable, describe, write_skipped

    if s.missing and not cells[0].runner.skip_unavailable:
        raise Unavailable(s.missing, s.labels, len(cells))
    if s.missing and not s.prepared:
        raise Unavailable(s.missing, s.labels, len(cells))
    path = write_skipped(root, s.missing, s.cfgs, [p.cfg.cell_name for p in s.prepared])
    if s.missing:
        print(
            f"warning: {describe(s.missing, s.labels, len(cells), skipping=True)}\n  Running the other "
            f"{len(s.prepared)} cell(s); the skipped ones are listed in {path} and in the tables.",
            file=sys.stderr,
            flush=True,
        )


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
