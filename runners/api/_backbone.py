"""The model side: a `Backbone` answers chat messages for one `Role` and reports usage."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, field_validator

from runners.api._decision import ToolCall
from runners.api._roles import Role

if TYPE_CHECKING:
    from runners.api._decision import Protocol
    from runners.api._task import EpisodeScope

Message = dict[str, Any]
"""One OpenAI chat message: {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}."""


class Usage(BaseModel):
    """Normalised token usage of one model call."""

    prompt_tokens: int = Field(0, description="input tokens, INCLUDING cached_prompt_tokens")
    cached_prompt_tokens: int = Field(0, description="part of prompt_tokens served from the provider's prompt cache")
    completion_tokens: int = Field(0, description="output tokens, INCLUDING reasoning_tokens")
    reasoning_tokens: int = Field(0, description="part of completion_tokens spent on hidden reasoning")
    source: Literal["api", "estimated"] = Field(
        "api", description="api = reported by the endpoint; estimated = counted locally with an offline o200k tokenizer"
    )

    @field_validator("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        """A whole number stored as a float (a JSON reader gives a count beyond 64 bits as one)
        reads back as that int, so such a stored record is never unreadable."""
        if isinstance(v, float) and v.is_integer():
            return int(v)
        return v

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
    reasoning: str | None = Field(
        None, description="reasoning_content the endpoint sent beside the reply (kept in the transcript)"
    )
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    raw_usage: dict[str, Any] | None = Field(None, description="usage object exactly as the endpoint sent it")
    cached: bool = Field(False, description="served from the harness response cache (no model call made)")
    retries: list[RetryEvent] = Field(default_factory=list)
    scripted: bool = Field(False, description="produced by the deterministic scripted backbone")
    latency_s: float = 0.0
    tool_calls: list[ToolCall] = Field(
        default_factory=list, description="native function calls of the reply (only when the call passed `tools`)"
    )
    hygiene: list[str] = Field(
        default_factory=list,
        description=(
            "what the harness changed in the reply before anything read or stored it (lone surrogates replaced, "
            "text capped by max_completion_chars)"
        ),
    )


class BackboneError(Exception):
    """A model call failed for a reason that is not the agent's fault (after retries)."""

    def __init__(
        self,
        message: str,
        *,
        fatal: bool = False,
        retries: list[RetryEvent] | None = None,
        context_overflow: bool = False,
    ):
        super().__init__(message)
        self.fatal = fatal  # fatal = configuration problem (401, 404, quota): stop the sweep
        self.retries = retries or []
        # The prompt exceeds the model's context window: a method that can shorten its context
        # (Full Context drops its oldest steps, docs/baselines.md §1) may catch this and retry.
        self.context_overflow = context_overflow


class CaseError(RuntimeError):
    """The method cannot continue the case because of what the model wrote (e.g. PoS's belief
    model gave no buildable belief after its re-asks). Recorded as a harness error; a resumed
    sweep reruns the case with fresh samples (`runner.case_error_resamples`), as upstream PoS
    reruns a failed case, instead of replaying the cached replies that caused it."""


class Backbone(ABC):
    """A chat model. Every call names its role so tokens can be split by role."""

    name: str = "backbone"
    model: str = ""

    @abstractmethod
    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: "Protocol | None" = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        """`protocol` lets the scripted backbone answer in the caller's format (real endpoints
        ignore it). `attempt` distinguishes deliberate re-samples of the same prompt in the
        response cache. Native function calling: `tools=[ToolSpec.openai_schema(), ...]` among the
        sampling keywords is sent as the request's `tools` field, and the model's calls come back
        as `Completion.tool_calls` (messages may then carry assistant `tool_calls` and `tool`
        messages in the OpenAI format)."""

    def bind(self, scope: "EpisodeScope") -> "Backbone":
        """The backbone one episode calls. Endpoints ignore the episode (the default returns
        `self`); the scripted backbone returns a view that answers from `scope.oracle`."""
        return self

    async def aclose(self) -> None:  # pragma: no cover - trivial default
        return None
