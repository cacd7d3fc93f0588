"""LOCA-Bench as a harness Benchmark (docs/pos-benchmarks.md §1): cases from the task-config files of
the chosen lengths, one LocaEnv per case in a fresh task directory, binary success pooled over
all cases (PoS Table 1, 525 cases) and per length (PoS Figure 4)."""

from __future__ import annotations

import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

from benchmarks.loca.configs import LENGTHS, load_cases, resolve_root
from benchmarks.loca.env import DEFAULTS, LocaEnv
from benchmarks.loca.interface import LocaSetupError
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


def percent(values: list[int | float | bool]) -> float:
    return 100.0 * sum(float(v) for v in values) / len(values) if values else 0.0


class Loca(Benchmark):
    task_kinds = {"loca": "LOCA-Bench long-context tool use"}
    roles: tuple[Role, ...] = ()
    metric_specs = (
        MetricSpec(name="task_success", table=True),
        MetricSpec(name="success_*"),  # per context length (PoS Fig. 4)
        MetricSpec(name="n", kind="count"),
    )
    Params = params_model(
        "LocaParams",
        DEFAULTS,
        data_dir=(str | None, None),
        lengths=(list[str | int] | None, None),
        families=(list[str] | None, None),
        seeds=(list[int] | None, None),
        workspace_root=(str | None, None),
    )

    def __init__(
        self,
        *,
        name: str = "loca",
        data_dir: str | None = None,
        lengths: list[str] | None = None,
        families: list[str] | None = None,
        seeds: list[int] | None = None,
        limit: int | None = None,
        workspace_root: str | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            name=name,
            data_dir=data_dir,
            lengths=lengths,
            families=families,
            seeds=seeds,
            limit=limit,
            workspace_root=workspace_root,
            **settings,
        )
        self.name, self.data_dir, self.limit = name, data_dir, limit
        self.lengths = [str(x) for x in lengths] if lengths else list(LENGTHS)
        self.families = set(families) if families else None
        self.seeds = {int(s) for s in seeds} if seeds else None
        self.workspace_root = workspace_root
        self.settings = {**DEFAULTS, **settings}
        self._prov: dict[str, Any] = {}

    def missing(self) -> list:
        """Real LOCA cases run in upstream's GEM environments (the LOCA extra); the fixture does not."""
        from benchmarks.loca.configs import INSTALL_HINT
        from runners.api import missing_modules

        if self.data_dir == "fixtures":
            return []
        return missing_modules(
            ("gem",), "benchmark loca needs LOCA-Bench's GEM environments (the LOCA extra)", INSTALL_HINT
        )

    def load_tasks(self) -> list[TaskSpec]:
        root, source = resolve_root(self.data_dir)
        cases = load_cases(root, self.lengths)
        if self.families:
            cases = [c for c in cases if c["config"]["name"] in self.families]
        if self.seeds:
            cases = [c for c in cases if c["config"]["env_params"]["seed"] in self.seeds]
        if not cases:
            raise LocaSetupError(
                f"no LOCA cases left after filtering (lengths={self.lengths}, families={self.families}, "
                f"seeds={self.seeds}); check the filters against {root}/task-configs"
            )
        if self.limit:
            cases = cases[: self.limit]
        self._prov = {
            "source": source,
            "cases": len(cases),
            "lengths": self.lengths,
            "synthetic": self.data_dir == "fixtures",
        }
        return [TaskSpec(task_id=c["case_id"], payload=c) for c in cases]

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        # harness choice: a unique task dir per episode (cells may run the same case at once); observations
        # name only workspace-relative paths so prompts stay identical across runs (response cache)
        base = (
            Path(self.workspace_root).expanduser()
            if self.workspace_root
            else Path(tempfile.gettempdir()) / "loca_tasks"
        )
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "__", task.task_id)
        task_dir = base / f"{slug}__trial{ctx.trial}__{uuid.uuid4().hex[:8]}"
        return LocaEnv(task, ctx, {"name": self.name, **self.settings}, task_dir)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        scores = [e["scores"] for e in episodes]
        out: Metrics = {"task_success": percent([s["success"] for s in scores])}
        for length in LENGTHS:  # PoS Figure 4: success per context length
            group = [s["success"] for s in scores if s.get("length") == length]
            if group:
                out[f"success_{length}"] = percent(group)
        out["n"] = float(len(scores))
        return out

    def notes(self) -> dict[str, Any]:
        from benchmarks.loca.capabilities import capability_table
        from runners.upstream import TextSources

        sources = TextSources()
        capability_table(sources)
        return {
            "data": self._prov,
            "settings": self.settings,
            "text_sources": sources.as_manifest(),
            "license": "LOCA-Bench (hkust-nlp/LOCA-bench) is MIT, built on GEM (Apache-2.0); nothing of it is shipped",
        }
