"""The decision side: what a method decides in one step, and the `Protocol` that reads it from
model text."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Literal

from pydantic import BaseModel, Field


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
    repairs: list[dict[str, str]] = Field(
        default_factory=list, description="tolerances the reader applied (kit.reader.Repair: kind, where, detail)"
    )
    thinking: list[str] = Field(
        default_factory=list, description="thinking text removed before parsing (recorded, never parsed)"
    )

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
