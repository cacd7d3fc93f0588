"""The generic episode loop (the record it writes: runners/records/schema.py).

One episode = one (task, trial). The loop is FlowState Algorithm 1's shape: for each request,
build context → model → parse → act → observe, until the request ends or the benchmark's step
budget runs out. Protocol errors live inside `Method.step` and never end an episode; backbone
failures after retries end it as an *infra error*, recorded apart from agent failures and
retried on resume.

`Episode` owns everything one episode shares between its parts: the call sink, the recording
backbones, the role aliases (`tool` is the agent's backbone; `judge`/`user_sim` the agent's unless
configured), the `EpisodeContext` the environment gets, and the `EpisodeScope` through which the
scripted backbone sees the episode's oracle (the environment).
"""

from __future__ import annotations

import hashlib
import time
import traceback
from datetime import datetime, timezone
from typing import Any, Callable, get_args

from runners.api import (
    Backbone,
    BackboneError,
    Benchmark,
    CaseError,
    Completion,
    Environment,
    EpisodeContext,
    EpisodeScope,
    Message,
    Method,
    Observation,
    Oracle,
    Protocol,
    RequestOutcome,
    Role,
    TaskSpec,
    Usage,
)
from runners.records.schema import CallLog, EpisodeRecord, RequestRecord, StepRecord
from runners.records.transcripts import Encoder, Pending, canonical, clean_sampling
from runners.records.wire import dumps, encoded


class RecordingBackbone(Backbone):
    """Wraps a backbone and logs every call (role, usage, cache hit, retries) for the record,
    with its transcript: the messages sent, tool schemas, sampling and the raw reply
    (runners/records/transcripts.py; `transcripts=False` logs references-free calls)."""

    def __init__(
        self,
        inner: Backbone,
        sink: list[CallLog],
        *,
        transcripts: bool = True,
        on_call: Callable[[CallLog], None] | None = None,
    ) -> None:
        self.inner = inner
        self.sink = sink
        self.on_call = on_call  # live progress: called with each call's log as it finishes
        self.name = inner.name
        self.model = inner.model
        self._used: dict[str, set[int]] = {}
        self._encoder = Encoder() if transcripts else None
        self._carried: Pending | None = None  # blobs of a call that ended without a log (see `complete`)
        self._config_sampling = clean_sampling(_config_sampling(inner))  # the backbone's part, cleaned once

    def fresh_attempt(
        self, messages: list[Message], role: str, attempt: int, sampling: dict[str, Any], prompt: str | None = None
    ) -> int:
        """A byte-identical prompt sent again in the same episode (e.g. after a step that changed
        nothing) is a new sample, not a replay: it gets the next unused attempt number, so the
        response cache and the scripted backbone draw afresh. Deterministic, so resumes replay.
        `prompt`: the transcript's node key of `messages` (the hash chain of their canonical
        bytes), when the encoder made it already: the prompt is then not hashed a second time."""
        h = hashlib.sha256(dumps([role, sampling]))
        if prompt is not None:
            h.update(b"\0" + prompt.encode())
        else:  # the prompt's bytes, made once per call and reused by the cache key and the HTTP body
            h.update(encoded(messages).raw)  # the digest of the concatenation, without copying the prompt's bytes
        key = h.hexdigest()
        used = self._used.setdefault(key, set())
        while attempt in used:
            attempt += 1
        used.add(attempt)
        return attempt

    def _log(
        self,
        fields: dict[str, Any],
        messages: list[Message],
        sampling: dict[str, Any],
        c: Completion | None,
        prompt: str | None,
        pending: Pending | None,
    ) -> CallLog:
        """The call's `CallLog`: `fields` (the call's outcome) and its transcript references
        (`prompt`, the node key the encoder made before the call, and `pending`, the blobs and
        nodes the call adds), validated in one construction (not a construction and then one attribute write per
        transcript field). `model_construct` is no shortcut here: in pydantic 2 it is a Python
        loop over the fields, ~2x the time of the validation it skips."""
        if self._encoder is not None and pending is not None:
            enc = self._encoder
            call = dict(sampling)
            tools = call.pop("tools", None)
            fields["prompt"] = prompt
            fields["n_messages"] = len(messages)
            fields["tools"] = enc.blob(canonical(tools), pending) if tools else None
            fields["sampling"] = {**self._config_sampling, **clean_sampling(call)}  # clean_sampling({**config, **call})
            if c is not None:
                fields["reply"] = enc.text(c.text, pending)
                fields["reasoning"] = enc.text(c.reasoning, pending) if c.reasoning else None
                if c.tool_calls:
                    fields["reply_tool_calls"] = enc.blob(
                        canonical([t.model_dump(mode="json") for t in c.tool_calls]), pending
                    )
        log = CallLog(**fields)
        if pending is not None:
            log.hold_pending_transcript(pending)
        return log

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        if role not in ROLE_NAMES:  # a misspelt role would silently leave #Tok
            raise ValueError(f"unknown call role {role!r}; roles are {', '.join(ROLE_NAMES)}")
        messages = encoded(messages)
        # the prompt's transcript (its node key and the blobs it adds) is made before the call, so the
        # attempt key reuses its hashes instead of hashing the whole prompt again
        pending, prompt = None, None
        if self._encoder is not None:
            pending, self._carried = (self._carried if self._carried is not None else Pending()), None
            prompt = self._encoder.messages(messages, pending, role)
        attempt = self.fresh_attempt(messages, role, attempt, sampling, prompt)
        t0 = time.perf_counter()
        try:
            c = await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        except BaseException as e:
            if not isinstance(e, BackboneError):  # no log for this call (cancelled, a bug): the blobs the
                self._carried = pending  # encoder now counts as stored travel with the next call's log
                raise
            self.sink.append(
                self._log(
                    {
                        "role": role,
                        "model": self.model,
                        "usage": Usage(),
                        "latency_s": time.perf_counter() - t0,
                        "finish_reason": "error",
                        "retries": e.retries,
                        "attempt": attempt,
                        "error": f"{type(e).__name__}: {e}"[:2000],
                    },
                    messages,
                    sampling,
                    None,
                    prompt,
                    pending,
                )
            )
            self._notify()
            raise
        self.sink.append(
            self._log(
                {
                    "role": role,
                    "model": c.model,
                    "usage": c.usage,
                    "cached": c.cached,
                    "scripted": c.scripted,
                    "latency_s": time.perf_counter() - t0,
                    "finish_reason": c.finish_reason,
                    "retries": c.retries,
                    "attempt": attempt,
                    "hygiene": c.hygiene,
                },
                messages,
                sampling,
                c,
                prompt,
                pending,
            )
        )
        self._notify()
        return c

    def _notify(self) -> None:
        if self.on_call is not None:
            try:
                self.on_call(self.sink[-1])
            except Exception:  # a display problem never fails a model call
                pass


