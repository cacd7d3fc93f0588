"""Typed, validated run configuration. The Hydra-composed config is checked here before any
work starts: an unknown name or a bad value fails with a message that names the valid choices.

Cell key = hash of the validated config minus runtime-only knobs (concurrency, retries,
timeouts, display, trials, limit) and minus where a model is served (`base_url`: a local server
moved to another port is the same model, its sampling and served name unchanged), so a changed
config is a new cell, never a silent mix. A cell stored while its key still held the address is
found by its manifest and renamed to its current name before any work (`adopt_stored_cells`)."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib
import json
import os
import sys
import weakref
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runners.api import check_params

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


class ConfigError(ValueError):
    """A bad configuration, with a message naming the fix."""


class FatalRunError(RuntimeError):
    """A configuration-level failure found while preparing or running (bad key, unknown model, a dead
    endpoint, an unusable response cache): stop the sweep."""


def available(group: str) -> list[str]:
    """The configs of `group`: the project's conf/, and inside a running Hydra app also those of
    the directories it added (`--config-dir`, `hydra.searchpath`), which a grid may then name."""
    names = {p.stem for p in (CONF_DIR / group).glob("*.yaml")}
    if "hydra" not in sys.modules:  # no Hydra app runs in this process (the readers): ~0.1 s of import spared
        return sorted(names)
    try:
        from hydra.core.global_hydra import GlobalHydra

        if GlobalHydra.instance().is_initialized():
            names.update(_hydra_options(GlobalHydra.instance().config_loader(), group))
    except Exception:  # no Hydra, or a search path that cannot be listed: the project's own configs
        pass
    return sorted(names)


_HYDRA_OPTIONS: "weakref.WeakKeyDictionary[Any, dict[str, list[str]]]" = weakref.WeakKeyDictionary()


def _hydra_options(loader: Any, group: str) -> list[str]:
    """Hydra's options of `group`, listed once per config loader (its search path is fixed): each
    `get_group_options` call builds a new config repository, a deep copy of Hydra's ConfigStore
    (~0.1 s), and validating one cell asks for every grid name (a 190-cell grid spent minutes there)."""
    per = _HYDRA_OPTIONS.setdefault(loader, {})
    if group not in per:
        per[group] = list(loader.get_group_options(group))
    return per[group]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class BackboneCfg(_Strict):
    name: str
    kind: Literal["openai", "scripted", "managed"]
    model: str
    base_url: str | None = None
    base_url_env: str | None = None
    api_key_env: str | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    scripted: dict[str, Any] = Field(default_factory=dict)
    server: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "kind managed: the server the harness starts (command template, model_file, env, ready_timeout_s); "
            "runners/backbones/managed.py"
        ),
    )
    max_completion_chars: int | None = Field(
        None,
        ge=1,
        description="cap on the characters of a reply that are stored and parsed (truncation recorded); null = no cap",
    )
    # runtime-only knobs (not in the cell key)
    max_inflight: int = Field(16, ge=1)
    timeout_s: float = Field(600, gt=0)
    max_retries: int = Field(8, ge=0)
    backoff_cap_s: float = Field(60, gt=0)
    transport: Literal["h1", "aiohttp", "httpx"] = Field(
        "h1", description="HTTP client: h1 (asyncio + httptools); aiohttp and httpx are kept as switches"
    )
    prices: dict[str, float | None] | None = Field(
        None, description="USD per million tokens: {input, cached_input, output} (runners/cost.py)"
    )
    prices_source: str | None = Field(
        None, description="where `prices` come from and as of when (a public list price), shown by runner.plan=true"
    )
    refused_window_s: float = Field(
        10, ge=0, description="connection refused for this long (no success between) is fatal"
    )
    max_reply_bytes: int = Field(
        32 * 2**20,
        ge=1024,
        description="most bytes of one reply body (decompressed) read; a longer one fails that call (retried)",
    )
    follow_cross_host_redirects: bool = Field(
        False, description="follow a redirect to another host (the prompts and the key go there); refused by default"
    )

    RUNTIME: ClassVar[tuple[str, ...]] = (
        "max_inflight",
        "timeout_s",
        "max_retries",
        "backoff_cap_s",
        "refused_window_s",
        "max_reply_bytes",
        "follow_cross_host_redirects",
        "transport",
        "prices",
        "prices_source",
    )

    @field_validator("prices")
    @classmethod
    def _prices(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None or (isinstance(v, dict) and all(x is None for x in v.values())):
            return None  # no price (the shipped configs' {input: null, ...}: backbone.prices.input=… sets one)
        if isinstance(v, dict) and (v.get("input") is None or v.get("output") is None):
            raise ValueError(
                "prices need both input and output (USD per 1M tokens; cached_input defaults to input): "
                "backbone.prices.input=<USD> backbone.prices.output=<USD>"
            )
        from runners.cost import Prices

        return Prices.model_validate(v).model_dump()  # ValueError names the bad or missing field

    @field_validator("sampling")
    @classmethod
    def _sampling(cls, v: dict[str, Any]) -> dict[str, Any]:
        t = v.get("temperature")
        if t is not None and not (0 <= float(t) <= 2):
            raise ValueError(f"temperature must be in [0, 2], got {t}")
        return v

    def key_dict(self) -> dict[str, Any]:
        d = self.model_dump(exclude=set(self.RUNTIME))
        d.pop("base_url_env"), d.pop("api_key_env")  # where secrets come from is not the model
        # where the model is served is not what is measured: a local server moved to another port (or
        # a proxy in front of the same endpoint) resumes the cell; the served model name and the
        # sampling stay in the key (the manifest's `endpoints` records each run's address)
        d.pop("base_url")
        d["scripted"] = {
            k: v for k, v in d["scripted"].items() if k != "latency_s"
        }  # simulated latency is runtime-only
        if not d.get("server"):
            d.pop("server", None)  # not a managed backbone: the key stays what it was
        if d.get("max_completion_chars") is None:
            d.pop("max_completion_chars", None)  # no cap: the key stays what it was before the option existed
        return d


class _TargetCfg(_Strict):
    """A config group entry that names a class (`_target_`) and its params."""

    GROUP: ClassVar[str]
    name: str
    target: str = Field(alias="_target_")
    params: dict[str, Any] = Field(default_factory=dict)

    @property
    def cls(self) -> type[Any]:
        """The class `_target_` names (imported once per target), or a ConfigError naming this entry."""
        return import_target(self.target, f"{self.GROUP} '{self.name}'")


class MethodCfg(_TargetCfg):
    GROUP = "method"


class BenchmarkCfg(_TargetCfg):
    GROUP = "benchmark"
    roles: dict[str, str | None] = Field(
        default_factory=dict,
        description=(
            "role -> conf/backbone name the benchmark uses by default for the roles it hosts (as upstream: τ's user "
            "simulator and NL judge gpt_4_1, MemoryArena's formal judge and reasoning tool gpt_5_mini); a top-level "
            "`roles.<role>` overrides it; ignored when the agent backbone is scripted"
        ),
    )

    RUNTIME_PARAMS: ClassVar[tuple[str, ...]] = ("limit",)

    def key_dict(self) -> dict[str, Any]:
        d = self.model_dump(by_alias=True, exclude={"roles"})  # the resolved role backbones are in the cell key
        d["params"] = {k: v for k, v in self.params.items() if k not in self.RUNTIME_PARAMS}
        return d


class RunnerCfg(_Strict):
    output_dir: str = "results"
    concurrency: int = Field(
        8, ge=1, description="episodes in flight in the whole sweep (all cells share one scheduler)"
    )
    trials: int = Field(1, ge=1)
    seed: int = 0
    display: Literal["auto", "rich", "plain", "none"] = "auto"
    heartbeat_s: float = Field(
        30, gt=0, description="plain display (logs, nohup, Slurm): a line on the sweep's state every this many seconds"
    )
    cache: bool = True
    cache_path: str | None = Field(
        None, description="SQLite response cache; default <output_dir>/.cache/responses.sqlite"
    )
    limit: int | None = Field(None, ge=1, description="run only the first N tasks (overrides benchmark.params.limit)")
    reference_method: str = "full_context"
    case_error_resamples: int = Field(
        2,
        ge=0,
        description=(
            "reruns of a case that ended in a CaseError draw fresh samples (bypassing the cached replies) at most "
            "this many times; later reruns replay the last generation"
        ),
    )
    transcripts: bool = Field(True, description="keep every call's messages and raw reply in <cell>/transcripts.sqlite")
    compact_records: bool = Field(
        True,
        description=(
            "the records are compressed a chunk at a time while the cell runs, to episodes.jsonl.zst (read it with "
            "zstdcat; the plain episodes.jsonl holds the last chunk until the cell ends); false keeps them plain"
        ),
    )
    compact_level: int = Field(
        3,
        ge=1,
        le=22,
        description="zstd level of the compressed records: 3 (default) ~0.1 ms of CPU per 33 KB record, as small "
        "as xz's preset 1 was at a fourteenth of its CPU; 9 ~4x the CPU for ~7% smaller files "
        "(docs/large-experiments.md)",
    )
    wandb: bool = Field(
        False, description="log each cell's metrics and tokens and the HTML report to W&B (the wandb extra)"
    )
    wandb_project: str | None = Field(
        None, description="W&B project (default: $WANDB_PROJECT, else the experiment name)"
    )
    preflight_s: float = Field(
        10,
        ge=0,
        description="before the sweep, wait at most this long for every endpoint to accept a connection (0: no check)",
    )
    check_access: bool = Field(
        True,
        description="before any episode, check each endpoint's key and model (GET /models, else a 1-token "
        "request; runners/access.py) and refuse a 401/403/404 with its fix",
    )
    prune: Literal["failed"] | None = Field(
        None,
        description="failed: before the run, move aside the cells that never finished an episode because of a "
        "configuration error (runners/prune.py)",
    )
    prices_file: str | None = Field(
        None,
        description="YAML mapping a model (or backbone) name to {input, cached_input, output} USD per 1M tokens; "
        "applied to every backbone it names (runners/config.py apply_prices_file)",
    )
    fresh: bool = Field(
        False,
        description="re-run every cell from scratch, moving old results to <experiment>/.superseded/, "
        "and re-sample every model call (response cache reads off, writes on)",
    )
    plan: bool = Field(
        False,
        description=(
            "print the plan and its cost (tasks × trials, calls, tokens and $ per role) and exit: no model call, "
            "nothing written (runners/plan.py)"
        ),
    )
    skip_unavailable: bool = Field(
        False,
        description=(
            "run the cells whose data, extras and backbones are available and list the skipped ones "
            "(<experiment>/skipped.json, the tables' footnote); false: any missing piece stops the sweep before "
            "any work"
        ),
    )

    @field_validator("reference_method")
    @classmethod
    def _reference(cls, v: str) -> str:
        if v not in available("method"):
            raise ValueError(f"unknown reference method '{v}'; available: {', '.join(available('method'))}")
        return canonical_method(v)

    budget_usd: float | None = Field(
        None,
        gt=0,
        description="the experiment's total spend in USD, counted from its stored records and recorded in "
        "<experiment>/budget.json (runners/budget.py); needs backbone prices",
    )
    shard: str | None = Field(
        None, description="i/n: run only the i-th of n task ranges (0-based) of every cell, into its own records"
    )
    processes: int | Literal["auto"] = Field(
        "auto",
        description=(
            "worker processes on this machine, each running the i-th of n task ranges of every cell "
            "(runners/procs.py); auto: one per 128 episodes in flight, at most one per 2 cores (1 below 256 in "
            "flight, on fewer than 4 cores, with a budget, a managed server or executor=ray)"
        ),
    )
    executor: Literal["local", "ray"] = Field(
        "local",
        description="local: one process, one scheduler; ray: every cell a Ray task (runners/ray_exec.py, extra `ray`)",
    )
    ray_address: str | None = Field(
        None, description="Ray cluster address for executor=ray (null: start a local instance)"
    )

    @field_validator("processes", mode="before")
    @classmethod
    def _processes(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().isdigit():
            v = int(v)
        if isinstance(v, int) and not isinstance(v, bool) and v < 1:
            raise ValueError(f"runner.processes must be auto or a whole number ≥ 1, got {v}")
        return v

    @field_validator("shard")
    @classmethod
    def _shard(cls, v: str | None) -> str | None:
        if v in (None, ""):
            return None
        try:
            i, n = (int(x) for x in str(v).split("/"))
        except ValueError:
            raise ValueError(f"runner.shard must look like i/n (e.g. 0/4), got {v!r}") from None
        if not (n >= 1 and 0 <= i < n):
            raise ValueError(f"runner.shard {v!r}: need 0 <= i < n")
        return f"{i}/{n}"


class ExperimentCfg(_Strict):
    name: str = "default"
    description: str = ""
    grid: dict[str, list[str]] = Field(default_factory=dict, description="group -> names; expanded into cells")
    benchmark_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description=(
            "benchmark name -> params set on that benchmark only (e.g. Travel's ps_pooling in a grid over all "
            "MemoryArena benchmarks)"
        ),
    )
    note: str = Field(
        "", description="a line shown with the run and above the tables (e.g. quickstart: not the paper's setting)"
    )
    scripted_noise: dict[str, Any] = Field(
        default_factory=dict,
        description="seeded noise knobs (runners/backbones/scripted.py: malformed_rate, empty_rate, perturb, "
        "perturb_rate) set on a scripted agent backbone that leaves them at their defaults: the offline demo's "
        "methods then differ; {} = none; HARNESS_DEMO_NOISE=0 turns it off (the test suite does)",
    )

    @field_validator("scripted_noise", mode="before")
    @classmethod
    def _no_noise(cls, v: Any) -> Any:
        return {} if v is None else v  # experiment.scripted_noise=null: no noise, as {}

    @field_validator("grid")
    @classmethod
    def _grid(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for group, names in v.items():
            if group not in ("method", "backbone", "benchmark"):
                raise ValueError(f"grid axis '{group}' is not a config group; use method, backbone or benchmark")
            known = available(group)
            for n in names:
                if n not in known:
                    raise ValueError(f"unknown {group} '{n}' in experiment grid; available: {', '.join(known)}")
        return v

    @field_validator("benchmark_params")
    @classmethod
    def _benchmark_params(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for n in v:
            if n not in available("benchmark"):
                raise ValueError(
                    f"unknown benchmark '{n}' in experiment.benchmark_params; "
                    f"available: {', '.join(available('benchmark'))}"
                )
        return v


ROLE_NAMES = ("judge", "user_sim", "tool")
"""Roles whose backbone a config can choose (every other role uses the agent's backbone)."""


class RolesCfg(_Strict):
    """Backbones for the roles the benchmark hosts; None = the agent's backbone. `origin` says, per
    role, where the choice came from (for messages and the manifest)."""

    judge: BackboneCfg | None = None
    user_sim: BackboneCfg | None = None
    tool: BackboneCfg | None = None
    origin: dict[str, str] = Field(default_factory=dict)

    def items(self) -> list[tuple[str, BackboneCfg | None]]:
        return [(r, getattr(self, r)) for r in ROLE_NAMES]


class CellConfig(_Strict):
    method: MethodCfg
    backbone: BackboneCfg
    benchmark: BenchmarkCfg
    runner: RunnerCfg = Field(default_factory=RunnerCfg)
    experiment: ExperimentCfg = Field(default_factory=ExperimentCfg)
    roles: RolesCfg = Field(default_factory=RolesCfg)

    def key(self) -> str:
        payload = {
            "method": self.method.model_dump(by_alias=True),
            "backbone": self.backbone.key_dict(),
            "benchmark": self.benchmark.key_dict(),
            "roles": {r: (b.key_dict() if b else None) for r, b in self.roles.items() if b is not None or r != "tool"},
            "seed": self.runner.seed,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:10]

    @property
    def cell_name(self) -> str:
        return f"{self.method.name}__{self.backbone.name}__{self.benchmark.name}__{self.key()}"

    @property
    def scripted(self) -> bool:
        return self.backbone.kind == "scripted"


@functools.cache
def method_aliases() -> dict[str, str]:
    """conf/method files that are another method under a second name (their composed `name` is
    not the file's, e.g. raw_trajectory.yaml, PoS's name for full_context): alias -> method.
    An alias runs, resumes and tabulates as the method it names (the same cell)."""
    import yaml

    out = {}
    for p in sorted((CONF_DIR / "method").glob("*.yaml")):
        try:
            name = _composed_key("method", p.stem, "name")
        except (OSError, ValueError, yaml.YAMLError):  # an unreadable file is reported where it is used
            name = None
        if name and name != p.stem:
            out[p.stem] = name
    return out


def _composed_key(group: str, name: str, key: str, _seen: tuple[str, ...] = ()) -> Any:
    """`group_config(group, name)[key]` for a top-level scalar, read with PyYAML's C loader: the last of the
    file's `defaults` (in order, `_self_` last unless placed) that sets it. Every sweep process asks this of each
    method file (`method_aliases`); composing them all with OmegaConf cost ~0.15 CPU-s per process."""
    import yaml

    if name in _seen:
        raise ValueError(f"conf/{group}/{name}.yaml: its defaults include itself")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load((CONF_DIR / group / f"{name}.yaml").read_text(), Loader=loader) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"conf/{group}/{name}.yaml is not a mapping")
    defaults = list(raw.get("defaults") or ["_self_"])
    if "_self_" not in defaults:
        defaults.append("_self_")
    value = None
    for d in defaults:
        v = raw.get(key) if d == "_self_" else _composed_key(group, str(d), key, (*_seen, name))
        if v is not None:
            value = v
    return value


