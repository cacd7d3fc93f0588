"""Per-benchmark overrides of method settings: one method YAML serves every benchmark, and
`benchmark_overrides` ({fnmatch pattern on TaskView.benchmark: partial settings}) patches it, in
YAML order, with nested mappings merged key by key (PoS and its baselines use this)."""
from __future__ import annotations

import fnmatch
from typing import Any

from pydantic import BaseModel, Field


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in patch.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class BenchmarkOverrides(BaseModel):
    """Mixin for a settings model: adds `benchmark_overrides` and `for_benchmark`."""

    benchmark_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def for_benchmark(self, benchmark: str):
        """This config with every matching override merged in (in YAML order)."""
        data = self.model_dump()
        for pattern, patch in self.benchmark_overrides.items():
            if fnmatch.fnmatch(benchmark, pattern):
                data = deep_merge(data, patch)
        return type(self)(**data)
