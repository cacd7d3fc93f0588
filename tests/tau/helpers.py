"""Shared helpers for the τ³ tests: the real data (skipped when absent) and trajectory builders."""
from __future__ import annotations

from typing import Any

from benchmarks.tau.data import DomainData, load_domain
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.replay import gold_actions
from benchmarks.tau.user_sim import GREETING, STOP
from tests.conftest import shared_path


def domain(name: str) -> DomainData:
    return load_domain(name, str(shared_path("tau2")))


def gold_trajectory(data: DomainData, task: dict[str, Any], final_message: str | None = None) -> list[dict[str, Any]]:
    """Gold calls with their real outputs (one assistant message per call), an optional final agent
    message, then a user stop (docs/tau-bench.md §8 'gold trajectory')."""
    tools = toolkit_for(data.domain)(data.fresh_db())
    traj: list[dict[str, Any]] = [{"role": "assistant", "content": GREETING, "tool_calls": None},
                                  {"role": "user", "content": "I need help."}]
    for i, a in enumerate(gold_actions(task)):
        call = {"id": f"c{i}", "name": a["name"], "arguments": a.get("arguments") or {}}
        content, error = tools.execute(call["name"], call["arguments"])
        traj.append({"role": "assistant", "content": None, "tool_calls": [call]})
        traj.append({"role": "tool", "id": call["id"], "name": call["name"], "content": content, "error": error})
    if final_message is not None:
        traj.append({"role": "assistant", "content": final_message, "tool_calls": None})
    traj.append({"role": "user", "content": f"Thanks. {STOP}"})
    return traj


def run(tools, name: str, **args: Any) -> str:
    """Execute one tool call that must succeed; its output text."""
    content, error = tools.execute(name, args)
    assert not error, content
    return content


def empty_trajectory() -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": GREETING, "tool_calls": None},
            {"role": "user", "content": f"Never mind. {STOP}"}]
