"""Full Context: B.3 message layout and whole-history carry-over across requests."""

import asyncio

from baselines.full_context import FullContext
from benchmarks.memoryarena.formal import FormalReasoning
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode


class Spy(ScriptedBackbone):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.prompts = []

    async def complete(self, messages, *, role, **kw):
        if role == "agent":
            self.prompts.append(messages)
        return await super().complete(messages, role=role, **kw)


def run(method_kwargs=None, **bb):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    spy = Spy(**bb)
    ep = Episode(spy, cell="c", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), FullContext(ep.agent, **(method_kwargs or {}))))
    return spy.prompts, rec


def test_layout_follows_b3():
    prompts, rec = run()
    system, user = prompts[0][0]["content"], prompts[0][1]["content"]
    order = [system.index(f"<{t}>") for t in ("instructions", "policy", "tools", "output_protocol")]
    assert order == sorted(order)
    order = [user.index(f"<{t}>") for t in ("trajectory_history", "latest_observation", "user_query")]
    assert order == sorted(order)
    assert '"name": "reasoning"' in system


def test_history_carries_earlier_requests_and_answers():
    prompts, rec = run()
    assert rec.status == "ok" and rec.scores["subtask_correct"] == [1, 1, 1]
    third = prompts[2][1]["content"]
    assert "## Request 1" in third and "## Request 2" in third
    assert "Final response: S_n = (1 - r^n)/(1 - r)" in third  # answer of request 1 visible at request 3
    assert "<user_query>\n### BACKGROUND" in third


def test_malformed_output_is_resampled_then_no_op():
    prompts, rec = run(malformed_rate=1.0)
    assert rec.status == "ok"  # protocol errors never end an episode
    steps = rec.requests[0].steps
    assert all(s.method["no_op"] and s.method["attempts"] == 3 for s in steps)
    assert len(steps) == 4 and rec.requests[0].outcome["truncated"]  # budget 3 tool iterations + 1
    assert rec.scores["subtask_correct"] == [0, 0, 0]


def test_truncation_switch_drops_oldest_lines():
    prompts, rec = run({"max_tokens": 60})
    assert rec.requests[2].steps[0].method.get("history_truncated")
    assert "## Request 1" not in prompts[2][1]["content"]


class Window(ScriptedBackbone):
    """Refuses agent prompts longer than `limit` characters the way an endpoint does."""

    def __init__(self, limit, **kw):
        super().__init__(**kw)
        self.limit = limit

    async def complete(self, messages, *, role, **kw):
        from runners.api import BackboneError

        if role == "agent" and len(messages[-1]["content"]) > self.limit:
            raise BackboneError("HTTP 400: the prompt exceeds the model's context window", context_overflow=True)
        return await super().complete(messages, role=role, **kw)


def episode_with(backbone, **kw):
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[2]  # four subtasks: the history grows
    ep = Episode(backbone, cell="c", task_id=task.task_id)
    return asyncio.run(ep.run(ep.make_env(bench, task), FullContext(ep.agent, **kw)))


def test_context_overflow_drops_oldest_steps_and_records_it():
    rec = episode_with(Window(limit=600))
    assert rec.status == "ok" and rec.scores["subtask_correct"] == [1, 1, 1, 1]
    events = [s.method["context_overflow"] for r in rec.requests for s in r.steps if "context_overflow" in s.method]
    assert events and all(e["retries"] >= 1 and e["history_cap_tokens"] > 0 for e in events)


def test_context_overflow_as_error_switch():
    rec = episode_with(Window(limit=600), on_context_overflow="error")
    assert rec.status == "infra_error" and "context window" in rec.error


def test_history_and_memory_json_is_the_standard_librarys():
    """The trajectory's action lines and Formal Reasoning's memory text write JSON with one shared
    function (`kit.trajectory.json_text`: strings escaped by orjson, the layout written here, the
    rest left to the standard library): the same text as `json.dumps(value, ensure_ascii=False)`
    (every code point, lone surrogates, NaN, ints beyond 64 bits, tuples, non-str keys, nesting)."""
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    import benchmarks.memoryarena.formal as formal
    import kit.trajectory as trajectory

    assert formal.json_text is trajectory.json_text
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    for value in (every, {every: [every, 1, None]}, ["a\ud800b"], [], {}, [[]], {"k": {}}, (1, "x"), {1: "x"}):
        assert trajectory.json_text(value) == json.dumps(value, ensure_ascii=False)
    text = st.text(st.characters(codec=None, categories=None)) | st.text()  # lone surrogates too
    values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63) | st.floats() | text,
        lambda c: (
            st.lists(c, max_size=3)
            | st.tuples(c, c)
            | st.dictionaries(text, c, max_size=3)
            | st.dictionaries(st.integers() | st.booleans() | st.none(), c, max_size=2)
        ),
        max_leaves=12,
    )

    @settings(max_examples=500, deadline=None)
    @given(values)
    def same(value):
        assert trajectory.json_text(value) == json.dumps(value, ensure_ascii=False)

    same()
