"""The simulated user (docs/tau-bench.md §3; upstream `src/tau2/user/user_simulator.py`): an LLM
(backbone role `user_sim`) prompted with the simulation guidelines and the task's scenario, seeing
the dialogue with roles flipped; plus the scripted user used by offline tests."""

from __future__ import annotations

import textwrap
from typing import Any

from runners.api import Backbone, Message

GREETING = "Hi! How can I help you today?"  # fixed first agent message, not a step (§3)
STOP, TRANSFER, OUT_OF_SCOPE = "###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"
STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)
SCENARIO_FIELDS = (
    ("domain", "Domain"),
    ("reason_for_call", "Reason for call"),
    ("known_info", "Known info"),
    ("unknown_info", "Unknown info"),
    ("task_instructions", "Task instructions"),
)


def is_user_stop(text: str | None) -> bool:
    return text is not None and bool(text) and any(t in text for t in STOP_TOKENS)


def scenario_text(user_scenario: dict[str, Any]) -> str:
    """The scenario block: optional `Persona:`, then `Instructions:` with one tab-indented header
    per non-null field and its value indented one more tab (§3)."""
    lines: list[str] = []
    if user_scenario.get("persona") is not None:
        lines += ["Persona:", textwrap.indent(str(user_scenario["persona"]), "\t")]
    instr = user_scenario.get("instructions")
    lines.append("Instructions:")
    if isinstance(instr, dict):
        for key, header in SCENARIO_FIELDS:
            value = instr.get(key)
            if value is None:
                continue
            if key == "domain":
                lines.append(f"\tDomain: {value}")
            else:
                lines += [f"\t{header}:", textwrap.indent(str(value), "\t\t")]
    elif instr is not None:
        lines.append(textwrap.indent(str(instr), "\t"))
    return "\n".join(lines)


def system_prompt(guidelines: str, user_scenario: dict[str, Any]) -> str:
    return f"{guidelines}\n\n<scenario>\n{scenario_text(user_scenario)}\n</scenario>"


def user_view(system: str, trajectory: list[dict[str, Any]]) -> list[Message]:
    """The user LLM's messages: roles flipped (agent text → `user`, own messages → `assistant`);
    agent tool calls, text attached to them, and tool results are not shown (§3)."""
    out: list[Message] = [{"role": "system", "content": system}]
    for m in trajectory:
        if m["role"] == "assistant" and not m.get("tool_calls") and m.get("content"):
            out.append({"role": "user", "content": m["content"]})
        elif m["role"] == "user":
            out.append({"role": "assistant", "content": m["content"]})
    return out


async def generate(
    backbone: Backbone, messages: list[Message], *, attempts: int = 3, sampling: dict[str, Any] | None = None
) -> str | None:
    """One user turn. Empty replies are re-sampled (`attempt` changes the cache key); None after
    `attempts` empty replies (→ termination `user_error`, harness choice). Endpoint failures
    propagate as BackboneError (infrastructure error)."""
    for attempt in range(attempts):
        c = await backbone.complete(messages, role="user_sim", attempt=attempt, **(sampling or {}))
        if c.text and c.text.strip():
            return c.text
    return None


class ScriptedUser:
    """Deterministic user for offline runs: states the scenario first, confirms while the agent
    works, and stops once the agent has answered after finishing its reference actions."""

    def __init__(self, user_scenario: dict[str, Any]) -> None:
        self.instr = user_scenario.get("instructions") or {}

    def opening(self) -> str:
        if isinstance(self.instr, dict):
            parts = [self.instr.get("reason_for_call"), self.instr.get("known_info")]
            return " ".join(p.strip() for p in parts if p)
        return str(self.instr)

    def reply(self, user_turns: int, agent_done: bool) -> str:
        if user_turns == 0:
            return self.opening()
        if agent_done:
            return f"Thank you, that is all. {STOP}"
        return "Yes, please go ahead."
