"""ALFWorld as a harness Benchmark: the sorted game list of a split (harness choice: one env per
game, sorted ids, instead of AlfredTWEnv's seeded shuffle — docs/alfworld.md §3.1), checked against
the manifest, one AlfworldEnv per game, success rate overall and per task type."""

from __future__ import annotations

from typing import Any, Literal

from benchmarks.alfworld import engine
from benchmarks.alfworld.data import load_games
from benchmarks.alfworld.env import DEFAULTS, AlfworldEnv
from benchmarks.alfworld.metrics import alfworld_metrics
from runners.api import (
    Benchmark,
    Environment,
    EpisodeContext,
    EpisodeRow,
    Metrics,
    MetricSpec,
    params_model,
    Role,
    TaskSpec,
)


class Alfworld(Benchmark):
    task_kinds = {"alfworld": "ALFWorld embodied household text game"}
    roles: tuple[Role, ...] = ()
    # per-type SR_<type> (as ReAct prints them) are in metrics.csv and the long table; PoS Table 1 calls SR task_success
    metric_specs = (
        MetricSpec(name="SR", table=True, paper="task_success"),
        MetricSpec(name="SR_*"),
        MetricSpec(name="n", kind="count"),
        MetricSpec(name="won", kind="count"),
    )
    Params = params_model(
        "AlfworldParams",
        DEFAULTS,
        data_dir=(str | None, None),
        split=(str, "valid_unseen"),
        task_types=(list[str] | None, None),
        verify=(Literal["auto", "strict", "off"], "auto"),
        manifest=(str | None, None),
    )

    def __init__(
        self,
        *,
        name: str = "alfworld",
        data_dir: str | None = None,
        split: str = "valid_unseen",
        task_types: list[str] | None = None,
        limit: int | None = None,
        verify: str = "auto",
        manifest: str | None = None,
        **params: Any,
    ) -> None:
        super().__init__(
            name=name,
            data_dir=data_dir,
            split=split,
            task_types=task_types,
            limit=limit,
            verify=verify,
            manifest=manifest,
            **params,
        )
        self.name, self.data_dir, self.split = name, data_dir, split
        self.task_types = list(task_types) if task_types else None
        self.limit, self.verify, self.manifest = limit, verify, manifest
        self.settings = {**DEFAULTS, **params}
        self._prov: dict[str, Any] = {}

    def missing(self) -> list:
        from runners.api import Missing

        if engine.available():
            return []
        return [
            Missing(
                what="benchmark alfworld needs the ALFWorld engine (packages alfworld and textworld, the `alfworld` "
                "extra), which is not installed",
                fix=engine.INSTALL_HINT,
            )
        ]

    def load_tasks(self) -> list[TaskSpec]:
        if not engine.available():
            raise RuntimeError(f"ALFWorld needs its engine: {engine.INSTALL_HINT}")
        games, self._prov = load_games(
            self.data_dir, split=self.split, task_types=self.task_types, verify_mode=self.verify, manifest=self.manifest
        )
        tasks = [
            TaskSpec(
                task_id=g.id,
                payload={
                    "path": str(g.path),
                    "root": self._prov["root"],
                    "task_type": g.task_type,
                    "task_key": g.task_key,
                    "sha256": g.sha256,
                },
            )
            for g in games
        ]
        return tasks[: self.limit] if self.limit else tasks

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return AlfworldEnv(task, ctx, {"name": self.name, **self.settings})

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        return alfworld_metrics(episodes)

    def notes(self) -> dict[str, Any]:
        return {"data": self._prov, "settings": self.settings}
