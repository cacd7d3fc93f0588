"""ClinDiag as a harness Benchmark (docs/pos-benchmarks.md §3): cases in manifest order (PoS: 604 =
302 rare + 302 challenging), one ClinDiagEnv per case, diagnosis accuracy in percent (PoS
Table 1 metric; no submission = incorrect). `differential_hit` is logged, not headline."""

from __future__ import annotations

from typing import Any

from benchmarks.clindiag.data import (
    ClinDiagDataError,
    case_folders,
    load_case,
    resolve_cases_dir,
    upstream_case_folders,
)
from benchmarks.clindiag.env import DEFAULTS, ClinDiagEnv, check_settings
from benchmarks.rca100.score import percent
from benchmarks.clindiag.texts import clindiag_texts
from benchmarks import release_adapter
from benchmarks.clindiag.prompts import NOTICE
from kit import release_config
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
from runners.upstream import TextSources


class ClinDiag(Benchmark):
    task_kinds = {"clindiag": "ClinDiag multi-step clinical diagnosis with examinations"}
    roles: tuple[Role, ...] = (
        "user_sim",
        "judge",
    )  # provider (user_sim) and judge: Qwen3.7-Plus for every backbone in PoS
    metric_specs = (
        MetricSpec(name="diagnosis_accuracy", table=True),
        MetricSpec(name="differential_hit_rate"),
        MetricSpec(name="submission_rate"),
        MetricSpec(name="diagnosis_accuracy_*"),  # per subset
        MetricSpec(name="n", kind="count"),
    )
    outcome = "diagnosis_correct"
    Params = params_model(
        "ClinDiagParams",
        DEFAULTS,
        data_dir=(str | None, None),
        manifest=(str | None, None),
        case_ids=(list[str | int] | None, None),
        subsets=(list[str] | None, None),
    )

    def __init__(
        self,
        *,
        name: str = "clindiag",
        data_dir: str | None = None,
        manifest: str | None = None,
        case_ids: list[str] | None = None,
        subsets: list[str] | None = None,
        limit: int | None = None,
        **settings: Any,
    ) -> None:
        check_settings(settings)
        super().__init__(
            name=name, data_dir=data_dir, manifest=manifest, case_ids=case_ids, subsets=subsets, limit=limit, **settings
        )
        self.name, self.data_dir, self.manifest, self.limit = name, data_dir, manifest, limit
        self.case_ids = [str(c) for c in case_ids] if case_ids else None
        self.subsets = list(subsets) if subsets else None
        self.settings = {**DEFAULTS, **settings}
        self._prov: dict[str, Any] = {}
        self._manifest: dict[str, Any] = {}
        self.sources = TextSources()  # provider and judge texts: the PoS release's when pinned (texts.py)
        self.texts = clindiag_texts(self.sources)
        if self.settings["adapter"] == "release":
            release_adapter.first_observation("clindiag", self.sources, NOTICE)  # recorded
        if self.settings["request_settings"] == "release":  # the release's provider and judge model blocks
            for role in ("provider", "judge"):
                self.settings[f"{role}_sampling"] = release_config.request_settings(
                    "clindiag", "raw", role, self.sources, self.settings[f"{role}_sampling"]
                )

    def load_tasks(self) -> list[TaskSpec]:
        cases_dir, source = resolve_cases_dir(self.data_dir)
        manifest = self.manifest
        if manifest in (None, "upstream") and self.data_dir == "fixtures":
            manifest = "none"  # the fictional fixture is not part of upstream's case list
        if manifest in (None, "upstream"):
            folders, self._manifest = upstream_case_folders(cases_dir)
        elif manifest == "none":
            folders, self._manifest = case_folders(cases_dir), {"source": "none (every case folder, sorted)"}
        else:
            folders, self._manifest = case_folders(cases_dir, manifest), {"source": "local", "path": str(manifest)}
        payloads = [load_case(f, bool(self.settings["pos_section_match"])) for f in folders]
        if self.case_ids:
            known = {p["case_id"] for p in payloads} | {p["folder"] for p in payloads}
            unknown = sorted(set(self.case_ids) - known)
            if unknown:
                raise ClinDiagDataError(f"case_ids {unknown} are not under {cases_dir} ({len(payloads)} cases)")
            payloads = [p for p in payloads if p["case_id"] in self.case_ids or p["folder"] in self.case_ids]
        if self.subsets:
            payloads = [p for p in payloads if p["subset"] in self.subsets]
        if self.limit:
            payloads = payloads[: self.limit]
        self._prov = {
            "source": source,
            "cases": len(payloads),
            "fictional": self.data_dir == "fixtures",
            "subsets": sorted({p["subset"] for p in payloads}),
            "manifest": self._manifest,
        }
        return [TaskSpec(task_id=p["folder"], payload=p) for p in payloads]

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return ClinDiagEnv(task, ctx, {"name": self.name, **self.settings}, self.texts)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        scores = [e["scores"] for e in episodes]
        out: Metrics = {
            "diagnosis_accuracy": percent([s["diagnosis_correct"] for s in scores]),
            "differential_hit_rate": percent([s["differential_hit"] for s in scores]),
            "submission_rate": percent([s["submitted"] for s in scores]),
            "n": float(len(scores)),
        }
        for subset in sorted({s["subset"] for s in scores}):
            out[f"diagnosis_accuracy_{subset}"] = percent(
                [s["diagnosis_correct"] for s in scores if s["subset"] == subset]
            )
        return out

    def notes(self) -> dict[str, Any]:
        return {
            "data": self._prov,
            "settings": self.settings,
            "text_sources": self.sources.as_manifest(),
            "roles": {"user_sim": "information provider", "judge": "diagnosis judge"},
        }
