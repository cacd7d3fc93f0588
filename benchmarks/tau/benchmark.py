"""τ³-bench Airline / Retail as a harness `Benchmark` (docs/tau-bench.md; FlowState §10, §11.2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from benchmarks.tau.data import DOMAINS, DataError, DomainData, load_domain
from benchmarks.tau.env import TauEnv
from benchmarks.tau.judge import judge_prompts
from benchmarks.tau.metrics import aggregate
from benchmarks.tau.upstream_tools import domain_tool_specs
from runners.api import (
    Benchmark,
    BenchmarkParams,
    Environment,
    EpisodeContext,
    EpisodeRow,
    Metrics,
    MetricSpec,
    TaskSpec,
    ToolSpec,
)
from runners.upstream import TextSources


class TauParams(BenchmarkParams):
    """conf/benchmark/tau_*.yaml documents each key."""

    domain: str
    split: str = "base"
    data_dir: str | None = None
    verify_checksums: bool = True
    task_ids: list[str | int] | None = None
    tool_schemas: Literal["upstream", "paraphrase"] = "upstream"
    tool_hints: bool = False
    max_steps: int = 200
    max_errors: int = 10
    requests: Literal["dialogue", "user_turn"] = "dialogue"
    agent_stop_token: bool = False
    user_sampling: dict[str, Any] | None = None
    judge_sampling: dict[str, Any] | None = None
    user_attempts: int = Field(3, ge=1)
    empty_user_reply: Literal["infra_error", "user_error"] = "infra_error"
    judge_attempts: int = Field(3, ge=1)
    count_infra_errors_as_failures: bool = False
    action_acc_per_task_mean: bool = False


class TauBenchmark(Benchmark):
    task_kinds = {"tau": "τ³-bench customer service: tools + a simulated user under a domain policy"}
    roles = ("user_sim", "judge")
    metric_specs = (
        MetricSpec(name="Pass1", table=True),
        MetricSpec(name="DB", table=True),
        MetricSpec(name="ActionAcc", table=True),
        MetricSpec(name="pass^1"),  # = Pass1
        MetricSpec(name="pass^*", table=True, label="pass^k"),  # k = 2..trials: τ-bench's reliability columns
        MetricSpec(name="avg_reward", kind="other"),
        MetricSpec(name="episodes", kind="count"),
    )
    Params = TauParams

    def __init__(
        self,
        *,
        name: str,
        domain: str,
        split: str = "base",
        data_dir: str | None = None,
        verify_checksums: bool = True,
        limit: int | None = None,
        task_ids: list[str] | None = None,
        **params: Any,
    ) -> None:
        if domain not in DOMAINS:
            raise DataError(f"unknown τ³ domain '{domain}'; available: {', '.join(DOMAINS)}")
        super().__init__(
            name=name,
            domain=domain,
            split=split,
            data_dir=data_dir,
            verify_checksums=verify_checksums,
            limit=limit,
            task_ids=task_ids,
            **params,
        )
        self.name, self.domain, self.split = name, domain, split
        self.data_dir, self.verify, self.limit, self.task_ids = data_dir, verify_checksums, limit, task_ids
        self.sources = TextSources()
        if domain in ("retail", "airline"):
            from benchmarks.tau import errors

            errors.record(domain, self.sources)  # the tools' error texts (benchmarks/tau/errors.py)
        self._tools: list[ToolSpec] | None = None

    def tool_specs(self) -> list[ToolSpec]:
        """The tool list every episode shows the agent (upstream's schemas, recorded in `sources`)."""
        if self._tools is None:
            self._tools = domain_tool_specs(
                self.domain, self.sources, hints=self.params["tool_hints"], source=self.params["tool_schemas"]
            )
        return self._tools

    def data(self) -> DomainData:
        return load_domain(self.domain, self.data_dir, self.verify)

    def load_tasks(self) -> list[TaskSpec]:
        tasks = self.data().split(self.split)
        if self.task_ids is not None:
            wanted = [str(t) for t in self.task_ids]
            known = {t["id"] for t in tasks}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                raise DataError(f"task_ids {unknown} are not in the {self.domain} '{self.split}' split")
            tasks = [t for t in tasks if t["id"] in wanted]
        specs = [TaskSpec(task_id=f"{self.domain}-{t['id']}", payload=t) for t in tasks]
        return specs[: self.limit] if self.limit else specs

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return TauEnv(self.data(), task, ctx, self.params, tools=self.tool_specs(), sources=self.sources)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        return aggregate(
            episodes,
            count_infra_as_failures=self.params["count_infra_errors_as_failures"],
            action_per_task_mean=self.params["action_acc_per_task_mean"],
        )

    def notes(self) -> dict[str, Any]:
        d = self.data()
        self.tool_specs()
        judge_prompts(self.sources)
        return {
            "data": d.provenance(),
            "domain": self.domain,
            "split": self.split,
            "text_sources": self.sources.as_manifest(),
            "flags": ["retail task 105 is practically unpassable (gold DB unchanged, NL assertion wants an exchange)"]
            if self.domain == "retail"
            else [],
        }
