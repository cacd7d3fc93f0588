"""Running one cell: load tasks, skip finished (task, trial) pairs, run the rest as concurrent
episodes, append each record as it finishes."""
from __future__ import annotations

import asyncio
import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.api import Backbone, Benchmark, method_tokens
from runners.config import BackboneCfg, CellConfig, ConfigError, import_target
from runners.episode import Episode, EpisodeRecord
from runners.progress import Progress
from runners.store import CellStore


class FatalRunError(RuntimeError):
    """A configuration-level failure (bad key, unknown model): stop the sweep."""


@dataclass
class CellReport:
    cell: str
    total: int = 0
    skipped: int = 0
    ok: int = 0
    infra_error: int = 0
    harness_error: int = 0
    calls: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)


class BackbonePool:
    """One backbone object per distinct config for the whole sweep, so per-endpoint in-flight
    bounds and the response cache are shared across cells."""

    def __init__(self, cache_path: Path | None) -> None:
        self._by_key: dict[str, Backbone] = {}
        self.cache = None
        self.cache_path = cache_path

    def get(self, cfg: BackboneCfg) -> Backbone:
        """The shared backbone of `cfg`; a missing key variable or a bad option is a ConfigError."""
        key = cfg.model_dump_json()
        if key not in self._by_key:
            try:
                if cfg.kind == "scripted":
                    from runners.backbones.scripted import ScriptedBackbone

                    self._by_key[key] = ScriptedBackbone(name=cfg.name, model=cfg.model, **cfg.scripted)
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
                    raise ConfigError(f"{e} — it serves role(s) {', '.join(users)} of cell {c.cell_name} ({where}); "
                                      f"set the variable, or run them on the agent's backbone with {fix}") from None

    def for_episode(self, cfg: BackboneCfg, trial: int, seed: int = 0) -> Backbone:
        """The backbone one episode uses: cached per (trial, run seed `runner.seed`) for endpoints."""
        inner = self.get(cfg)
        if cfg.kind == "scripted" or self.cache_path is None:
            return inner
        from runners.cache import CachedBackbone, ResponseCache

        if self.cache is None:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache = ResponseCache(self.cache_path)
        return CachedBackbone(inner, self.cache, trial, seed)

    async def aclose(self) -> None:
        for b in self._by_key.values():
            await b.aclose()


def _without_url_credentials(config: dict[str, Any]) -> dict[str, Any]:
    """The dumped config with `user:password@` cut out of every backbone's base_url."""
    from runners.backbones.openai import redact_url

    for b in (config.get("backbone"), *((config.get("roles") or {}).get(r) for r in ("judge", "user_sim", "tool"))):
        if isinstance(b, dict) and b.get("base_url"):
            b["base_url"] = redact_url(b["base_url"])
    return config


def manifest_for(cfg: CellConfig, bench: Benchmark, n_tasks: int, endpoints: dict[str, str] | None = None,
                 method_cls: type | None = None) -> dict[str, Any]:
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
        "method_notes": method_cls.notes(cfg.method.params) if hasattr(method_cls, "notes") else {},
        "n_tasks": n_tasks,
        "trials": cfg.runner.trials,
        "seed": cfg.runner.seed,
    }


@dataclass
class PreparedCell:
    cfg: CellConfig
    bench: Benchmark
    tasks: list
    method_cls: type


def prepare_cells(cells: list[CellConfig]) -> list[PreparedCell]:
    """Prepare every cell; cells with the same benchmark config share one loaded benchmark."""
    loaded: dict[str, PreparedCell] = {}
    out = []
    for c in cells:
        key = json.dumps([c.benchmark.model_dump(by_alias=True), c.runner.limit], sort_keys=True, default=str)
        if key not in loaded:
            loaded[key] = prepare_cell(c)
        p = loaded[key]
        out.append(PreparedCell(c, p.bench, p.tasks, probe_method(c)))
    return out


class _ProbeBackbone(Backbone):
    """Stands in for the agent backbone while a method's params are checked (never called)."""

    name = model = "probe"

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):  # pragma: no cover - never called
        raise RuntimeError("probe backbone is not callable")


def probe_method(cfg: CellConfig) -> type:
    """The method class, after instantiating it once with the cell's params, so a bad value
    (or an argument the constructor rejects) fails before any work, not inside a running cell."""
    cls = import_target(cfg.method.target, "method")
    try:
        cls(backbone=_ProbeBackbone(), **cfg.method.params)
    except Exception as e:  # any constructor rejection is a config problem
        raise ConfigError(f"method '{cfg.method.name}' rejects its params ({type(e).__name__}: {e}); "
                          f"fix conf/method/{cfg.method.name}.yaml or the method.params.* override") from None
    return cls