def _config_sampling(b: Any) -> dict[str, Any]:
    """The sampling settings a backbone (or the one it wraps) adds to every request."""
    for _ in range(4):
        if isinstance(getattr(b, "sampling", None), dict):
            return {**b.sampling, **({"extra_body": b.extra_body} if getattr(b, "extra_body", None) else {})}
        b = getattr(b, "inner", None)
        if b is None:
            break
    return {}


ROLE_NAMES: tuple[str, ...] = get_args(Role)


class Episode:
    """One (task, trial): its call sink, recording backbones, role aliases, `EpisodeContext` and
    the scope the scripted backbone answers from. Build the environment with `make_env` (or
    hand one to `attach`) so the scripted backbone answers from it, then `await run(env, method)`."""

    def __init__(
        self,
        agent: Backbone,
        *,
        judge: Backbone | None = None,
        user_sim: Backbone | None = None,
        tool: Backbone | None = None,
        cell: str = "",
        task_id: str = "",
        trial: int = 0,
        seed: int = 0,
        transcripts: bool = True,
        on_call: Callable[[CallLog], None] | None = None,
    ) -> None:
        self.cell, self.task_id, self.trial, self.seed = cell, task_id, trial, seed
        self.sink: list[CallLog] = []
        self.scope = EpisodeScope(key=f"{cell}/{task_id}/{trial}")
        self.agent = RecordingBackbone(agent.bind(self.scope), self.sink, transcripts=transcripts, on_call=on_call)
        backbones: dict[Role, Backbone] = {"agent": self.agent, "tool": self.agent}
        for role, b in (("judge", judge), ("user_sim", user_sim), ("tool", tool)):
            backbones[role] = (  # type: ignore[index]
                RecordingBackbone(b.bind(self.scope), self.sink, transcripts=transcripts, on_call=on_call)
                if b is not None
                else self.agent
            )
        self.ctx = EpisodeContext(trial=trial, seed=seed, backbones=backbones)

    def attach(self, oracle: Oracle) -> None:
        """The oracle the scripted backbone answers from (normally the episode's environment)."""
        self.scope.oracle = oracle

    def make_env(self, bench: Benchmark, task: TaskSpec) -> Environment:
        env = bench.make_env(task, self.ctx)
        self.attach(env)
        return env

    async def run(self, env: Environment, method: Method) -> "EpisodeRecord":
        """Drive the episode; `method` must call `self.agent` (the recording agent backbone)."""
        if self.scope.oracle is None:
            self.attach(env)
        return await _run(self, env, method)


