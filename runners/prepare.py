"""Preparing the cells of a sweep before any work: every cell's backbones, method and benchmark
checked, tasks loaded (`survey`, `prepare_cells`, `prepare_cell`), the method's params probed,
and what a cell's manifest records (`manifest_for`)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from runners.api import Backbone, Benchmark, Completion, Message, Method, Protocol, Role
from runners.config import CellConfig, ConfigError, FatalRunError

if TYPE_CHECKING:
    pass


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
    tasks: Sequence[Any]  # `load_tasks`' result as it is: a list, or a lazy sequence (runners.api.JsonlTasks)
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


def _check_unique(cfg: CellConfig, tasks: Sequence[Any]) -> None:
    from runners.api import task_ids

    ids = task_ids(tasks)  # a lazy sequence's own: no task parsed
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


def known_task_kinds() -> dict[str, str]:
    """Every task kind (kind → description): those of every configured benchmark
    (conf/benchmark/*.yaml; each class declares its own when imported) and of any other benchmark
    imported here (one from outside the project, its cell's)."""
    import yaml

    from runners.api import task_kinds
    from runners.config import CONF_DIR, available, import_target

    for name in available("benchmark"):
        try:
            target = (yaml.safe_load((CONF_DIR / "benchmark" / f"{name}.yaml").read_text()) or {}).get("_target_")
            import_target(str(target), f"benchmark '{name}'")
        except (OSError, ValueError, yaml.YAMLError):  # ConfigError included: that cell reports it itself
            continue
    return task_kinds()


def check_kinds(cfg: CellConfig) -> None:
    """A method's `kind_overrides` (kit.overrides) keyed by a kind no benchmark declares is a
    ConfigError naming the known kinds: a misspelt kind would silently never apply."""
    overrides = cfg.method.params.get("kind_overrides")
    if not isinstance(overrides, dict) or not overrides:
        return
    kinds = known_task_kinds()
    unknown = sorted(set(overrides) - set(kinds))
    if unknown:
        raise ConfigError(
            f"method '{cfg.method.name}': kind_overrides: unknown task kind(s) {unknown}; kinds are "
            f"{', '.join(kinds)} (each benchmark declares its own in `Benchmark.task_kinds`). Fix: the "
            f"kind_overrides of conf/method/{cfg.method.name}.yaml or the method.params.kind_overrides override"
        )


def probe_method(cfg: CellConfig) -> type:
    """The method class, after instantiating it once with the cell's params, so a bad value
    (or an argument the constructor rejects, or a per-kind setting for a kind no benchmark has)
    fails before any work, not inside a running cell."""
    check_kinds(cfg)
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