def canonical_method(name: str) -> str:
    """The method an alias names (`raw_trajectory` -> `full_context`); other names unchanged."""
    return method_aliases().get(name, name)


def group_config(group: str, name: str) -> dict[str, Any]:
    """`conf/<group>/<name>.yaml` as Hydra composes it without the rest of the config: its
    `defaults` (other configs of the same group, e.g. an ablation's `[pos, _self_]`) merged in order."""
    from omegaconf import OmegaConf

    raw = OmegaConf.load(CONF_DIR / group / f"{name}.yaml")
    defaults = list(raw.pop("defaults", None) or ["_self_"])  # type: ignore[call-arg, arg-type]  # stub types raw as ListConfig too; here a DictConfig
    if "_self_" not in defaults:
        defaults.append("_self_")
    parts = [raw if d == "_self_" else OmegaConf.create(group_config(group, str(d))) for d in defaults]
    return OmegaConf.to_container(OmegaConf.merge(*parts), resolve=False)  # type: ignore[return-value]


@functools.lru_cache(maxsize=None)
def _import(path: str) -> type:
    mod, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


class TargetNotFound(ConfigError):
    """A `_target_` whose module Python cannot find: its package (an external benchmark or method)
    is not on the path. `module` is the name Python looked for."""

    def __init__(self, message: str, module: str) -> None:
        super().__init__(message)
        self.module = module


