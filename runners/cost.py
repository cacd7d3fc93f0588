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
    cached_input: float | None = Field(None, ge=0, description="prompt tokens served from the provider's cache; default = input")
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
    get = (lambda k: int(usage.get(k, 0) or 0)) if isinstance(usage, Mapping) else (lambda k: int(getattr(usage, k, 0) or 0))
    prompt, cached, completion = get("prompt_tokens"), get("cached_prompt_tokens"), get("completion_tokens")
    cached = min(cached, prompt)
    return ((prompt - cached) * p.input + cached * (p.cached_input or 0.0) + completion * p.output) / 1e6


def role_prices(config: Mapping[str, Any]) -> dict[str, Any]:
    """role → the prices of the backbone that serves it, from a cell's config dict: judge and
    user simulator use their own backbone when `roles` names one, else the agent's."""
    agent = (config.get("backbone") or {}).get("prices")
    roles = config.get("roles") or {}
    out: dict[str, Any] = {}
    for role in ("judge", "user_sim"):
        b = roles.get(role)
        out[role] = b.get("prices") if isinstance(b, Mapping) else agent
    out["*"] = agent
    return out


def episode_usd(record: Mapping[str, Any], prices_by_role: Mapping[str, Any]) -> float | None:
    """List-price cost of one episode record (`usage_by_role`); None if no role has prices."""
    total, priced = 0.0, False
    for role, u in (record.get("usage_by_role") or {}).items():
        c = usd(u, prices_by_role.get(role, prices_by_role.get("*")))
        if c is not None:
            total += c
            priced = True
    return total if priced else None
