"""The benchmark side: tasks with their gold, the per-episode context, and the `Benchmark` that
loads tasks, builds environments and aggregates scores."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from runners.api._backbone import Backbone
from runners.api._roles import Role
from runners.api._task import Environment

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
            raise KeyError(f"no backbone configured for role '{role}'; set `roles.{role}` in the backbone config") from None


class Benchmark(ABC):
    """A benchmark split: loads tasks, builds environments, aggregates metrics."""

    name: str = "benchmark"
    roles: tuple[Role, ...] = ()  # roles its environments call (e.g. ("judge",))

    def __init__(self, **params: Any) -> None:
        self.params = params

    @abstractmethod
    def load_tasks(self) -> list[TaskSpec]: ...

    @abstractmethod
    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment: ...

    @abstractmethod
    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        """Aggregate scores of finished episodes (their `scores` dicts plus metadata) into
        the benchmark's headline metrics, in percent where the paper uses percent."""

    def notes(self) -> dict[str, Any]:
        """Facts to record in the run manifest (reductions, data sources, checksums)."""
        return {}