def import_target(path: str, what: str) -> type:
    """The class `path` names (imported once per target), or a ConfigError naming `what`: a
    `TargetNotFound` naming the module when the target's own module is not on the path."""
    try:
        return _import(path)
    except ModuleNotFoundError as e:
        mod = path.rpartition(".")[0]
        if e.name and (mod == e.name or mod.startswith(e.name + ".")):  # the target's own package, not a dependency
            raise TargetNotFound(
                f"{what} _target_ '{path}' cannot be imported: module '{e.name}' is not on the path. Fix: put the "
                f"folder that holds the package '{mod.split('.')[0]}' on PYTHONPATH "
                "(PYTHONPATH=<that folder> python -m ...)",
                e.name,
            ) from None
        raise ConfigError(f"{what} _target_ '{path}' cannot be imported: {e}") from None
    except (ImportError, AttributeError, ValueError) as e:
        raise ConfigError(f"{what} _target_ '{path}' cannot be imported: {e}") from None


def _load_role(value: Any, role: str = "") -> BackboneCfg | None:
    """A role is "agent" (the agent's backbone), a backbone config name (conf/backbone/<name>.yaml)
    or an inline mapping."""
    if value in (None, "", "agent"):
        return None
    if isinstance(value, str):
        if value not in available("backbone"):
            raise ConfigError(
                f"unknown backbone '{value}' for role '{role}'; available: agent, {', '.join(available('backbone'))}"
            )
        import yaml

        value = yaml.safe_load((CONF_DIR / "backbone" / f"{value}.yaml").read_text())
    return BackboneCfg.model_validate(value)


