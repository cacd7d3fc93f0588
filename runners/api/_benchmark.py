"""The benchmark side: tasks with their gold, the per-episode context, and the `Benchmark` that
loads tasks, builds environments and aggregates scores."""

from __future__ import annotations

from abc import ABC, abstractmethod
from fnmatch import fnmatchcase
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from runners.api._backbone import Backbone
from runners.api._missing import Missing
from runners.api._roles import Role
from runners.api._task import Environment, TaskKinds, register_task_kinds


class TaskSpec(BaseModel):
    """A task as the benchmark loaded it, gold included. Never handed to a method."""

    task_id: str
    payload: dict[str, Any] = Field(default_factory=dict)


class EpisodeRow(TypedDict, total=False):
    """An episode record as `Benchmark.metrics` reads it from `episodes.jsonl` (the fields of
    `runners.episode.EpisodeRecord` that benchmarks use)."""

    task_id: str
    trial: int
    status: str
    scores: dict[str, Any]
    requests: list[dict[str, Any]]
    usage_by_role: dict[str, dict[str, Any]]


Metrics = dict[str, float | None]
"""Headline metrics of a benchmark (in percent where the paper uses percent); None = undefined."""

MetricKind = Literal["rate", "count", "tokens", "cost", "other"]
"""How the tables treat a metric: `rate` (a percentage: a 95% task-bootstrap interval, Δ in pp
with the paired interval and the exact sign test), `count` (a whole number, absolute Δ),
`tokens` and `cost` (totals: Δ in relative %), `other` (a number with an absolute Δ, e.g. a
slope)."""


class MetricSpec(BaseModel):
    """One metric a benchmark reports, declared on the class (`Benchmark.metric_specs`): the
    analysis layer reads these instead of knowing metric names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="the key in `Benchmark.metrics`' result; a `*` declares a family (`Acc_*`, `pass^*`)")
    kind: MetricKind = "rate"
    higher_is_better: bool = Field(
        True, description="direction: which side of a Δ and of a per-task sign test is a win"
    )
    label: str = Field("", description="display name (default: the name)")
    table: bool = Field(False, description="a column of the wide table (else only in metrics.csv and the report)")
    paper: str | None = Field(
        None, description="the metric's name in the papers' tables (runners/reference/*.csv), if it differs"
    )
    curve: str | None = Field(
        None,
        description="a family whose members end in a number (Acc_1, Acc_2, …): drawn over that "
        "number, one line per cell, with this x-axis label (the report and --plots)",
    )

    def matches(self, metric: str) -> bool:
        return fnmatchcase(metric, self.name) if "*" in self.name else metric == self.name

    @property
    def display(self) -> str:
        return self.label or self.name


def find_spec(specs: "tuple[MetricSpec, ...] | list[MetricSpec]", metric: str) -> MetricSpec | None:
    """The declaration of `metric` among `specs` (an exact name before a family), or None."""
    exact = next((s for s in specs if s.name == metric), None)
    return exact or next((s for s in specs if s.matches(metric)), None)


class EpisodeContext(BaseModel):
    """What an environment gets besides its task: backbones for the roles it hosts (judge,
    user_sim), and the trial/seed."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    trial: int = 0
    seed: int = 0
    backbones: dict[Role, Backbone] = Field(default_factory=dict, description="role -> Backbone")

    def backbone(self, role: Role) -> Backbone:
        try:
            return self.backbones[role]
        except KeyError:
            raise KeyError(
                f"no backbone configured for role '{role}'; set `roles.{role}` in the backbone config"
            ) from None


class BenchmarkParams(BaseModel):
    """Base of every benchmark's `Params`: a key the benchmark does not declare is an error.
    `limit` (first N tasks) is set by `runner.limit` too."""

    model_config = ConfigDict(extra="forbid")

    limit: int | None = Field(None, ge=1, description="run only the first N tasks")


