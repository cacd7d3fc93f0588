"""The internal interface the LOCA adapter drives (docs/pos-benchmarks.md §1.4). Both the upstream GEM
environment (`upstream.GemToolEnv`) and the synthetic fixture (`synth.StockAlertLiteS2LEnv`)
implement it, so the adapter code (`env.LocaEnv`) is the same for both.

A tool call returns the upstream observation shape: the JSON string of a tool-message list
`[{"role": "tool", "tool_call_id", "content"}]`; `claim_done` also returns `done` and the reward."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# [inferred] what counts as an error-prefixed tool result (MCP servers answer "Error ..."; the GEM
# wrapper answers "[Tool execution failed: ..." and "Tool '<name>' not found").
ERROR_PREFIXES = ("error", "[tool execution failed", "tool '")


class LocaSetupError(RuntimeError):
    """A LOCA environment could not be built (missing extra, bad config, server without tools)."""


@dataclass
class ToolStep:
    """Result of one executed tool call. `content` is the tool message's content text."""

    content: str
    done: bool = False
    reward: float = 0.0


def is_error_text(content: str) -> bool:
    return content.lstrip().lower().startswith(ERROR_PREFIXES)


def tool_messages(call_id: str, content: str) -> str:
    """The upstream observation string for one tool result (§1.4 Step)."""
    return json.dumps([{"role": "tool", "tool_call_id": call_id, "content": content}], ensure_ascii=False)


class LocaToolEnv(ABC):
    """One LOCA task environment with its MCP tools, already bound to a task directory."""

    @abstractmethod
    def reset(self) -> tuple[str, list[dict[str, Any]]]:
        """(user_prompt, OpenAI function schemas `{"type": "function", "function": {...}}`)."""

    @abstractmethod
    def call_tool(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolStep:
        """Execute one known tool. May raise on broken input; the adapter turns that into an
        error observation. `claim_done_claim_done` runs the evaluator and returns done + reward."""

    def agent_workspace(self) -> Path | None:
        """The agent's workspace folder (artifacts and the output manifest live there)."""
        return None

    def reference_calls(self) -> list[tuple[str, dict[str, Any]]] | None:
        """A scripted solution as (tool, arguments) calls for the scripted backbone; None = none."""
        return None

    def close(self) -> None:
        return None
