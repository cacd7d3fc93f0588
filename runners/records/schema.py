"""The episode record: what one (task, trial) leaves behind, one JSON line of `episodes.jsonl`
(or `errors.jsonl` when its status is not ok).

`EpisodeRecord` → `RequestRecord` (one per request of the task) → `StepRecord` (one per step) →
`CallLog` (one per model call). A call's texts are not stored here: the call holds the hashes of
its prompt, reply and tools in the cell's `transcripts.sqlite` (runners/records/transcripts.py).
These models are the contract between the engine that writes records and everything that reads
them (the store, `runners.records.results`, the analysis wing).
"""

from __future__ import annotations

from typing import Any, Iterator, Literal

from pydantic import BaseModel, Field

from runners.api import Decision, Observation, Request, RetryEvent, Role, Usage


class CallLog(BaseModel):
    """One model call as the episode record keeps it."""

    role: Role
    model: str
    usage: Usage
    cached: bool = False
    scripted: bool = False
    latency_s: float = 0.0
    finish_reason: str | None = None
    retries: list[RetryEvent] = Field(default_factory=list)
    attempt: int = Field(
        0, description="sample index sent to the backbone (a repeat of an identical prompt gets a fresh one)"
    )
    hygiene: list[str] = Field(
        default_factory=list,
        description="what the backbone changed in the reply (sanitised Unicode, truncation to max_completion_chars)",
    )
    # The transcript (runners/records/transcripts.py): text lives in the cell's transcripts.sqlite, by hash.
    prompt: str | None = Field(
        None, description="head of the message-list hash chain sent ('' = no messages); None = no transcript recorded"
    )
    n_messages: int = Field(0, description="number of messages sent")
    reply: str | None = Field(
        None, description="hash of the raw completion text exactly as returned (None on a failed call)"
    )
    reasoning: str | None = Field(None, description="hash of the endpoint's reasoning_content, if it sent one")
    tools: str | None = Field(None, description="hash of the tool schemas sent, if any")
    reply_tool_calls: str | None = Field(
        None, description="hash of the native tool calls the reply made (JSON list), if any"
    )
    sampling: dict[str, Any] = Field(
        default_factory=dict, description="effective sampling parameters (backbone config + this call)"
    )
    error: str | None = Field(None, description="the backbone error of a failed call")

    # The blobs and nodes the call's transcript introduced (`runners.records.transcripts.Pending`), carried
    # until the cell stores them, live in pydantic's private dict, set here by hand rather than declared
    # as a `PrivateAttr`: a model with a private attribute runs pydantic's `init_private_attributes`
    # (Python) at every construction (one a model call): 4.7 against 3.2 µs a CallLog. Without one,
    # `__pydantic_private__` is None until a call holds a transcript, and None again once it is cleared.
    def pending_transcript(self) -> Any:
        private = self.__pydantic_private__
        return private.get("_pending") if private else None

    def hold_pending_transcript(self, pending: Any) -> None:
        object.__setattr__(self, "__pydantic_private__", None if pending is None else {"_pending": pending})

    def clear_pending_transcript(self) -> None:
        object.__setattr__(self, "__pydantic_private__", None)


class StepRecord(BaseModel):
    t: int
    observation: Observation = Field(description="O_{k,t}, what the method was given")
    decision: Decision
    calls: list[CallLog] = Field(default_factory=list)
    method: dict[str, Any] = Field(
        default_factory=dict, description="method-specific log (state deltas, rejections, retrievals, protocol errors)"
    )
    overhead_s: float = Field(0.0, description="wall time of the step outside backbone calls (harness + method + env)")


class RequestRecord(BaseModel):
    request: Request
    begin_calls: list[CallLog] = Field(
        default_factory=list, description="calls made while opening the request (retrieval, state initialisation)"
    )
    steps: list[StepRecord] = Field(default_factory=list)
    outcome: dict[str, Any] = Field(default_factory=dict)
    end_calls: list[CallLog] = Field(
        default_factory=list, description="calls made while closing the request (judges, memory writes)"
    )
    method: dict[str, Any] = Field(
        default_factory=dict, description="method log of the request boundary (Method.request_log)"
    )


Status = Literal["ok", "infra_error", "harness_error"]


class EpisodeRecord(BaseModel):
    """One line of `episodes.jsonl` (or `errors.jsonl` when status != ok)."""

    cell: str
    task_id: str
    trial: int
    seed: int
    status: Status = "ok"
    error: str | None = None
    fatal: bool = Field(
        False, description="the error is a configuration problem (bad key, unknown model): the sweep stops"
    )
    case_error: bool = Field(
        False,
        description=(
            "the error is a CaseError (the model's output made the case unusable): a resumed sweep reruns it with "
            "fresh samples"
        ),
    )
    resample: int = Field(
        0,
        description="fresh-sample generation of this run of the case (0 = first run; n = n-th rerun after case errors)",
    )
    requests: list[RequestRecord] = Field(default_factory=list)
    scores: dict[str, Any] = Field(default_factory=dict)
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    calls_by_role: dict[str, int] = Field(default_factory=dict)
    cache_hits: int = 0
    retries: int = 0
    scripted: bool = False
    started_at: str = ""
    wall_s: float = 0.0
    task_calls: list[CallLog] = Field(default_factory=list, description="calls made in Method.begin_task / end_task")
    unfinished_calls: list[CallLog] = Field(
        default_factory=list, description="calls of the step an infra/harness error cut short"
    )
    code: str | None = Field(
        None, description="code fingerprint of the run that produced it (runners.records.store.code_fingerprint)"
    )
    texts: dict[str, str] | None = Field(
        None,
        description="the model-facing texts it ran on: '<part>:<text key>' → "
        "'<source>:<sha256 of the text>' (runners.records.store.text_fingerprint); None = not recorded",
    )
    hygiene: list[str] = Field(
        default_factory=list,
        description=(
            "what the harness changed in the record to store it (lone surrogates in text made at run time, "
            "e.g. a tool output, replaced by U+FFFD)"
        ),
    )


def episode_calls(ep: Any) -> Iterator[Any]:
    """Every call of an episode in the order it was made: the CallLogs of an EpisodeRecord, or
    the Calls of a `runners.records.results.Episode` (which mirrors the record's shape: any object
    with `task_calls`, `requests` (`begin_calls`, `steps[].calls`, `end_calls`) and `unfinished_calls`)."""
    yield from ep.task_calls
    for r in ep.requests:
        yield from r.begin_calls
        for s in r.steps:
            yield from s.calls
        yield from r.end_calls
    yield from ep.unfinished_calls
