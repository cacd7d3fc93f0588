"""Dollar cost of model calls from per-million-token prices in the backbone config.

A backbone config may carry `prices: {input: <USD>, cached_input: <USD>, output: <USD>}` per
million tokens (the provider's list prices; `cached_input` defaults to `input` when the provider
has no prompt-cache discount). Cost of one call = uncached input × input + cached input ×
cached_input + output (reasoning included) × output. Without prices no cost is shown.

Two numbers, on purpose different:
- tables show the **list-price cost of the cell's episodes** (every call priced, response-cache
  hits included), which is what the method costs and is comparable between cells;
- `runner.budget_usd` counts what the sweep **actually spends**: calls served from the response
  cache cost nothing.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Prices(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(ge=0, description="uncached input (prompt) tokens")
    cached_input: float | None = Field(
        None, ge=0, description="prompt tokens served from the provider's cache; default = input"
    )
    output: float = Field(ge=0, description="output tokens, reasoning included")

    @model_validator(mode="after")
    def _cached_default(self) -> "Prices":
        if self.cached_input is None:
            self.cached_input = self.input
        return self


def usd(usage: Any, prices: Prices | Mapping[str, Any] | None) -> float | None:
    """Cost of `usage` (a Usage or its dict) at `prices`; None without prices."""
    if prices is None:
        return None
    p = prices if isinstance(prices, Prices) else Prices.model_validate(prices)
    get = (
        (lambda k: int(usage.get(k, 0) or 0))
        if isinstance(usage, Mapping)
        else (lambda k: int(getattr(usage, k, 0) or 0))
    )
    prompt, cached, completion = get("prompt_tokens"), get("cached_prompt_tokens"), get("completion_tokens")
    cached = min(cached, prompt)
    return ((prompt - cached) * p.input + cached * (p.cached_input or 0.0) + completion * p.output) / 1e6


PRICED_ROLES = ("judge", "user_sim", "tool")
"""Roles a config can put on their own backbone (runners.config.ROLE_NAMES); every other role runs
on the agent's backbone and is priced at its rates."""


def role_prices(config: Any) -> dict[str, Any]:
    """role → the prices of the backbone that serves it: the one pricing rule of the live budget
    (runners/run.py) and of the tables (runners/analysis/cells.py: cell_usd). `config` is a cell's config:
    a `CellConfig` or its dict (a manifest's `config`). `judge`, `user_sim` and `tool` (e.g.
    MemoryArena's `reasoning` tool on gpt-5-mini) use their own backbone's prices when `roles`
    names one, else the agent's; `"*"` is every other role (the agent's)."""
    if hasattr(config, "model_dump"):
        config = config.model_dump(mode="json", by_alias=True)
    agent = (config.get("backbone") or {}).get("prices")
    roles = config.get("roles") or {}
    out: dict[str, Any] = {}
    for role in PRICED_ROLES:
        b = roles.get(role)
        out[role] = b.get("prices") if isinstance(b, Mapping) else agent
    out["*"] = agent
    return out


def prices_for(role: str, prices_by_role: Mapping[str, Any]) -> Any:
    """The prices a call of `role` is charged at (`role_prices`' table)."""
    return prices_by_role.get(role, prices_by_role.get("*"))


def call_usd(role: str, usage: Any, prices_by_role: Mapping[str, Any]) -> float | None:
    """List-price cost of one call of `role` (None when its backbone has no prices)."""
    return usd(usage, prices_for(role, prices_by_role))


def episode_usd(record: Mapping[str, Any], prices_by_role: Mapping[str, Any]) -> float | None:
    """List-price cost of one episode record (`usage_by_role`); None if no role has prices."""
    total, priced = 0.0, False
    for role, u in (record.get("usage_by_role") or {}).items():
        c = call_usd(role, u, prices_by_role)
        if c is not None:
            total += c
            priced = True
    return total if priced else None
