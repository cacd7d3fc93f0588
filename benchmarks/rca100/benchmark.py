"""RCA-100 as a harness Benchmark (docs/pos-benchmarks.md §2): manifest-ordered cases, one RcaEnv per
case, joint entity + fault-type accuracy in percent (PoS Table 1 metric, over 103 cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.rca100.data import RcaDataError, case_ids, load_case, resolve_root
from benchmarks.rca100.env import DEFAULTS, RcaEnv
from benchmarks import release_adapter
from benchmarks.rca100.prompts import NOTICE, policy
from benchmarks.rca100.schema import tool_specs
from runners.upstream import TextSources
from benchmarks.rca100.score import percent
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


class Rca100(Benchmark):
    task_kinds = {"rca": "RCA-100 root-cause analysis over telemetry tools"}
    roles: tuple[Role, ...] = ()
    metric_specs = (
        MetricSpec(name="joint_entity_type_accuracy", table=True),
        MetricSpec(name="entity_accuracy"),
        MetricSpec(name="type_accuracy"),
        MetricSpec(name="submission_rate"),
        MetricSpec(name="n", kind="count"),
    )
    Params = params_model(
        "Rca100Params",
        DEFAULTS,
        data_dir=(str | None, None),
        answer_key_dir=(str | None, None),
        manifest=(str | None, None),
        case_ids=(list[str | int] | None, None),
        max_actions_per_turn=(int | None, DEFAULTS["max_actions_per_turn"]),
    )

    def __init__(
        self,
        *,
        name: str = "rca100",
        data_dir: str | None = None,
        answer_key_dir: str | None = None,
        manifest: str | None = None,
        case_ids: list[str] | None = None,
        limit: int | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            name=name,
            data_dir=data_dir,
            answer_key_dir=answer_key_dir,
            manifest=manifest,
            case_ids=case_ids,
            limit=limit,
            **settings,
        )
        self.name, self.data_dir, self.answer_key_dir, self.manifest = name, data_dir, answer_key_dir, manifest
        self.case_ids = [str(c) for c in case_ids] if case_ids else None
        self.limit = limit
        self.settings = {**DEFAULTS, **settings}
        self._prov: dict[str, Any] = {}
        self.sources = TextSources()

    def load_tasks(self) -> list[TaskSpec]:
        root, source = resolve_root(self.data_dir)
        keys = Path(self.answer_key_dir).expanduser() if self.answer_key_dir else root / "answer_key"
        ids = case_ids(root, self.manifest)
        if self.case_ids:
            unknown = sorted(set(self.case_ids) - set(ids))
            if unknown:
                raise RcaDataError(f"case_ids {unknown} are not in the data set ({len(ids)} cases, e.g. {ids[:3]})")
            ids = [i for i in ids if i in set(self.case_ids)]
        if self.limit:
            ids = ids[: self.limit]
        tasks = [TaskSpec(task_id=cid, payload=load_case(root, cid, keys)) for cid in ids]
        s = self.settings
        policy(
            s["max_steps"], s["max_actions_per_turn"], s["observation_max_chars"], self.sources
        )  # records the text sources
        self.tools = tool_specs(self.sources, s["tool_texts"])  # the agent's tool schemas, recorded
        if release_adapter.check(s["adapter"]) == "release":
            release_adapter.first_observation("rca", self.sources, NOTICE)  # recorded
        self._prov = {
            "source": source,
            "cases": len(tasks),
            "answer_key_dir": str(keys),
            "synthetic": self.data_dir == "fixtures",
        }
        return tasks

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return RcaEnv(task, ctx, {"name": self.name, **self.settings}, getattr(self, "tools", None))

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        scores = [e["scores"] for e in episodes]
        return {
            "joint_entity_type_accuracy": percent([s["success"] for s in scores]),
            "entity_accuracy": percent([s["entity_correct"] for s in scores]),
            "type_accuracy": percent([s["type_correct"] for s in scores]),
            "submission_rate": percent([s["submitted"] for s in scores]),
            "n": float(len(scores)),
        }

    def notes(self) -> dict[str, Any]:
        return {
            "data": self._prov,
            "settings": self.settings,
            "text_sources": self.sources.as_manifest(),
            "license": "RCA-100 v1.1 is CC BY-NC-SA 4.0; no RCA-100 data or keys are shipped or stored in results",
        }