def prepare_cell(cfg: CellConfig) -> PreparedCell:
    """Instantiate the benchmark and load its tasks (before any cell runs, so missing data fails
    the sweep up front)."""
    bench_cls = import_target(cfg.benchmark.target, "benchmark")
    params = dict(cfg.benchmark.params)
    if cfg.runner.limit:
        params["limit"] = cfg.runner.limit
    try:
        bench: Benchmark = bench_cls(name=cfg.benchmark.name, **params)
        tasks = bench.load_tasks()
    except Exception as e:  # missing/corrupt data or bad params: stop before any work, with the loader's message
        raise FatalRunError(f"benchmark '{cfg.benchmark.name}' could not load its tasks: {e}") from None
    ids = [t.task_id for t in tasks]
    if len(set(ids)) != len(ids):  # records are keyed by (task_id, trial): duplicates would be skipped or double-counted
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise FatalRunError(f"benchmark '{cfg.benchmark.name}' loaded duplicate task ids {dup}; "
                            "task ids must be unique (fix the adapter's load_tasks or the data file)")
    return PreparedCell(cfg, bench, tasks, probe_method(cfg))


async def run_cell(cell: CellConfig | PreparedCell, root: Path, pool: BackbonePool, progress: Progress) -> CellReport:
    prep = cell if isinstance(cell, PreparedCell) else prepare_cell(cell)
    cfg, bench, tasks, method_cls = prep.cfg, prep.bench, prep.tasks, prep.method_cls
    endpoints = {role: getattr(pool.get(b), "display_url", None) or "" for role, b in
                 (("agent", cfg.backbone), *cfg.roles.items()) if b is not None and b.kind != "scripted"}
    store = CellStore(root, cfg.cell_name).open(manifest_for(cfg, bench, len(tasks), endpoints, method_cls))
    report = CellReport(cell=cfg.cell_name)
    try:
        todo = [(t, trial) for trial in range(cfg.runner.trials) for t in tasks if (t.task_id, trial) not in store.done]
        report.total = len(tasks) * cfg.runner.trials
        report.skipped = report.total - len(todo)
        cp = progress.start_cell(cfg.cell_name, report.total, report.skipped)
        sem = asyncio.Semaphore(cfg.runner.concurrency)
        stop = asyncio.Event()
        fatal: list[str] = []

        async def one(task, trial: int) -> None:
            async with sem:
                if stop.is_set():
                    return
                ep = Episode(pool.for_episode(cfg.backbone, trial, cfg.runner.seed),
                             **{role: pool.for_episode(rc, trial, cfg.runner.seed) for role, rc in cfg.roles.items() if rc is not None},
                             cell=cfg.cell_name, task_id=task.task_id, trial=trial, seed=cfg.runner.seed + trial)
                try:
                    env = ep.make_env(bench, task)
                    method = method_cls(backbone=ep.agent, **cfg.method.params)
                except Exception as e:  # a benchmark/method bug for this task: record it, keep the other episodes going
                    rec = EpisodeRecord(cell=cfg.cell_name, task_id=task.task_id, trial=trial, seed=ep.seed, status="harness_error",
                                        error=f"setting up the episode failed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}")
                else:
                    rec = await ep.run(env, method)
                store.append(rec)
                report.calls += sum(rec.calls_by_role.values())
                report.cache_hits += rec.cache_hits
                setattr(report, rec.status, getattr(report, rec.status) + 1)
                if rec.status != "ok":
                    report.errors.append(f"{task.task_id}#{trial}: {(rec.error or '').splitlines()[0]}")
                    if rec.fatal:
                        fatal.append(rec.error or "fatal backbone error")
                        stop.set()
                progress.episode(cp, status=rec.status, tokens=method_tokens(rec.usage_by_role), calls=sum(rec.calls_by_role.values()),
                                 cache_hits=rec.cache_hits, task=task.task_id)

        running = [asyncio.ensure_future(one(t, trial)) for t, trial in todo]
        try:
            await asyncio.gather(*running)
        except BaseException:  # an unexpected error (disk full, display bug): stop the siblings before the store closes
            for r in running:
                r.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            raise
        if fatal:
            raise FatalRunError(fatal[0])
        if report.ok + report.skipped == report.total:
            store.mark_done({"total": report.total, "ok": report.total})
        return report
    finally:
        store.close()
