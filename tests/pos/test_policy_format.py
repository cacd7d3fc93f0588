"""PoS policy output as upstream writes it (PoS baselines/react.py, prompts/react_prompt.py): one
JSON object, a repair turn with the raw reply and upstream's correction, and the missing-action
re-ask with upstream's directive; the texts are read at run time from the pinned upstream files."""

import asyncio
import json

from pos.method import PoS
from pos.repair_text import SOURCES, missing_action, policy_repair
from runners.api import Observation, Request, TaskView, ToolSpec
from runners.upstream import UpstreamFile, py_string
from tests.conftest import upstream_src
from tests.pos.helpers import QueueBackbone
from tests.pos.test_method import init

RCA = TaskView(
    task_id="t",
    benchmark="rca100",
    kind="rca",
    tools=[ToolSpec(name="query", description="q"), ToolSpec(name="submit_root_cause", description="s")],
)


def first_turn(replies: list, task: TaskView = RCA):
    bb = QueueBackbone({"pos-init": [init()], "pos-policy": list(replies)})

    async def go():
        m = PoS(bb, max_actions_per_turn=1)
        await m.begin_task(task)
        await m.begin_request(Request(index=0, request_id="t/q1", text="Find the fault."))
        d = await m.step(Observation())
        return m, d

    m, d = asyncio.run(go())
    return m, d, [msgs for _, p, msgs in bb.calls if p == "pos-policy"]


def test_upstream_texts_are_loaded_byte_for_byte():
    upstream_src()
    assert policy_repair() == py_string(UpstreamFile("PoS", "prompts/react_prompt.py"), "REPAIR_PROMPT")
    assert missing_action() == py_string(UpstreamFile("PoS", "baselines/react.py"), "MISSING_ACTION_DIRECTIVE")
    assert SOURCES.entries["pos.policy_repair"]["source"] == "upstream"
    from benchmarks.diagnostic import final_turn_directive

    react = UpstreamFile("PoS", "prompts/react_prompt.py")
    assert final_turn_directive("submit_root_cause") == py_string(react, "RCA100_FINAL_TURN_DIRECTIVE")
    assert final_turn_directive("submit_diagnosis") == py_string(react, "CLINDIAG_FINAL_TURN_DIRECTIVE")


def test_unparsable_reply_gets_a_repair_turn_with_the_raw_reply():
    upstream_src()
    raw = "I think I should query the cpu metrics first."
    good = json.dumps({"thought": "check cpu", "action": {"name": "query", "arguments": {"q": "cpu"}}})
    m, d, calls = first_turn([raw, good])
    assert [c.name for c in d.tool_calls] == ["query"] and d.extras["thought"] == "check cpu"
    assert calls[1][: len(calls[0])] == calls[0]
    assert calls[1][-2:] == [{"role": "assistant", "content": raw}, {"role": "user", "content": policy_repair()}]
    assert m.step_log()["policy"]["repair_turns"][0]["kind"] == "json"


def test_message_only_reply_on_rca_gets_the_missing_action_reask_and_does_not_silently_spend_the_turn():
    upstream_src()
    msg = {"thought": "the cause is clear", "message": "root cause: db"}
    sub = {"thought": "submit", "action": {"name": "submit_root_cause", "arguments": {"root_cause": "db"}}}
    m, d, calls = first_turn([json.dumps(msg), json.dumps(sub)])
    assert [c.name for c in d.tool_calls] == ["submit_root_cause"]
    assert calls[1][-2] == {"role": "assistant", "content": json.dumps(msg, ensure_ascii=False)}
    assert calls[1][-1] == {"role": "user", "content": missing_action()}
    # still no action after the re-ask: the turn is spent, visibly
    m, d, calls = first_turn([json.dumps(msg), json.dumps(msg)])
    log = m.step_log()["policy"]
    assert d.is_empty and len(calls) == 2 and log["no_op"] and "spent without acting" in log["no_action"]


def test_message_is_a_decision_where_a_message_ends_the_request():
    task = TaskView(task_id="t", benchmark="memoryarena_math", kind="formal_math", tools=[])
    m, d, calls = first_turn([json.dumps({"thought": "t", "message": "\\frac{1}{2}"})], task)
    assert d.message == "\\frac{1}{2}" and len(calls) == 1