def params_model(name: str, defaults: dict[str, Any], **fields: Any) -> type[BenchmarkParams]:
    """A `Params` model from a defaults table (each key typed by its default's type; `dict`/`list`
    defaults become `dict[str, Any]`/`list[Any]`) plus explicit `fields` (name=(type, default))."""
    spec: dict[str, Any] = {}
    for k, v in defaults.items():
        t: Any = {dict: dict[str, Any], list: list[Any]}.get(type(v), type(v)) if v is not None else Any  # type: ignore[call-overload]  # dict[str, Any] is a GenericAlias, not a type
        spec[k] = (t, Field(default_factory=lambda v=v: v.copy()) if isinstance(v, (dict, list)) else v)
    spec.update(fields)
    return create_model(name, __base__=BenchmarkParams, **spec)


def check_params(bench: str, model: type[BenchmarkParams], params: dict[str, Any]) -> BenchmarkParams:
    """`params` validated by `model`, or a ValueError naming the bad keys and the valid ones."""
    try:
        return model.model_validate(params)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"])
            lines.append(f"unknown param '{loc}'" if err["type"] == "extra_forbidden" else f"{loc}: {err['msg']}")
        raise ValueError(
            f"benchmark '{bench}': " + "; ".join(lines) + f" (valid keys: {', '.join(model.model_fields)})"
        ) from None


class Benchmark(ABC):
    """A benchmark split: loads tasks, builds environments, aggregates metrics. `Params` declares
    every key `benchmark.params` may set (validated with the rest of the config, before any work);
    `self.params` holds the validated values, defaults filled in, plus `name`."""

    name: str = "benchmark"
    roles: tuple[Role, ...] = ()  # roles its environments call (e.g. ("judge",))
    Params: ClassVar[type[BenchmarkParams]] = BenchmarkParams
    task_kinds: ClassVar[TaskKinds] = {}
    """The `TaskView.kind` values this benchmark's tasks have, each with what such a task is
    (declared with `register_task_kinds` when the class is defined: methods' `kind_overrides` may
    key settings by them); methods record in the manifest only the texts they may send on these
    kinds. Empty = not declared (a method then records the texts of every kind)."""
    metric_specs: ClassVar[tuple[MetricSpec, ...]] = ()
    """Every metric `metrics` returns: kind, direction, display name, whether it is a table column
    (in order). A metric left out is shown in metrics.csv as `other`, never in the wide table."""
    outcome: ClassVar[str] = "success"
    """The key of `score_task`'s scores that is an episode's outcome (bool or a number in [0, 1]):
    the report's per-episode success and the success-vs-tokens plot read it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "task_kinds" in cls.__dict__:  # declared here, not inherited
            register_task_kinds(cls.task_kinds, f"{cls.__module__}.{cls.__qualname__}")

    def __init__(self, *, name: str | None = None, **params: Any) -> None:
        self.name = name or self.name
        self.typed_params = check_params(self.name, self.Params, params)
        self.params: dict[str, Any] = {"name": self.name, **self.typed_params.model_dump()}

    @abstractmethod
    def load_tasks(self) -> Sequence[TaskSpec]:
        """Every task of the split (after its filters and `limit`), in order: a list, or for a
        large data set a sequence that reads a task when it is indexed (`runners.api.JsonlTasks`
        for a JSONL file: the sweep then holds ids and offsets, not the tasks' text). Bad data
        raises here, before any work, with a message naming the fix."""

    @abstractmethod
    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment: ...

    @abstractmethod
    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        """Aggregate scores of finished episodes (their `scores` dicts plus metadata) into
        the benchmark's headline metrics, in percent where the paper uses percent."""

    def notes(self) -> dict[str, Any]:
        """Facts to record in the run manifest (reductions, data sources, checksums)."""
        return {}

    @classmethod
    def metric_spec(cls, metric: str) -> MetricSpec | None:
        """The declaration of `metric` (exact name first, then a family), or None."""
        return find_spec(cls.metric_specs, metric)

    def missing(self) -> list[Missing]:
        """What this benchmark, with its params, needs and cannot find here (an optional extra,
        a database) that `load_tasks` would not notice: checked for every cell before any work,
        so one message lists every missing piece with its fix. Cheap: no download, no loading.
        Default: nothing (a `load_tasks` failure is reported the same way)."""
        return []
