"""ZipAct and ZipAct+BM25 (docs/baselines.md §5–6): state parsing, init/update/act calls, the
code-side attempted_actions bookkeeping, parse failures, cross-request handling, prompt layout."""

import json

import pytest

from baselines.zipact import ZipAct, ZipActBM25, parse_state_json
from baselines.zipact_prompts import domain_of, empty_state
from runners.api import Decision, Observation, ToolCall, ToolResult
from tests.baselines.helpers import Recorder, block_of, first_request, outcome, request, task_view, user_blocks


def test_parse_state_json_upstream_rules():
    assert parse_state_json('```json\n{"a": [1, 2,],}\n```') == ({"a": [1, 2]}, None)
    assert parse_state_json('text ```\n{"b": 1}\n``` more') == ({"b": 1}, None)
    assert parse_state_json('{"c": {"d": 2,}}') == ({"c": {"d": 2}}, None)
    assert parse_state_json("") == parse_state_json(None) == (None, "empty state output")
    for bad in ["not json", "[1, 2]"]:
        assert parse_state_json(bad) == (None, "state is not JSON: no JSON object found in the reply")


def test_domain_injectables_extend_the_core():
    assert domain_of("formal_math") == "formal" and domain_of("tau") == "tau" and domain_of("x") == "generic"
    assert domain_of("tau_airline") == "generic"  # keyed on TaskView.kind, never on benchmark-name substrings
    s = empty_state("formal")
    assert s["world_state"]["established_results"] == [] and s["constraint_state"]["attempted_actions"] == []
    assert set(s) == {"goal_state", "world_state", "constraint_state"}
    with pytest.raises(ValueError, match="unknown domain"):
        empty_state("nope")


def scripted(states: list[str], actions: list[Decision]):
    """Oracle: role "state" answers the next text of `states`, role "agent" the next action."""
    states, actions = list(states), list(actions)

    def fn(role, messages):
        if role == "state":
            return Decision(message=states.pop(0)) if states else None
        if role == "agent":
            return actions.pop(0) if actions else Decision(message="done")
        return None

    return fn


INIT = {
    "goal_state": {
        "global_instruction": "",
        "sub_goal_queue": ["derive S_n", "take the limit"],
        "current_objective": "derive S_n",
    },
    "world_state": {"established_results": []},
    "constraint_state": {"negative_constraints": [], "attempted_actions": []},
}


async def test_init_update_act_and_attempted_actions_bookkeeping():
    call = ToolCall(name="reasoning", arguments={"input": "sum"}, id="call-0")
    updated = {
        "goal_state": {
            "global_instruction": "Q1",
            "sub_goal_queue": ["take the limit"],
            "current_objective": "take the limit",
        },
        "world_state": {"established_results": ["S_n = (1-r^n)/(1-r)"]},
        "constraint_state": {"negative_constraints": [], "attempted_actions": []},
    }  # the LLM dropped the action
    bb = Recorder(
        scripted(
            [json.dumps(INIT), "```json\n" + json.dumps(updated) + "\n```", "garbage, not a state"],
            [Decision(tool_calls=[call]), Decision(tool_calls=[call]), Decision(message="1/(1-r)")],
        )
    )
    m = ZipAct(bb)
    q1 = await first_request(m, "Q1: find the limit of the geometric series")
    assert bb.roles() == ["state"]  # init: one call
    assert m.state["goal_state"]["current_objective"] == "derive S_n"
    assert m.state["goal_state"]["global_instruction"] == q1.text  # empty in the reply → the task text
    assert "established_results" in bb.calls[0]["messages"][1]["content"]  # domain skeleton injected

    d1 = await m.step(Observation())
    assert d1.tool_calls[0].name == "reasoning" and bb.roles() == ["state", "agent"]
    obs = Observation(tool_results=[ToolResult(call_id="call-0", name="reasoning", content="S_n = (1-r^n)/(1-r)")])
    await m.step(obs)
    assert bb.roles() == ["state", "agent", "state", "agent"]
    upd = bb.calls[2]["messages"][1]["content"]
    assert "S_n = (1-r^n)/(1-r)" in upd and 'reasoning({"input": "sum"})' in upd
    assert m.state["world_state"]["established_results"] == ["S_n = (1-r^n)/(1-r)"]
    # code-tracked list overwrites what the LLM returned
    assert m.state["constraint_state"]["attempted_actions"] == ['reasoning({"input": "sum"})']

    before = json.loads(json.dumps(m.state))
    await m.step(obs)  # the updater answers garbage → previous state kept (attempted deduplicated)
    assert m.state == before
    assert m.step_log()["state_calls"][0]["ok"] is False

    act = bb.last("agent")["messages"]
    assert user_blocks(act) == ["agent_status", "latest_observation", "user_query"]
    assert json.loads(block_of(act, "agent_status")) == m.state
    assert "State tracking (ZipAct)" in act[0]["content"] and "<thought>" in act[0]["content"]
    assert "trajectory_history" not in act[1]["content"]


