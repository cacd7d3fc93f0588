"""Upstream LOCA/GEM environment behind the internal interface (docs/pos-benchmarks.md §1.4 Reset/Step).

Needs the optional LOCA extra (see `configs.INSTALL_HINT`); everything GEM is imported lazily.
Reset: built with upstream PoS's arguments (benchmarks/adapter.py `_LOCABench`): the stdio server
configs from GEM's `build_server_config(server_type, params, server_name)` with the workspaces
added to the params and PATH / npm cache / LOCA_QUIET / PYTHONUNBUFFERED in each server's env,
`MCPTool(..., validate_on_init=False, fix_schema_for_openai=False)`, `ToolEnvWrapperOpenAI`.
Not run here against real GEM/LOCA (neither is installable offline); checked against the
project's stand-in `gem` package (tests/loca/fake_gem) with upstream's import paths and
signatures. Step: one OpenAI tool call → `step_openai`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.loca.configs import INSTALL_HINT
from benchmarks.loca.interface import LocaSetupError, LocaToolEnv, ToolStep


def mcp_process_path() -> str:
    """PATH for MCP server children, as upstream: this Python's bin folder, ~/.local/bin, then $PATH."""
    entries = [str(Path(sys.executable).resolve().parent)]
    user_bin = Path.home() / ".local" / "bin"
    if user_bin.is_dir():
        entries.append(str(user_bin))
    entries += [e for e in os.environ.get("PATH", "").split(os.pathsep) if e]
    return os.pathsep.join(dict.fromkeys(entries))


def default_npm_cache() -> Path:
    """Upstream's per-user npm cache for `npx` servers."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pos" / "npm"


def mcp_config(
    servers: dict[str, dict[str, Any]],
    task_workspace: Path,
    agent_workspace: Path,
    build_server_config: Any,
    npm_cache: Path | None = None,
) -> dict[str, Any]:
    """`{"mcpServers": ...}` as upstream's `_LOCABench._mcp_config` builds it: every server's params
    also carry `task_workspace` / `agent_workspace`; every stdio definition gets PATH, an npm cache
    for `npx`, LOCA_QUIET and PYTHONUNBUFFERED in its env."""
    out: dict[str, Any] = {}
    for name, cfg in servers.items():
        params = {**cfg["params"], "task_workspace": str(task_workspace), "agent_workspace": str(agent_workspace)}
        server = build_server_config(server_type=cfg["type"], params=params, server_name=name)
        for definition in server.values():
            env = dict(definition.get("env", {}))
            env["PATH"] = mcp_process_path()
            if Path(str(definition.get("command", ""))).name == "npx":
                cache = (npm_cache or default_npm_cache()).expanduser().resolve()
                cache.mkdir(parents=True, exist_ok=True)
                env["npm_config_cache"] = str(cache)
            env.setdefault("LOCA_QUIET", os.environ.get("LOCA_QUIET", "1"))
            env.setdefault("PYTHONUNBUFFERED", "1")
            definition["env"] = env
        out.update(server)
    return {"mcpServers": out}


class GemToolEnv(LocaToolEnv):
    """Built with upstream's arguments (`_LOCABench._start_environment`): `env_class(**env_params)`
    with `task_dir` defaulting to the task workspace, `MCPTool(config, validate_on_init=False,
    execution_timeout=..., fix_schema_for_openai=False)`, `ToolEnvWrapperOpenAI(env, tools=[tool],
    max_tool_uses=...)`."""

    def __init__(
        self,
        env_cls: type,
        env_params: dict[str, Any],
        servers: dict[str, dict[str, Any]],
        task_dir: Path,
        *,
        max_tool_uses: int,
        tool_timeout_s: float,
        npm_cache: Path | None = None,
    ) -> None:
        try:
            from gem.tools.mcp_server.config_loader import build_server_config
            from gem.tools.mcp_tool import MCPTool
            from gem.tools.tool_env_wrapper import ToolEnvWrapperOpenAI
        except ImportError as e:
            raise LocaSetupError(f"LOCA/GEM is not importable ({e}). {INSTALL_HINT}") from e
        self.task_dir = Path(task_dir).resolve()
        agent_ws = self.task_dir / "agent_workspace"
        for d in (self.task_dir / "local_db", agent_ws):
            d.mkdir(parents=True, exist_ok=True)
        params = dict(env_params)
        params.setdefault("task_dir", str(self.task_dir))
        env = env_cls(**params)
        self.config = mcp_config(servers, self.task_dir, agent_ws, build_server_config, npm_cache)
        tool = MCPTool(
            self.config, validate_on_init=False, execution_timeout=float(tool_timeout_s), fix_schema_for_openai=False
        )
        self.wrapper = ToolEnvWrapperOpenAI(env, tools=[tool], max_tool_uses=max_tool_uses)

    def reset(self) -> tuple[str, list[dict[str, Any]]]:
        _obs, _info, user_prompt, per_tool = self.wrapper.reset()
        functions: list[dict[str, Any]] = []
        for item in per_tool:  # MCPTool.get_tool_function() gives a list per tool object
            for f in item if isinstance(item, list) else [item]:
                functions.append(f if "function" in f else {"type": "function", "function": f})
        return str(user_prompt), functions

    def call_tool(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolStep:
        action = {
            "type": "tool",
            "data": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        }
        obs, reward, terminated, truncated, _info = self.wrapper.step_openai(action)
        if terminated:  # claim_done: the wrapper returns the tool's own text, not a message list
            return ToolStep(content=str(obs), done=True, reward=float(reward or 0.0))
        try:
            msgs = json.loads(obs)
            content = "\n".join(str(m.get("content", "")) for m in msgs) if isinstance(msgs, list) else str(obs)
        except (TypeError, json.JSONDecodeError):
            content = str(obs)
        return ToolStep(content=content)

    def agent_workspace(self) -> Path | None:
        return self.task_dir / "agent_workspace"

    def close(self) -> None:
        for tool in getattr(self.wrapper, "tools", []):
            close = getattr(tool, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # best effort: servers are child processes
                    pass
