"""Per-kind overrides of method settings: one method YAML serves every benchmark, and
`kind_overrides` ({TaskView.kind: partial settings}) patches it for the kind of task the benchmark
says it is (never by matching benchmark names), nested mappings merged key by key. The kinds are
`runners.api.TASK_KINDS`; a key outside them is an error (PoS and its baselines use this)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, field_validator

from runners.api import TASK_KINDS


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in patch.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class KindOverrides(BaseModel):
    """Mixin for a settings model: adds `kind_overrides` and `for_kind`."""

    kind_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("kind_overrides")
    @classmethod
    def _known_kinds(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        unknown = sorted(set(v) - set(TASK_KINDS))
        if unknown:
            raise ValueError(f"kind_overrides: unknown task kind(s) {unknown}; kinds are {', '.join(TASK_KINDS)}")
        return v

    def for_kind(self, kind: str) -> Self:
        """This config with the override of `kind` (if any) merged in."""
        patch = self.kind_overrides.get(kind)
        return type(self)(**deep_merge(self.model_dump(), patch)) if patch else self
