"""The generic episode loop and the episode record.

One episode = one (task, trial). The loop is FlowState Algorithm 1's shape: for each request,
build context → model → parse → act → observe, until the request ends or the benchmark's step
budget runs out. Protocol errors live inside `Method.step` and never end an episode; backbone
failures after retries end it as an *infra error*, recorded apart from agent failures and
retried on resume.
"""
from __future__ import annotations

import hashlib
import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field

from runners.wire import dumps, encoded

from runners.api import (
    Backbone,
    BackboneError,
    Completion,
    Decision,
    Environment,
    Message,
    Method,
    Observation,
    Protocol,
    Request,
    RequestOutcome,
    RetryEvent,
    Usage,
    current_episode_key,
    current_oracle,
    current_request_id,
)


class CallLog(BaseModel):
    """One model call as the episode record keeps it."""

    role: str
    model: str
    usage: Usage
    cached: bool = False
    scripted: bool = False
    latency_s: float = 0.0
    finish_reason: str | None = None
    retries: list[RetryEvent] = Field(default_factory=list)
    attempt: int = Field(0, description="sample index sent to the backbone (a repeat of an identical prompt gets a fresh one)")


class StepRecord(BaseModel):
    t: int
    observation: Observation = Field(description="O_{k,t}, what the method was given")
    decision: Decision
    calls: list[CallLog] = Field(default_factory=list)
    method: dict[str, Any] = Field(default_factory=dict, description="method-specific log (state deltas, rejections, retrievals, protocol errors)")
    overhead_s: float = Field(0.0, description="wall time of the step outside backbone calls (harness + method + env)")


class RequestRecord(BaseModel):
    request: Request
    begin_calls: list[CallLog] = Field(default_factory=list, description="calls made while opening the request (retrieval, state initialisation)")
    steps: list[StepRecord] = Field(default_factory=list)
    outcome: dict[str, Any] = Field(default_factory=dict)
    end_calls: list[CallLog] = Field(default_factory=list, description="calls made while closing the request (judges, memory writes)")
    method: dict[str, Any] = Field(default_factory=dict, description="method log of the request boundary (Method.request_log)")


Status = Literal["ok", "infra_error", "harness_error"]


class EpisodeRecord(BaseModel):
    """One line of `episodes.jsonl` (or `errors.jsonl` when status != ok)."""

    cell: str
    task_id: str
    trial: int
    seed: int
    status: Status = "ok"
    error: str | None = None
    fatal: bool = Field(False, description="the error is a configuration problem (bad key, unknown model): the sweep stops")
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


class RecordingBackbone(Backbone):
    """Wraps a backbone and logs every call (role, usage, cache hit, retries) for the record."""

    def __init__(self, inner: Backbone, sink: list[CallLog], on_call: Callable[[CallLog], None] | None = None) -> None:
        self.inner = inner
        self.sink = sink
        self.on_call = on_call  # live progress: called with each call's log as it finishes
        self.name = inner.name
        self.model = inner.model
        self._used: dict[str, set[int]] = {}

    def fresh_attempt(self, messages: list[Message], role: str, attempt: int, sampling: dict[str, Any]) -> int:
        """A byte-identical prompt sent again in the same episode (e.g. after a step that changed
        nothing) is a new sample, not a replay: it gets the next unused attempt number, so the
        response cache and the scripted backbone draw afresh. Deterministic, so resumes replay."""
        msgs = encoded(messages)  # the prompt's bytes, made once per call and reused by the cache key and the HTTP body
        key = hashlib.sha256(dumps([role, sampling]) + msgs.raw).hexdigest()
        used = self._used.setdefault(key, set())
        while attempt in used:
            attempt += 1
        used.add(attempt)
        return attempt

    async def complete(self, messages: list[Message], *, role: str, protocol: Protocol | None = None, attempt: int = 0, **sampling: Any) -> Completion:
        messages = encoded(messages)
        attempt = self.fresh_attempt(messages, role, attempt, sampling)
        t0 = time.perf_counter()
        try:
            c = await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        except BackboneError as e:
            self.sink.append(CallLog(role=role, model=self.model, usage=Usage(), latency_s=time.perf_counter() - t0, finish_reason="error",
                                     retries=e.retries, attempt=attempt))
            self._notify()
            raise
        self.sink.append(
            CallLog(role=role, model=c.model, usage=c.usage, cached=c.cached, scripted=c.scripted,
                    latency_s=time.perf_counter() - t0, finish_reason=c.finish_reason, retries=c.retries, attempt=attempt)
        )
        self._notify()
        return c

    def _notify(self) -> None:
        if self.on_call is not None:
            try:
                self.on_call(self.sink[-1])
            except Exception:  # a display problem never fails a model call
                pass


