"""The episode loop's bookkeeping: where calls are recorded, budgets, errors, cleanup."""

import asyncio

import pytest

from baselines.full_context import FullContext
from benchmarks.memoryarena.formal import FormalReasoning
from runners.api import BackboneError
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode, RecordingBackbone


class Probe(FullContext):
    """Full Context plus a memory call at each request start, and a cleanup flag."""

    ended = False

    async def begin_task(self, task):
        await super().begin_task(task)
        self.budget = task.step_budget

    async def begin_request(self, request):
        await super().begin_request(request)
        await self.backbone.complete([{"role": "user", "content": request.text}], role="memory")

    async def end_task(self):
        self.ended = True


class Failing(ScriptedBackbone):
    async def complete(self, messages, *, role, **kw):
        if role == "judge":
            raise BackboneError("endpoint down after retries")
        return await super().complete(messages, role=role, **kw)


def episode(method_cls, backbone):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[1]
    ep = Episode(backbone, cell="c", task_id=task.task_id)
    m = method_cls(ep.agent)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), m))
    return rec, m


def test_request_start_calls_are_recorded_apart_from_steps():
    rec, m = episode(Probe, ScriptedBackbone())
    assert rec.status == "ok" and m.budget == 4 and m.ended
    for rr in rec.requests:
        assert [c.role for c in rr.begin_calls] == ["memory"]
        assert all(c.role == "agent" for s in rr.steps for c in s.calls)
        assert [c.role for c in rr.end_calls] == ["judge"]
    assert rec.calls_by_role == {"memory": 2, "agent": 2, "judge": 2}


def test_infra_error_is_recorded_and_cleanup_still_runs():
    rec, m = episode(Probe, Failing())
    assert rec.status == "infra_error" and "endpoint down" in rec.error and not rec.fatal
    assert m.ended
    assert rec.calls_by_role["judge"] == 1  # the failed call is logged too


@pytest.mark.parametrize("transcripts", [True, False])
def test_identical_prompt_repeated_in_an_episode_gets_fresh_attempts(transcripts):
    """With transcripts the attempt key hashes the encoder's prompt key, without them the
    prompt's bytes: the same numbering either way."""
    sink = []
    seen = []

    class Echo(ScriptedBackbone):
        async def complete(self, messages, *, role, attempt=0, **kw):
            seen.append(attempt)
            return await super().complete(messages, role=role, attempt=attempt, **kw)

    rb = RecordingBackbone(Echo(), sink, transcripts=transcripts)
    msgs = [{"role": "user", "content": "same"}]

    async def go():
        await rb.complete(msgs, role="agent")  # 0
        await rb.complete(msgs, role="agent", attempt=1)  # a deliberate re-sample: 1
        await rb.complete(msgs, role="agent")  # a repeat of the prompt: fresh, 2
        await rb.complete(msgs, role="judge")  # another role: its own numbering, 0
        await rb.complete(msgs, role="agent", temperature=1.0)  # other sampling: 0

    asyncio.run(go())
    assert seen == [0, 1, 2, 0, 0] and [c.attempt for c in sink] == seen


def test_final_observation_reaches_end_request():
    from runners.api import Decision, Environment, Observation, Reply, Request, RequestOutcome, TaskView

    class OneShot(Environment):
        def __init__(self):
            self.k = -1

        def view(self):
            return TaskView(task_id="t", benchmark="b")

        async def next_request(self):
            self.k += 1
            return Request(index=0, request_id="t/q1", text="do it") if self.k == 0 else None

        async def act(self, decision):
            return Reply(observation=Observation(note="You won!"), request_done=True)

        async def end_request(self, *, truncated, steps):
            return RequestOutcome(request=Request(index=0, request_id="t/q1", text="do it"), steps=steps)

        async def score_task(self):
            return {}

        def reference(self, role, messages):
            return Decision(message="go")

    seen = []

    class Catch(FullContext):
        async def end_request(self, outcome):
            seen.append(outcome.final_observation.note)

    ep = Episode(ScriptedBackbone(), cell="c", task_id="t")
    rec = asyncio.run(ep.run(OneShot(), Catch(ep.agent)))
    assert rec.status == "ok" and seen == ["You won!"]


def test_adapter_bug_in_step_budget_is_a_harness_error_not_a_crash():
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    ep = Episode(ScriptedBackbone(), cell="c", task_id=task.task_id)
    env = ep.make_env(bench, task)
    env.step_budget = lambda: 1 // 0
    m = Probe(ep.agent)
    rec = asyncio.run(ep.run(env, m))
    assert rec.status == "harness_error" and "ZeroDivisionError" in rec.error and m.ended


def test_usage_by_role_sums_every_call_and_marks_a_role_with_an_estimate():
    """The record's usage per role is the sum of its calls' usage; a role is `estimated` as soon
    as one of its calls was (the rule of `Usage.__add__`), the others stay `api`."""
    from runners.api import Usage

    class Counted(ScriptedBackbone):
        n = 0

        async def complete(self, messages, *, role, **kw):
            c = await super().complete(messages, role=role, **kw)
            Counted.n += 1
            k = Counted.n
            c.usage = Usage(
                prompt_tokens=100 * k,
                cached_prompt_tokens=k,
                completion_tokens=10 * k,
                reasoning_tokens=k % 3,
                source="estimated" if role == "memory" and k % 2 else "api",
            )
            return c

    rec, _ = episode(Probe, Counted())
    from runners.records.schema import episode_calls

    calls = list(episode_calls(rec))
    assert {c.role for c in calls} == {"memory", "agent", "judge"} and len(calls) == sum(rec.calls_by_role.values())
    for role, got in rec.usage_by_role.items():
        want = Usage()
        for c in calls:
            if c.role == role:
                want = want + c.usage
        assert got == want, role
    assert rec.usage_by_role["agent"].source == "api" and rec.usage_by_role["memory"].source == "estimated"


class Mixed(ScriptedBackbone):
    """Scripted replies; judge calls marked cached with one retry each, and only they scripted."""

    async def complete(self, messages, *, role, **kw):
        c = await super().complete(messages, role=role, **kw)
        judge = role == "judge"
        retries = [{"attempt": 0, "error": "HTTP 429", "wait_s": 0.0}] if judge else []
        return c.model_copy(update={"cached": judge, "scripted": judge, "retries": retries})


def test_episode_totals_count_every_call():
    """The record's call totals (per role, cache hits, retries, scripted) are those of its calls;
    an episode that made no call leaves them unset."""
    rec, _ = episode(Probe, Mixed())
    calls = rec.task_calls + [c for rr in rec.requests for s in rr.steps for c in s.calls]
    calls += [c for rr in rec.requests for c in rr.begin_calls + rr.end_calls]
    assert rec.calls_by_role == {"memory": 2, "agent": 2, "judge": 2} and len(calls) == 6
    assert (rec.cache_hits, rec.retries, rec.scripted) == (2, 2, True)
    assert {"cache_hits", "retries", "scripted"} <= rec.model_fields_set

    class NoCalls(FullContext):
        async def step(self, observation):
            from runners.api import Decision

            return Decision(message="")  # an empty answer: the request ends and no judge is asked

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[1]
    ep = Episode(ScriptedBackbone(), cell="c", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), NoCalls(ep.agent)))
    assert (
        rec.status == "ok" and rec.calls_by_role == {} and (rec.cache_hits, rec.retries, rec.scripted) == (0, 0, False)
    )
    assert not {"cache_hits", "retries", "scripted"} & rec.model_fields_set
