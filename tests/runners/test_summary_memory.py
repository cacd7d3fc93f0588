"""What a cell's summary keeps per episode (runners.analysis.cells.slim_record): the fields the
tables read, with the values that repeat across episodes held once."""

import tracemalloc

import orjson

from runners.analysis.cells import slim_record


def line(i):
    """A record line shaped as a sweep writes one: 6 requests of 2 steps, each with its calls."""
    call = {"role": "agent", "prompt": f"p{i:040d}", "reply": f"r{i:040d}", "usage": {"prompt_tokens": 900 + i}}
    step = {"t": 0, "observation": "o" * 300, "decision": {"action": "x" * 80}, "calls": [call, call]}
    return orjson.dumps(
        {
            "cell": "full_context__openai_compatible__memoryarena_math__7a817ff6b9",
            "task_id": f"formal_reasoning_math-{i}",
            "trial": 0,
            "status": "ok",
            "error": None,
            "requests": [
                {"request": "q" * 200, "steps": [{**step, "method": {"protocol_errors": [], "attempts": 1}}] * 2}
                for _ in range(6)
            ],
            "scores": {"success": i % 2, "progress": 0.5, "subtask_correct": [1, 0, 1]},
            "usage_by_role": {"agent": {"prompt_tokens": 9000 + i, "completion_tokens": 500, "source": "api"}},
            "calls_by_role": {"agent": 6, "tool": 3, "judge": 3},
            "started_at": "2026-12-06T22:20:50+00:00",
            "code": "f86eb8c88c4c",
            "texts": {"benchmark:final_call": "paraphrase:181fc0a0", "method:system": "upstream:9ce6c335"},
            "hygiene": [],
        }
    )


def test_a_summary_keeps_a_few_kb_per_episode_with_repeated_values_shared():
    lines = [line(i) for i in range(1000)]
    shared: dict = {}
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = [slim_record(orjson.loads(raw), shared) for raw in lines]  # one whole record at a time, as streamed
        per_episode = (tracemalloc.get_traced_memory()[0] - base) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_episode < 2500, f"{per_episode:.0f} B per episode"
    first, last = kept[0], kept[-1]
    assert first["requests"] is last["requests"] and first["texts"] is last["texts"]  # one object for all
    assert last["requests"] == [{"steps": [{"method": {"protocol_errors": [], "attempts": 1}}] * 2}] * 6
    assert last["scores"]["success"] == 1 and last["usage_by_role"]["agent"]["prompt_tokens"] == 9999
    assert (
        "observation" not in str(last)
        and "prompt" not in str(last["requests"])
        and last["task_id"] == "formal_reasoning_math-999"
    )


def test_unequal_values_stay_apart():
    a, b = orjson.loads(line(1)), orjson.loads(line(2))
    b["requests"][0]["steps"][0]["method"] = {"protocol_errors": ["late"], "attempts": 2}
    b["calls_by_role"]["agent"] = 7
    shared: dict = {}
    sa, sb = slim_record(a, shared), slim_record(b, shared)
    assert sa["requests"] != sb["requests"] and sb["requests"][0]["steps"][0]["method"]["attempts"] == 2
    assert sa["calls_by_role"]["agent"] == 6 and sb["calls_by_role"]["agent"] == 7
