"""The contracts every method, benchmark and backbone speaks.

Keep this module small: it is the one file a newcomer must read before adding a method or a
benchmark. Everything here is plain data (pydantic) or an abstract base class; no I/O.

Data flow of one episode (FlowState Algorithm 1 shape, generalised):

    env = benchmark.make_env(task, ctx)            # gold labels stay inside env
    method.begin_task(env.view())
    while (request := await env.next_request()):   # q_1..q_K
        method.begin_request(request)
        obs = Observation()                        # O_{k,1} = ∅
        for t in range(budget):
            decision = await method.step(obs)      # build context → model → parse
            reply = await env.act(decision)        # act → observe
            if reply.request_done: break
            obs = reply.observation
        outcome = await env.end_request()          # scores q_k, gives memory text
        await method.end_request(outcome)
    scores = await env.score_task()
"""
from __future__ import annotations

import contextvars
from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, Field

Message = dict[str, Any]
"""One OpenAI chat message: {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}."""

ROLES = ("agent", "tool", "state", "memory", "sentinel", "user_sim", "judge")
"""Call roles. `agent`, `tool`, `state`, `memory`, `sentinel` are the method's own calls
(counted in #Tok); `user_sim` and `judge` are the benchmark's and are reported apart."""
METHOD_ROLES = frozenset({"agent", "tool", "state", "memory", "sentinel"})


# ----------------------------------------------------------------------------- backbone side
class Usage(BaseModel):
    """Normalised token usage of one model call."""

    prompt_tokens: int = Field(0, description="input tokens, INCLUDING cached_prompt_tokens")
    cached_prompt_tokens: int = Field(0, description="part of prompt_tokens served from the provider's prompt cache")
    completion_tokens: int = Field(0, description="output tokens, INCLUDING reasoning_tokens")
    reasoning_tokens: int = Field(0, description="part of completion_tokens spent on hidden reasoning")
    source: Literal["api", "estimated"] = Field("api", description="api = reported by the endpoint; estimated = counted locally with an offline o200k tokenizer")

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        src = "api" if self.source == other.source == "api" else "estimated"
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            source=src,
        )


class RetryEvent(BaseModel):
    """One retried attempt of a model call (logged into the episode record)."""

    attempt: int
    error: str = Field(description="error class and short message, e.g. 'HTTP 429'")
    wait_s: float = Field(description="seconds slept before the next attempt")


class Completion(BaseModel):
    """What a backbone returns for one call."""

    text: str
    role: str
    model: str
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    raw_usage: dict[str, Any] | None = Field(None, description="usage object exactly as the endpoint sent it")
    cached: bool = Field(False, description="served from the harness response cache (no model call made)")
    retries: list[RetryEvent] = Field(default_factory=list)
    scripted: bool = Field(False, description="produced by the deterministic scripted backbone")
    latency_s: float = 0.0


class BackboneError(Exception):
    """A model call failed for a reason that is not the agent's fault (after retries)."""

    def __init__(self, message: str, *, fatal: bool = False, retries: list[RetryEvent] | None = None,
                 context_overflow: bool = False):
        super().__init__(message)
        self.fatal = fatal  # fatal = configuration problem (401, 404, quota): stop the sweep
        self.retries = retries or []
        # The prompt exceeds the model's context window: a method that can shorten its context
        # (Full Context drops its oldest steps, baselines.md §1) may catch this and retry.
        self.context_overflow = context_overflow


