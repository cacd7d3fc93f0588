"""Formal Reasoning environment, judge rules and loader."""

import asyncio
import json

import pytest

from benchmarks.memoryarena.formal import FormalReasoning, request_text
from benchmarks.memoryarena.judge import judge_messages, verdict
from benchmarks.memoryarena.loader import DataError, resolve
from runners.api import Decision
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode


def test_verdict_is_upstream_substring_rule_with_strict_switch():
    assert verdict("Yes.") and verdict("the answer is YES") and verdict("eyes")  # upstream quirk kept
    assert not verdict("No") and not verdict("")
    assert verdict("yes, equivalent", strict=True) and not verdict("eyes", strict=True)


def test_judge_prompt_omits_question_by_default():
    msgs = judge_messages("x", "y", None)
    assert "Question: None" in msgs[1]["content"]
    assert "Question: what?" in judge_messages("x", "y", "what?")[1]["content"]


def test_request_text_layout():
    assert request_text("", "Q?").startswith("### BACKGROUND:\nNo background")
    assert request_text("bg", "Q?").endswith("### PROBLEM:\nQ?")


def test_loader_errors_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMORYARENA_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="available"):
        resolve("formal_reasoning_chem", None)
    with pytest.raises(DataError, match="MEMORYARENA_DATA_DIR"):
        resolve("formal_reasoning_math", str(tmp_path))
    path, prov = resolve("formal_reasoning_math", "fixtures")
    assert prov["pinned_checksum"] is False and "fixture" in prov["source"]


def test_local_dir_with_unaligned_rows_is_rejected(tmp_path):
    (tmp_path / "formal_reasoning_math").mkdir()
    row = {"id": 0, "paper_name": "p", "backgrounds": [""], "questions": ["a", "b"], "answers": ["1", "2"]}
    (tmp_path / "formal_reasoning_math" / "data.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match="unaligned"):
        FormalReasoning(name="m", config="formal_reasoning_math", data_dir=str(tmp_path)).load_tasks()


def test_env_scores_answers_with_judge_and_writes_memory_chunk():
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[1]  # two subtasks
    ep = Episode(ScriptedBackbone())
    env = ep.make_env(bench, task)

    async def go():
        assert env.view().initial_memory == ["Initial result: Empty"]
        r1 = await env.next_request()
        assert "minimiser" in r1.text and "x* = 2" not in r1.text  # gold never in the request
        assert (await env.act(Decision(message=" X* = 2 "))).request_done
        o1 = await env.end_request(truncated=False, steps=1)
        assert o1.memory_text.startswith("## Task:\nFind the minimiser") and "## solution:\n X* = 2" in o1.memory_text
        await env.next_request()
        await env.act(Decision(message="4"))
        await env.end_request(truncated=False, steps=1)
        assert await env.next_request() is None
        return await env.score_task()

    scores = asyncio.run(go())
    assert scores["subtask_correct"] == [1, 0]
    assert scores["success"] == 0 and scores["progress"] == 0.5
    assert [c.role for c in ep.sink] == ["judge", "judge"]
