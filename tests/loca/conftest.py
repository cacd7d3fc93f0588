"""Helpers for the LOCA adapter tests: fixture environments in a temp folder, driven directly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.loca.benchmark import Loca
from benchmarks.loca.synth import fixture_config
from runners.api import Decision, EpisodeContext, ToolCall


def make_env(tmp_path: Path, length: str = "8k", config: dict[str, Any] | None = None, **settings: Any):
    """A LocaEnv of the fixture (or of `config`, written as a §1.3 file) with its request served."""
    if config is None:
        bench = Loca(
            data_dir="fixtures", lengths=[length], workspace_root=str(tmp_path / "ws"), keep_workspaces=True, **settings
        )
    else:
        root = tmp_path / "data"
        (root / "task-configs").mkdir(parents=True, exist_ok=True)
        (root / "task-configs" / f"final_{length}_set_config.json").write_text(json.dumps({"configurations": [config]}))
        bench = Loca(
            data_dir=str(root), lengths=[length], workspace_root=str(tmp_path / "ws"), keep_workspaces=True, **settings
        )
    task = bench.load_tasks()[0]
    env = bench.make_env(task, EpisodeContext())
    asyncio.run(env.next_request())
    return env


def call(env, name: str, **arguments: Any):
    """One turn with one tool call; returns (reply, inner content of the tool message or None)."""
    reply = asyncio.run(env.act(Decision(tool_calls=[ToolCall(name=name, arguments=arguments, id=f"c{env.turn + 1}")])))
    res = reply.observation.tool_results
    msgs = json.loads(res[0].content) if res else []
    return reply, (msgs[0]["content"] if msgs else None)


def score(env) -> dict[str, Any]:
    return asyncio.run(env.score_task())


@pytest.fixture
def config_without_python():
    cfg = fixture_config(42, "256k")
    cfg["mcp_servers"]["python_execute"]["enabled"] = False
    return cfg