def resolve_roles(cfg: "CellConfig", given: dict[str, Any]) -> RolesCfg:
    """Each role's backbone: the top-level `roles.<role>` when set ("agent" = the agent's backbone),
    else the benchmark's default (`benchmark.roles`), else the agent's backbone. With the scripted
    agent backbone the benchmark defaults are not applied (offline demo and tests need no key);
    an explicit `roles.<role>` still is."""
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    bad = sorted(set(cfg.benchmark.roles) - set(ROLE_NAMES))
    if bad:
        raise ConfigError(
            f"benchmark '{cfg.benchmark.name}': unknown role(s) {bad} in `roles`; "
            f"configurable roles: {', '.join(ROLE_NAMES)}"
        )
    for role in ROLE_NAMES:
        value = given.get(role)
        if value not in (None, ""):
            where = f"roles.{role}={value if isinstance(value, str) else '<inline>'}"
        elif cfg.benchmark.roles.get(role) and cfg.backbone.kind != "scripted":
            value = cfg.benchmark.roles[role]
            where = (
                f"default of benchmark '{cfg.benchmark.name}' (override: roles.{role}=agent or roles.{role}=<backbone>)"
            )
        else:
            value, where = None, "agent backbone"
        out[role] = _load_role(value, role)
        origin[role] = where if out[role] is not None else "agent backbone"
    return RolesCfg(**out, origin=origin)