class Backbone(ABC):
    """A chat model. Every call names its role so tokens can be split by role."""

    name: str = "backbone"
    model: str = ""

    @abstractmethod
    async def complete(
        self,
        messages: list[Message],
        *,
        role: str,
        protocol: "Protocol | None" = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        """`protocol` lets the scripted backbone answer in the caller's format (real endpoints
        ignore it). `attempt` distinguishes deliberate re-samples of the same prompt in the
        response cache."""

    async def aclose(self) -> None:  # pragma: no cover - trivial default
        return None


# ----------------------------------------------------------------------------- decisions
class ToolSpec(BaseModel):
    """A tool offered to the agent (OpenAI function schema parts)."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    def openai_schema(self) -> dict[str, Any]:
        return {"type": "function", "function": self.model_dump()}


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str = ""


DROPPED_MESSAGE = "dropped_message"
"""`Decision.extras` key for assistant text a protocol dropped because the step also called tools:
never delivered to a user, but a benchmark may grade it (τ-bench COMMUNICATE reads such text)."""


class Decision(BaseModel):
    """What the agent decides in one step: environment actions, a user-facing message / final
    answer, or nothing (e.g. FlowState waiting for disclosed state). `extras` carries
    method-specific parts (a FlowState state delta, a ZipAct state) for logging and rendering."""

    tool_calls: list[ToolCall] = Field(default_factory=list)
    message: str | None = None
    extras: dict[str, Any] = Field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not self.tool_calls and self.message is None


class ProtocolError(BaseModel):
    """A typed, recoverable problem with model output. Never raised; always recorded."""

    kind: Literal["malformed", "missing_block", "bad_json", "bad_field", "empty", "violation", "rejected"]
    detail: str


class Parsed(BaseModel):
    """Result of `Protocol.parse`: a decision (possibly empty) plus any errors found."""

    decision: Decision = Field(default_factory=Decision)
    blocks: dict[str, Any] = Field(default_factory=dict, description="parsed JSON of each block")
    errors: list[ProtocolError] = Field(default_factory=list)
    repairs: list[dict[str, str]] = Field(default_factory=list, description="tolerances the reader applied (kit.reader.Repair: kind, where, detail)")
    thinking: list[str] = Field(default_factory=list, description="thinking text removed before parsing (recorded, never parsed)")

    @property
    def ok(self) -> bool:
        return not self.errors


class Protocol(ABC):
    """A method's output format. `parse` is total: it never raises."""

    name: str = "protocol"

    @abstractmethod
    def description(self) -> str:
        """The output-protocol text placed in the system prompt."""

    @abstractmethod
    def parse(self, text: str) -> Parsed: ...

    @abstractmethod
    def render(self, decision: Decision) -> str:
        """Text a perfect model would write for `decision` (scripted backbone, round-trip tests)."""


# ----------------------------------------------------------------------------- task side
class Request(BaseModel):
    """One request q_k of a task (a MemoryArena subtask; the single request of τ/ALFWorld)."""

    index: int = Field(description="0-based position in the task")
    request_id: str = Field(description="stable id, e.g. '<task_id>/q3'")
    text: str = Field(description="what the user asks; never contains gold labels")


class ToolResult(BaseModel):
    call_id: str
    name: str
    content: str
    error: bool = False


class Observation(BaseModel):
    """O_{k,t}: tool results of the previous step and/or a (simulated) user's message."""

    tool_results: list[ToolResult] = Field(default_factory=list)
    user_message: str | None = None
    note: str | None = Field(None, description="environment text that is neither (e.g. ALFWorld feedback)")

    @property
    def is_empty(self) -> bool:
        return not self.tool_results and self.user_message is None and self.note is None

    def as_text(self) -> str:
        parts = [f"[{r.call_id}] {r.name} -> {'ERROR: ' if r.error else ''}{r.content}" for r in self.tool_results]
        if self.note:
            parts.append(self.note)
        if self.user_message is not None:
            parts.append(f"User: {self.user_message}")
        return "\n".join(parts)


class TaskView(BaseModel):
    """What a method may know about a task up front (no gold)."""

    task_id: str
    benchmark: str
    policy: str = Field("", description="the benchmark's task policy text (FlowState B.3 `policy` block)")
    tools: list[ToolSpec] = Field(default_factory=list)
    num_requests: int | None = Field(None, description="K if known in advance")
    step_budget: int | None = Field(None, description="steps allowed per request (the benchmark's budget), set by the runner")
    initial_memory: list[str] = Field(default_factory=list, description="chunks a memory method stores before the first request (MemoryArena formal: 'Initial result: Empty')")


class Reply(BaseModel):
    """The environment's answer to a decision."""

    observation: Observation = Field(default_factory=Observation)
    request_done: bool = False


class RequestOutcome(BaseModel):
    """End of request q_k. `memory_text` is what the benchmark says a memory baseline may store
    (MemoryArena §4 chunk rules); `final_response` the submitted answer."""

    request: Request
    final_response: str | None = None
    steps: int = 0
    truncated: bool = Field(False, description="step budget reached before a final response")
    memory_text: str = ""
    memory_chunks: list[str] = Field(default_factory=list, description="extra chunks (e.g. shopping per-turn)")
    feedback: str | None = Field(None, description="feedback the benchmark shows every method (none by default)")
    final_observation: Observation = Field(default_factory=Observation, description="what the environment answered to the request's last decision (e.g. ALFWorld's feedback to the winning action); set by the runner when the environment leaves it empty")


class Environment(ABC):
    """One task's environment: tools, simulated users, scoring. Holds the gold labels."""

    @abstractmethod
    def view(self) -> TaskView: ...

    @abstractmethod
    async def next_request(self) -> Request | None:
        """The next request, or None when the task is over."""

    @abstractmethod
    async def act(self, decision: Decision) -> Reply:
        """Execute tool calls or deliver the message; say whether the request is finished."""

    @abstractmethod
    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        """Close the current request (scoring it internally)."""

    @abstractmethod
    async def score_task(self) -> dict[str, Any]:
        """Task-level scores (JSON-serialisable), e.g. {"subtask_correct": [1,0,1], "success": 0}."""

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        """What a perfect participant would answer now (for the scripted backbone). Roles the
        environment hosts (judge, user_sim) answer too. None = no opinion."""
        return None

    def step_budget(self) -> int:
        return 30


class Method(ABC):
    """A memory/state method. One instance per episode. See module docstring for call order."""

    protocol: Protocol

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        """Subclasses consume their own params and pass the rest up; whatever reaches this base
        class is unknown (a misspelled `method.params.*` key), so it is an error, not ignored."""
        if params:
            raise ValueError(f"{type(self).__name__}: unknown method params {sorted(params)}; check the spelling in "
                             "conf/method/<name>.yaml or on the command line")
        self.backbone = backbone
        self.params = params

    async def begin_task(self, task: TaskView) -> None:
        self.task = task

    async def begin_request(self, request: Request) -> None:
        self.request = request

    @abstractmethod
    async def step(self, observation: Observation) -> Decision: ...

    async def end_request(self, outcome: RequestOutcome) -> None:
        return None

    async def end_task(self) -> None:
        """Release per-episode resources (always called, also after errors)."""
        return None

    def step_log(self) -> dict[str, Any]:
        """Method-specific record of the last step (state deltas, rejections, retrievals)."""
        return {}

    def request_log(self) -> dict[str, Any]:
        """Method-specific record of the last request boundary (read after `end_request`:
        what was persisted, stored in memory, extracted)."""
        return {}


# ----------------------------------------------------------------------------- scripted oracle
class Oracle(ABC):
    """Source of reference decisions for the scripted backbone during one episode."""

    @abstractmethod
    def reference(self, role: str, messages: list[Message]) -> Decision | None: ...


current_oracle: contextvars.ContextVar[Oracle | None] = contextvars.ContextVar("current_oracle", default=None)
current_episode_key: contextvars.ContextVar[str] = contextvars.ContextVar("current_episode_key", default="")


# ----------------------------------------------------------------------------- benchmark side
class TaskSpec(BaseModel):
    """A task as the benchmark loaded it, gold included. Never handed to a method."""

    task_id: str
    payload: dict[str, Any] = Field(default_factory=dict)


class EpisodeContext(BaseModel):
    """What an environment gets besides its task: backbones for the roles it hosts (judge,
    user_sim), and the trial/seed."""

    model_config = {"arbitrary_types_allowed": True}

    trial: int = 0
    seed: int = 0
    backbones: dict[str, Any] = Field(default_factory=dict, description="role -> Backbone")

    def backbone(self, role: str) -> Backbone:
        try:
            return self.backbones[role]
        except KeyError:
            raise KeyError(f"no backbone configured for role '{role}'; set `roles.{role}` in the backbone config") from None


class Benchmark(ABC):
    """A benchmark split: loads tasks, builds environments, aggregates metrics."""

    name: str = "benchmark"
    roles: tuple[str, ...] = ()  # roles its environments call (e.g. ("judge",))

    def __init__(self, **params: Any) -> None:
        self.params = params

    @abstractmethod
    def load_tasks(self) -> list[TaskSpec]: ...

    @abstractmethod
    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment: ...

    @abstractmethod
    def metrics(self, episodes: list[dict[str, Any]]) -> dict[str, float]:
        """Aggregate scores of finished episodes (their `scores` dicts plus metadata) into
        the benchmark's headline metrics, in percent where the paper uses percent."""

    def notes(self) -> dict[str, Any]:
        """Facts to record in the run manifest (reductions, data sources, checksums)."""
        return {}
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("current_request_id", default="")