async def test_new_request_goes_to_updater_and_queue():
    bb = Recorder(scripted([json.dumps(INIT)], [Decision(message="x")]))
    m = ZipAct(bb)
    q1 = await first_request(m, "First problem")
    await m.step(Observation())
    await m.end_request(outcome(q1, "mem"))
    q2 = request(1, "Second problem, reuse the first")
    await m.begin_request(q2)  # no scripted state left → the updater returns the state unchanged
    upd = bb.calls[-1]
    assert upd["role"] == "state" and "New user request:\nSecond problem" in upd["messages"][1]["content"]
    assert 'assistant_message("x")' in upd["messages"][1]["content"]
    assert m.state["goal_state"]["sub_goal_queue"][-1] == q2.text
    # the updater saw q1's last action; attempted_actions are per request, so q2 starts with none
    assert m.state["constraint_state"]["attempted_actions"] == []


async def test_init_parse_failure_uses_skeleton():
    bb = Recorder(scripted(["no json here"], []))
    m = ZipAct(bb)
    await first_request(m, "Task text")
    assert m.state == {
        **empty_state("formal"),
        "goal_state": {**empty_state("formal")["goal_state"], "global_instruction": "Task text"},
    }


async def test_actor_parse_failure_is_typed_and_no_action():
    bb = Recorder(lambda role, messages: Decision(message="not blocks") if role == "agent" else None)
    m = ZipAct(bb, max_resamples=0)
    bb.inner.malformed_rate = 1.0  # every rendered reply is replaced by malformed text
    await first_request(m, "Task")
    d = await m.step(Observation())
    assert d == Decision() and m.step_log()["no_op"] is True
    # the scripted MALFORMED reply: a cut-off <tool_calls> block and prose, no other block
    assert [(e["attempt"], e["kind"], e["detail"].split(":")[0]) for e in m.step_log()["protocol_errors"]] == [
        (0, "bad_json", "<tool_calls>"),
        (0, "missing_block", "<assistant_message> missing"),
        (0, "missing_block", "<thought> missing"),
    ]
    assert m.step_log()["protocol_errors"][0]["detail"].endswith("a cut-off reply is not completed by guessing)")


async def test_single_call_takes_state_from_actor_output():
    new_state = {"goal_state": {"current_objective": "second"}, "world_state": {}, "constraint_state": {}}
    bb = Recorder(
        lambda role, messages: (
            Decision(message="ok", extras={"state": new_state, "thought": "t"}) if role == "agent" else None
        )
    )
    m = ZipAct(bb, single_call=True)
    await first_request(m, "Task")
    await m.step(Observation())
    assert "state" not in bb.roles()
    assert m.state["goal_state"] == {"current_objective": "second"}
    assert "<state>" in bb.last("agent")["messages"][0]["content"]


async def test_single_call_actor_sees_the_last_action_in_attempted_actions():
    call = ToolCall(name="reasoning", arguments={"input": "sum"}, id="c0")
    bb = Recorder(scripted([], [Decision(tool_calls=[call]), Decision(message="done")]))
    m = ZipAct(bb, single_call=True)
    await first_request(m, "Task")
    await m.step(Observation())
    await m.step(Observation(tool_results=[ToolResult(call_id="c0", name="reasoning", content="S_n")]))
    status = json.loads(block_of(bb.last("agent")["messages"], "agent_status"))
    assert status["constraint_state"]["attempted_actions"] == ['reasoning({"input": "sum"})']


async def test_upstream_sampling_switch():
    bb = Recorder(scripted([json.dumps(INIT)], [Decision(message="a")]))
    m = ZipAct(bb, upstream_sampling=True)
    await first_request(m, "Task")
    await m.step(Observation())
    assert bb.calls[0]["sampling"] == {"temperature": 0, "max_completion_tokens": 512}
    assert bb.calls[1]["sampling"] == {"temperature": 0, "max_completion_tokens": 256}


async def test_zipact_bm25_memory_goes_to_actor_only():
    bb = Recorder(scripted([], [Decision(message="a")] * 4))
    m = ZipActBM25(bb)
    q1 = await first_request(m, "Compute the geometric series partial sum")
    await m.step(Observation())
    await m.end_request(outcome(q1, "## Task:\ngeometric series partial sum\n## solution:\nS_n"))
    m.store.add("## Task:\nprime gaps\n## solution:\nunbounded")  # (with 2 documents every IDF would be 0)
    q2 = request(1, "Take the limit of the geometric series")
    await m.begin_request(q2)
    assert m.retrieved[0].startswith("## Task:\ngeometric series") and len(m.retrieved) == 3
    await m.step(Observation())
    act = bb.last("agent")["messages"]
    assert user_blocks(act) == ["memory", "agent_status", "latest_observation", "user_query"]
    assert "geometric series partial sum" in block_of(act, "memory")
    assert all("<memory_item>" not in c["messages"][1]["content"] for c in bb.calls if c["role"] == "state")
    assert m.step_log()["memory"]["stored_pieces"] == 3