def read_prices_file(path: str) -> dict[str, dict[str, Any]]:
    """`runner.prices_file`: a YAML mapping of model or backbone names to prices, e.g.

        deepseek-v4-flash: {input: 0.27, cached_input: 0.07, output: 1.10, source: "list price, 2026-05"}
        gpt_5_6_terra: {input: 1.25, output: 10.0}

    (USD per 1M tokens; cached_input defaults to input; `source` is shown by runner.plan=true)."""
    import yaml

    from runners.cost import Prices

    p = Path(os.path.expandvars(path)).expanduser()
    try:
        data = yaml.safe_load(p.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"runner.prices_file {p} cannot be read ({type(e).__name__}: {e}); fix the path or the YAML")
    if not isinstance(data, dict):
        raise ConfigError(f"runner.prices_file {p}: expected a mapping of model or backbone names to prices")
    out = {}
    for name, v in data.items():
        try:
            entry = dict(v)
            source = entry.pop("source", None)
            out[str(name)] = {"prices": Prices.model_validate(entry).model_dump(), "source": source}
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"runner.prices_file {p}: entry '{name}' is not {{input, cached_input, output}} in USD per 1M tokens "
                f"({e})"
            ) from None
    return out


def apply_prices_file(cfg: "CellConfig", path: str) -> None:
    """Price every backbone of the cell that has no prices (in its config or on the command line,
    which win) from `runner.prices_file`, by model name, else by backbone name."""
    table = read_prices_file(path)
    for b in (cfg.backbone, *(x for _, x in cfg.roles.items())):
        if b is None or b.prices is not None:
            continue
        entry = table.get(b.model) or table.get(b.name)
        if entry:
            b.prices = entry["prices"]
            b.prices_source = entry["source"] or f"runner.prices_file {path}"


