"""Upstream LOCA/GEM environment behind the internal interface (pos-benchmarks.md §1.4 Reset/Step).

Needs the optional LOCA extra (see `configs.INSTALL_HINT`); everything GEM is imported lazily.
Reset: `env_class(**env_params, task_dir=...)` wrapped as `ToolEnvWrapperOpenAI(env,
tools=[MCPTool({"mcpServers": ...})], max_tool_uses=...)`; the stdio server configs come from
GEM's `ServerConfigLoader.build_stdio_config(type, params, name)` [inferred from `8cd474d`; not
run here: nothing of LOCA is available offline]. Step: one OpenAI tool call → `step_openai`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.loca.configs import INSTALL_HINT
from benchmarks.loca.interface import LocaSetupError, LocaToolEnv, ToolStep


class GemToolEnv(LocaToolEnv):
    def __init__(self, env_cls: type, env_params: dict[str, Any], servers: dict[str, dict[str, Any]], task_dir: Path,
                 *, max_tool_uses: int, tool_timeout_s: float) -> None:
        try:
            from gem.tools.mcp_server.config_loader import ServerConfigLoader
            from gem.tools.mcp_tool import MCPTool
            from gem.tools.tool_env_wrapper import ToolEnvWrapperOpenAI
        except ImportError as e:
            raise LocaSetupError(f"LOCA/GEM is not importable ({e}). {INSTALL_HINT}") from e
        self.task_dir = Path(task_dir)
        loader = ServerConfigLoader()
        mcp: dict[str, Any] = {}
        for name, cfg in servers.items():
            mcp.update(loader.build_stdio_config(cfg["type"], cfg["params"], server_name=name))
        env = env_cls(**env_params, task_dir=str(self.task_dir))
        tool = MCPTool({"mcpServers": mcp}, execution_timeout=tool_timeout_s)
        self.wrapper = ToolEnvWrapperOpenAI(env, tools=[tool], max_tool_uses=max_tool_uses)

    def reset(self) -> tuple[str, list[dict[str, Any]]]:
        _obs, _info, user_prompt, per_tool = self.wrapper.reset()
        functions: list[dict[str, Any]] = []
        for item in per_tool:  # MCPTool.get_tool_function() gives a list per tool object
            for f in item if isinstance(item, list) else [item]:
                functions.append(f if "function" in f else {"type": "function", "function": f})
        return str(user_prompt), functions

    def call_tool(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolStep:
        action = {"type": "tool", "data": [{"id": call_id, "type": "function",
                                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}
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