async def test_odd_but_valid_updater_states_do_not_break_bookkeeping():
    # the updater returns JSON objects missing sections or with wrong types: never an exception
    bb = Recorder(
        scripted(
            [json.dumps({"goal_state": "oops"}), json.dumps({"constraint_state": [1]})],
            [Decision(message="a"), Decision(message="b"), Decision(message="c")],
        )
    )
    m = ZipAct(bb)
    await first_request(m, "Task")
    assert m.state["goal_state"] == {"global_instruction": "Task"}
    await m.step(Observation())
    await m.end_request(outcome(request(0, "Task"), "mem"))
    await m.begin_request(request(1, "Next"))  # updater answers {"constraint_state": [1]}
    assert m.state["constraint_state"] == {"attempted_actions": []}  # repaired; per-request list starts empty
    assert "goal_state" not in m.state  # upstream replaces the state wholesale with the updater's JSON
    await m.step(Observation())
    await m.end_request(outcome(request(1, "Next"), "mem"))
    await m.begin_request(request(2, "Third"))  # a missing goal_state is recreated for the queue
    assert m.state["goal_state"]["sub_goal_queue"] == ["Third"]


async def test_domain_comes_from_the_task_kind_not_the_benchmark_name():
    m = ZipAct(Recorder(scripted([json.dumps(INIT)], [])))
    await m.begin_task(task_view(benchmark="tau_like_name").model_copy(update={"kind": "travel"}))
    assert m.domain == "travel"


async def test_updater_sees_the_whole_last_action_and_the_requests_last_observation():
    long_input = "x" * 500
    call = ToolCall(name="reasoning", arguments={"input": long_input}, id="c0")
    bb = Recorder(scripted([json.dumps(INIT)], [Decision(tool_calls=[call]), Decision(message="final answer")]))
    m = ZipAct(bb, action_chars=40)
    q1 = await first_request(m, "Q1")
    await m.step(Observation())
    obs = Observation(tool_results=[ToolResult(call_id="c0", name="reasoning", content="RESULT-7")])
    await m.step(obs)
    upd = bb.calls[-2]["messages"][1]["content"]
    assert long_input in upd  # "Last action" is not cut by action_chars
    assert all(len(a) <= 40 for a in m.state["constraint_state"]["attempted_actions"])
    done = outcome(q1, "mem").model_copy(
        update={"final_observation": Observation(note="Judge: the answer was received")}
    )
    await m.end_request(done)
    await m.begin_request(request(1, "Q2"))
    upd = bb.calls[-1]["messages"][1]["content"]
    assert "Judge: the answer was received" in upd and "New user request:\nQ2" in upd
    assert 'assistant_message("final answer")' in upd and m.tracked == []


async def test_released_prompts_for_alfworld_are_zipacts_byte_for_byte():
    import ast

    from runners.upstream import UpstreamFile, file_text
    from tests.conftest import upstream_src

    upstream_src()
    consts = {
        n.targets[0].id: n.value.value
        for n in ast.parse(file_text(UpstreamFile("ZipAct", "src/prompts/zipact_prompts.py"))).body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }
    bb = Recorder(scripted([json.dumps(INIT)], [Decision(message="go to desk 1")]))
    m = ZipAct(bb)
    await m.begin_task(task_view().model_copy(update={"kind": "alfworld"}))
    await m.begin_request(request(0, "put a clean apple in the fridge"))
    init = bb.calls[0]["messages"]
    assert init[1]["content"] == consts["ALFWORLD_ZIPACT_INIT_STATE_PROMPT"].format(
        instruction="put a clean apple in the fridge"
    )
    await m.step(Observation())
    await m.step(Observation(note="You arrive at desk 1."))
    upd = bb.calls[-2]["messages"]
    assert upd[0]["content"] == consts["ALFWORLD_ZIPACT_UPDATER_SYSTEM_PROMPT"]
    assert (
        upd[1]["content"].startswith("Previous State:\n```json\n")
        and "Last Action: assistant_message" in upd[1]["content"]
    )
    notes = ZipAct.notes()
    assert [k for k in notes["text_sources"]["paraphrased"] if not k.startswith("b3.")] == [] and "f025804" in notes[
        "pin"
    ]