def _drain(sink: list[CallLog]) -> list[CallLog]:
    out = list(sink)
    sink.clear()
    return out


async def run_episode(
    *,
    cell: str,
    task_id: str,
    trial: int,
    seed: int,
    env: Environment,
    method: Method,
    sink: list[CallLog],
) -> EpisodeRecord:
    """Drive one episode. `method` and `env` must already use RecordingBackbones writing to `sink`."""
    rec = EpisodeRecord(cell=cell, task_id=task_id, trial=trial, seed=seed,
                        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    t_start = time.perf_counter()
    current_oracle.set(env)  # type: ignore[arg-type]  # environments implement Oracle.reference
    current_episode_key.set(f"{cell}/{task_id}/{trial}")
    all_calls: list[CallLog] = []
    try:
        budget = env.step_budget()  # inside the try: an adapter bug here is a harness error, not a crashed sweep
        view = env.view()
        view.step_budget = budget
        await method.begin_task(view)
        rec.task_calls += _drain(sink)
        all_calls += rec.task_calls
        while (request := await env.next_request()) is not None:
            current_request_id.set(request.request_id)
            rr = RequestRecord(request=request)
            rec.requests.append(rr)
            await method.begin_request(request)
            rr.begin_calls = _drain(sink)
            all_calls += rr.begin_calls
            obs = Observation()
            done = False
            t = 0
            while t < budget and not done:
                t += 1
                s0 = time.perf_counter()
                decision = await method.step(obs)
                reply = await env.act(decision)
                calls = _drain(sink)
                all_calls += calls
                wall = time.perf_counter() - s0
                rr.steps.append(StepRecord(
                    t=t, observation=obs, decision=decision, calls=calls, method=method.step_log(),
                    overhead_s=max(0.0, wall - sum(c.latency_s for c in calls)),
                ))
                done = reply.request_done
                obs = reply.observation
            outcome: RequestOutcome = await env.end_request(truncated=not done, steps=t)
            if outcome.final_observation.is_empty:
                outcome.final_observation = obs
            await method.end_request(outcome)
            rr.method = method.request_log()
            rr.end_calls = _drain(sink)
            all_calls += rr.end_calls
            rr.outcome = outcome.model_dump(exclude={"request", "final_observation"})
        rec.scores = await env.score_task()
        all_calls += _drain(sink)
    except BackboneError as e:
        rec.status = "infra_error"
        rec.error = f"{type(e).__name__}: {e}"
        rec.fatal = e.fatal
        all_calls += _drain(sink)
    except Exception as e:  # a harness/method/benchmark bug: never scored as an agent failure
        rec.status = "harness_error"
        rec.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
        all_calls += _drain(sink)
    finally:
        try:
            await method.end_task()
        except Exception as e:  # cleanup must not hide the episode's own outcome
            rec.error = (rec.error or "") + f"\nend_task failed: {type(e).__name__}: {e}"
        end = _drain(sink)
        rec.task_calls += end
        all_calls += end
    for c in all_calls:
        rec.usage_by_role[c.role] = rec.usage_by_role.get(c.role, Usage()) + c.usage
        rec.calls_by_role[c.role] = rec.calls_by_role.get(c.role, 0) + 1
        rec.cache_hits += int(c.cached)
        rec.retries += len(c.retries)
        rec.scripted = rec.scripted or c.scripted
    rec.wall_s = time.perf_counter() - t_start
    return rec
