"""HiAgent: subgoal switches, one-line summaries, the working-memory prompt and retrieval."""

import json

from baselines.pos_baselines.hiagent import HiAgent
from tests.pos_baselines.helpers import FnBackbone, act, drive, tool


def policy(
    subgoals, summary='{"summary": "found the key in drawer 3\\nsecond line dropped", "subgoal_met": true}', calls=None
):
    it = iter(subgoals)

    def fn(role, messages):
        if role == "agent":
            sg = next(it)
            if isinstance(sg, tuple):  # (subgoal, raw reply)
                return f"<subgoal>{json.dumps(sg[0])}</subgoal>" + sg[1]
            return act("go", extra=f"<subgoal>{json.dumps(sg)}</subgoal>\n")
        return summary

    return fn


def test_switch_summarises_the_closed_chunk_and_prompt_keeps_only_current_raw_steps():
    bb = FnBackbone(policy(["find the key", "Find  the KEY", "find the key", "open the safe", "open the safe"]))
    m = HiAgent(bb)
    drive(m, ["", "drawer 1 is empty", "drawer 2 is empty", "the key is in drawer 3", "the safe is locked"])
    assert len(bb.of("memory")) == 1  # case/whitespace changes are not switches; one real switch
    summ = bb.of("memory")[0]["messages"][-1]["content"]
    assert "<subgoal>\nfind the key" in summ and "drawer 2 is empty" in summ and "the key is in drawer 3" in summ
    p = bb.prompt()
    assert "1. find the key [met] found the key in drawer 3" in p and "second line dropped" not in p
    assert "<current_subgoal>\nopen the safe" in p
    current = p.split("<current_subgoal_steps>")[1].split("</current_subgoal_steps>")[0]
    assert current.count("action:") == 1 and "drawer 1 is empty" not in p  # old raw pairs are gone
    assert [c["index"] for c in m.request_log()["subgoals"]] == [1, 2]


def test_failed_summary_uses_last_observation():
    bb = FnBackbone(policy(["a", "b", "b"], summary="not json"))
    m = HiAgent(bb, aux_max_json_retries=0)
    drive(m, ["", "the fridge is open", "x"])
    assert "1. a [unknown] the fridge is open" in bb.prompt()


def test_missing_subgoal_keeps_current_one():
    reply = (
        '<tool_calls>[{"name": "act", "arguments": {"command": "look"}}]</tool_calls>'
        '<assistant_message>{"content": null}</assistant_message>'
    )
    script = iter([act("go", extra='<subgoal>"a"</subgoal>'), reply, reply])
    bb = FnBackbone(lambda role, msgs: next(script) if role == "agent" else "{}")
    m = HiAgent(bb)
    drive(m, ["", "o1", "o2"])
    assert bb.of("memory") == [] and len(m.chunks) == 1 and len(m.chunks[0].turns) == 3


def test_retrieval_expands_a_past_chunk_in_the_next_prompt_only():
    bb = FnBackbone(policy(["a", "b", ("b", tool("retrieve_subgoal", index=1)), "b", "b"]))
    m = HiAgent(bb)
    decisions = drive(m, ["", "apple on table", "o2", "o3"])
    assert decisions[2].tool_calls[0].name == "act" and m.step_log()["policy_calls"] == 1
    prompts = [c["messages"][-1]["content"] for c in bb.of("agent")]
    assert "Full record of subgoal 1 (a):" in prompts[3] and "apple on table" in prompts[3]
    drive_more = m  # the expansion is gone once used
    assert "Full record" not in prompts[2]
    assert drive_more.expansions == []


def test_never_closed_subgoal_degenerates_to_raw():
    bb = FnBackbone(policy(["only"] * 4))
    drive(HiAgent(bb), ["", "o1", "o2", "o3"])
    p = bb.prompt()
    assert (
        "<past_subgoals>\n(none)" in p
        and all(f"Observation: o{i}" in p for i in (1, 2))
        and "<latest_observation>\no3" in p
    )
