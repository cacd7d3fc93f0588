"""`method=tau_native`: τ³'s own agent, run the way tau2-bench's `LLMAgent` runs it
(tau2 `src/tau2/agent/llm_agent.py`), as the calibration baseline that makes τ numbers comparable
with the public leaderboard. Every other method keeps FlowState's B.3 prompt layout.

- System prompt: upstream's `SYSTEM_PROMPT` filled with `AGENT_INSTRUCTION` and the domain policy,
  read at run time from the pinned llm_agent.py (our own wording only when it is unavailable,
  recorded as paraphrase in the manifest's `method_notes`).
- Tools go through the API's `tools` field (the schemas the benchmark shows, i.e. upstream's), and
  the model's native `tool_calls` are the actions.
- The chat history is the message list upstream keeps: the greeting (the orchestrator's first
  agent message), then user messages, assistant messages (with `tool_calls`), one `tool` message
  per result.
"""

from __future__ import annotations

import json
from typing import Any

from runners.api import Backbone, Decision, Message, Method, Observation, Parsed, Protocol, Request, TaskView
from runners.upstream import TextSources, UpstreamFile

LLM_AGENT = UpstreamFile("tau2-bench", "src/tau2/agent/llm_agent.py")
# Our own wording, used (and recorded as paraphrase) only when the pinned llm_agent.py is unavailable.
INSTRUCTION = (
    "You are a customer service agent. Help the user by following the <policy> below. Each turn, either send "
    "the user a message or call a tool, not both. Be helpful, follow the policy, and produce valid JSON for tool "
    "arguments."
)
LAYOUT = "<instructions>\n{agent_instruction}\n</instructions>\n<policy>\n{domain_policy}\n</policy>"


def native_prompts(sources: TextSources) -> tuple[str, str]:
    """(system layout with {agent_instruction} and {domain_policy}, agent instruction)."""
    return (
        sources.string("system_prompt", LLM_AGENT, "SYSTEM_PROMPT", LAYOUT),
        sources.string("agent_instruction", LLM_AGENT, "AGENT_INSTRUCTION", INSTRUCTION),
    )


class NativeProtocol(Protocol):
    """Plain text is the message to the user; actions come as native tool calls, not text."""

    name = "native"

    def description(self) -> str:
        return ""

    def parse(self, text: str) -> Parsed:
        return Parsed(decision=Decision(message=text))

    def render(self, decision: Decision) -> str:
        return decision.message or ""


class TauNative(Method):
    protocol = NativeProtocol()

    def __init__(
        self, backbone: Backbone, *, sampling: dict[str, Any] | None = None, greeting: bool = True, **params: Any
    ) -> None:
        super().__init__(backbone, **params)
        self.sampling = dict(sampling or {})
        self.greeting = greeting
        self.sources = TextSources()
        self.layout, self.instruction = native_prompts(self.sources)
        self.history: list[Message] = []
        self._log: dict[str, Any] = {}

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: where the system prompt came from."""
        sources = TextSources()
        native_prompts(sources)
        return {"text_sources": sources.as_manifest()}

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        system = self.layout.format(agent_instruction=self.instruction, domain_policy=task.policy)
        self.history = [{"role": "system", "content": system}]
        if self.greeting and task.kind == "tau":  # upstream: the orchestrator's first agent message is in the history
            from benchmarks.tau.user_sim import GREETING

            self.history.append({"role": "assistant", "content": GREETING})
        self.tools = [t.openai_schema() for t in task.tools]

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if request.text:
            self.history.append({"role": "user", "content": request.text})

    async def step(self, observation: Observation) -> Decision:
        for r in observation.tool_results:
            self.history.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
        if observation.user_message is not None:
            self.history.append({"role": "user", "content": observation.user_message})
        sampling = {**self.sampling, **({"tools": self.tools} if self.tools else {})}
        c = await self.backbone.complete(list(self.history), role="agent", **sampling)
        msg: Message = {"role": "assistant", "content": c.text or None}
        if c.tool_calls:
            msg["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": json.dumps(t.arguments)}}
                for t in c.tool_calls
            ]
        self.history.append(msg)
        self._log = {"native_tool_calls": len(c.tool_calls), "finish_reason": c.finish_reason}
        if c.tool_calls:
            return Decision(tool_calls=list(c.tool_calls), message=c.text or None)
        return Decision(message=c.text)

    def step_log(self) -> dict[str, Any]:
        return self._log
