"""Per-kind overrides of method settings: one method YAML serves every benchmark, and
`kind_overrides` ({TaskView.kind: partial settings}) patches it for the kind of task the benchmark
says it is (never by matching benchmark names), nested mappings merged key by key. The kinds are
those the benchmarks declare (`Benchmark.task_kinds`); the runner checks the keys against every
configured benchmark's before any work (runners.prepare.probe_method), so a misspelt kind is an
error, not a setting silently never applied (PoS and its baselines use this)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in patch.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class KindOverrides(BaseModel):
    """Mixin for a settings model: adds `kind_overrides` and `for_kind`."""

    kind_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def for_kind(self, kind: str) -> Self:
        """This config with the override of `kind` (if any) merged in."""
        patch = self.kind_overrides.get(kind)
        return type(self)(**deep_merge(self.model_dump(), patch)) if patch else self
