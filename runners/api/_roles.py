"""Call roles and the one definition of #Tok."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

Role = Literal["agent", "tool", "state", "memory", "sentinel", "user_sim", "judge"]
"""Who a model call is for. `agent`, `tool`, `state`, `memory`, `sentinel` are the method's own
calls; `user_sim` and `judge` are the benchmark's (a simulated user, an LLM grader)."""

METHOD_ROLES: frozenset[str] = frozenset({"agent", "tool", "state", "memory", "sentinel"})
BENCHMARK_ROLES: frozenset[str] = frozenset({"user_sim", "judge"})
assert METHOD_ROLES | BENCHMARK_ROLES == set(get_args(Role))


def _total(u: Any) -> int:
    if isinstance(u, Mapping):
        return int(u.get("prompt_tokens", 0)) + int(u.get("completion_tokens", 0))
    if isinstance(u, int):
        return u
    return int(u.prompt_tokens) + int(u.completion_tokens)


def method_tokens(by_role: Mapping[str, Any]) -> int:
    """#Tok: prompt + completion tokens of the method-side roles only (`METHOD_ROLES`); the judge
    and the user simulator are the benchmark's cost and are reported apart. `by_role` maps a role
    to a `Usage`, a usage dict as stored in `episodes.jsonl`, or an already summed int. A role
    outside `Role` is an error, so a misspelt role cannot silently leave #Tok."""
    unknown = set(by_role) - METHOD_ROLES - BENCHMARK_ROLES
    if unknown:
        raise ValueError(f"unknown call role(s) {sorted(unknown)}; roles are {', '.join(get_args(Role))}")
    return sum(_total(u) for r, u in by_role.items() if r in METHOD_ROLES)