def validate(raw: dict[str, Any]) -> CellConfig:
    """Composed config (plain dict) → CellConfig, or ConfigError naming the fix."""
    raw = dict(raw)
    roles = dict(raw.pop("roles", None) or {})
    raw.pop("hydra", None)
    bench_name = (raw.get("benchmark") or {}).get("name")
    extra = ((raw.get("experiment") or {}).get("benchmark_params") or {}).get(bench_name)
    if extra:
        raw["benchmark"] = {**raw["benchmark"], "params": {**(raw["benchmark"].get("params") or {}), **extra}}
    noise = (raw.get("experiment") or {}).get("scripted_noise") or {}
    backbone = raw.get("backbone") or {}
    if noise and backbone.get("kind") == "scripted" and os.environ.get("HARNESS_DEMO_NOISE", "1") != "0":
        knobs = dict(backbone.get("scripted") or {})
        defaults = {"malformed_rate": 0.0, "empty_rate": 0.0, "perturb": None, "perturb_rate": 1.0}
        for k, v in noise.items():  # a knob set on the command line (not at its default) wins
            if k not in defaults:
                raise ConfigError(f"experiment.scripted_noise: unknown knob '{k}'; knobs: {', '.join(defaults)}")
            if knobs.get(k, defaults[k]) == defaults[k]:
                knobs[k] = v
        raw["backbone"] = {**backbone, "scripted": knobs}
    unknown = sorted(set(roles) - set(ROLE_NAMES))
    if unknown:
        raise ConfigError(f"unknown role(s) {unknown} under `roles`; configurable roles: {', '.join(ROLE_NAMES)}")
    try:
        cfg = CellConfig.model_validate({**raw, "roles": {}})
        cfg.roles = resolve_roles(cfg, roles)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"])
            hint = ""
            if err["type"] == "extra_forbidden":
                hint = " (unknown key: check spelling)"
            lines.append(f"  {loc}: {err['msg']}{hint}")
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None
    if cfg.method.name not in available("method"):
        files = [f"conf/method/{a}.yaml" for a, n in method_aliases().items() if n == cfg.method.name]
        if files:  # the file the user named sets another `name:` than its own
            raise ConfigError(
                f"{' and '.join(files)} set{'s' if len(files) == 1 else ''} `name: {cfg.method.name}`, which is no "
                "method config's name (a method's `name` is its file's name, or the name of the method it is an "
                f"alias of). Fix: set `name: {files[0].rsplit('/', 1)[-1][: -len('.yaml')]}` in {files[0]}"
            )
        raise ConfigError(f"unknown method '{cfg.method.name}'; available: {', '.join(available('method'))}")
    cfg.method.cls  # an unimportable target fails here, naming the config entry
    if cfg.runner.prices_file:
        apply_prices_file(cfg, cfg.runner.prices_file)
    try:
        check_params(cfg.benchmark.name, cfg.benchmark.cls.Params, cfg.benchmark.params)
    except ValueError as e:
        raise ConfigError(
            f"{e}; fix conf/benchmark/{cfg.benchmark.name}.yaml, the preset or the benchmark.params.* override"
        ) from None
    return cfg