def _drain(sink: list[CallLog]) -> list[CallLog]:
    out = list(sink)
    sink.clear()
    return out


async def _run(ep: Episode, env: Environment, method: Method) -> EpisodeRecord:
    rec = EpisodeRecord(
        cell=ep.cell,
        task_id=ep.task_id,
        trial=ep.trial,
        seed=ep.seed,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    sink = ep.sink
    t_start = time.perf_counter()
    all_calls: list[CallLog] = []
    try:
        budget = env.step_budget()  # inside the try: an adapter bug here is a harness error, not a crashed sweep
        view = env.view()
        view.step_budget = budget
        await method.begin_task(view)
        rec.task_calls += _drain(sink)
        all_calls += rec.task_calls
        while (request := await env.next_request()) is not None:
            ep.scope.request_id = request.request_id
            rr = RequestRecord(request=request)
            rec.requests.append(rr)
            await method.begin_request(request)
            rr.begin_calls = _drain(sink)
            all_calls += rr.begin_calls
            obs = Observation(
                actions=request.actions, note=request.observation
            )  # O_{k,1} = ∅ or the benchmark's own first observation (plus the valid actions, where it lists them)
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
                rr.steps.append(
                    StepRecord(
                        t=t,
                        observation=obs,
                        decision=decision,
                        calls=calls,
                        method=method.step_log(),
                        overhead_s=max(0.0, wall - sum(c.latency_s for c in calls)),
                    )
                )
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
        scoring = _drain(sink)  # calls made while scoring the task (kept with the task's calls)
        rec.task_calls += scoring
        all_calls += scoring
    except BackboneError as e:
        rec.status = "infra_error"
        rec.error = f"{type(e).__name__}: {e}"
        rec.fatal = e.fatal
        rec.unfinished_calls = _drain(sink)
        all_calls += rec.unfinished_calls
    except Exception as e:  # a harness/method/benchmark bug: never scored as an agent failure
        rec.status = "harness_error"
        rec.case_error = isinstance(e, CaseError)
        rec.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
        rec.unfinished_calls = _drain(sink)
        all_calls += rec.unfinished_calls
    finally:
        try:
            await method.end_task()
        except Exception as e:  # cleanup must not hide the episode's own outcome
            rec.error = (rec.error or "") + f"\nend_task failed: {type(e).__name__}: {e}"
        end = _drain(sink)
        rec.task_calls += end
        all_calls += end
    totals: dict[str, list[int]] = {}  # role -> token counts, summed as ints (one Usage per role, not per call)
    estimated: set[str] = set()  # roles with a call whose usage was estimated (`Usage.__add__`'s rule)
    by_role, hits, retries, scripted = rec.calls_by_role, rec.cache_hits, rec.retries, rec.scripted
    for c in all_calls:
        u, sums = c.usage, totals.setdefault(c.role, [0, 0, 0, 0])
        sums[0] += u.prompt_tokens
        sums[1] += u.cached_prompt_tokens
        sums[2] += u.completion_tokens
        sums[3] += u.reasoning_tokens
        if u.source != "api":
            estimated.add(c.role)
        by_role[c.role] = by_role.get(c.role, 0) + 1
        hits += int(c.cached)
        retries += len(c.retries)
        scripted = scripted or c.scripted
    if all_calls:  # assigned once (a model's attribute write is a Python call), as set as a write per call left them
        rec.cache_hits, rec.retries, rec.scripted = hits, retries, scripted
    for role, (prompt, cached, completion, reasoning) in totals.items():
        rec.usage_by_role[role] = Usage(
            prompt_tokens=prompt,
            cached_prompt_tokens=cached,
            completion_tokens=completion,
            reasoning_tokens=reasoning,
            source="estimated" if role in estimated else "api",
        )
    rec.wall_s = time.perf_counter() - t_start
    return rec