def stored_cell_dirs(root: Path, cfg: CellConfig) -> list[Path]:
    """Folders under `root` (an experiment's results) that hold this cell under another name: cells
    written when the key still held the endpoint address (`base_url`), whose manifest's config has
    this cell's key today. Most finished episodes first (by records size); read only."""
    root, name = Path(root), cfg.cell_name
    prefix = name.rsplit("__", 1)[0] + "__"
    found = []
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name == name or not d.name.startswith(prefix) or not (d / "manifest.json").is_file():
            continue
        try:
            conf = json.loads((d / "manifest.json").read_text()).get("config")
            if CellConfig.model_validate(conf).key() != cfg.key():
                continue
        except (OSError, ValueError, AttributeError):  # unreadable, or a config of another schema
            continue
        size = sum(p.stat().st_size for p in d.rglob("episodes.jsonl*") if p.is_file())
        found.append((-size, d))
    return [d for _, d in sorted(found)]


@contextlib.contextmanager
def _unlocked(cell_dir: Path) -> Any:
    """The cell's lock held for a block (BlockingIOError when a sweep is writing the cell)."""
    fd = os.open(cell_dir / ".lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def adopt_stored_cells(root: Path, cells: list[CellConfig]) -> list[str]:
    """Before any work: a cell stored under an older name (its key held the endpoint address) is
    renamed to its current name, so a resume runs only what is missing, never every episode again.
    Returns notes to print. With several such folders (runs against several addresses), the one
    with the most records is adopted and the others are left untouched and named."""
    notes = []
    for cfg in cells:
        new = Path(root) / cfg.cell_name
        if new.exists():
            continue
        old = stored_cell_dirs(root, cfg)
        if not old:
            continue
        try:
            with _unlocked(old[0]):
                old[0].rename(new)
        except (BlockingIOError, OSError):
            if new.exists():  # another process (a shard of the same sweep) renamed it meanwhile
                continue
            notes.append(f"cell {cfg.cell_name}: {old[0].name} holds it but is being written; it runs as a new cell")
            continue
        notes.append(
            f"cell {cfg.cell_name}: resumed from {old[0].name} (stored when the endpoint address was part of the "
            "cell's name; renamed)"
            + (f"; also holding this cell, left as they are: {', '.join(d.name for d in old[1:])}" if old[1:] else "")
        )
    return notes
