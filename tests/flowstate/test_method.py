"""The FlowState method loop (docs/flowstate.md §2, §5, §6, §7) driven with a queue backbone: message layout,
raw ids, resampling, request boundaries, user turns, ablations."""

from __future__ import annotations

import asyncio
import json
import pytest

from flowstate import FlowState, FlowStateNoISU, FlowStateNoPSA
from flowstate.protocol import FlowStateProtocol
from runners.api import (
    Backbone,
    Completion,
    Decision,
    Observation,
    Request,
    RequestOutcome,
    TaskView,
    ToolCall,
    ToolResult,
    ToolSpec,
)

TASK = TaskView(task_id="t", benchmark="b", policy="POLICY TEXT", tools=[ToolSpec(name="search", description="find")])


class QueueBackbone(Backbone):
    """Answers with queued texts (the last one repeats) and keeps every prompt it got."""

    def __init__(self, texts: list[str]) -> None:
        self.texts, self.prompts = list(texts), []

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
        self.prompts.append((role, attempt, messages))
        text = self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]
        return Completion(text=text, role=role, model="queue")


def out(focus=(), delta=(), calls=(), msg=None) -> str:
    d = Decision(
        tool_calls=[ToolCall(name=n, arguments=a) for n, a in calls],
        message=msg,
        extras={"state_focus": list(focus), "state_delta": list(delta)},
    )
    return FlowStateProtocol().render(d)


def blocks(content: str, tags: list[str]) -> list[str]:
    """The given top-level tags in order of first appearance (absent ones left out)."""
    found = [(content.find(f"<{t}>\n"), t) for t in tags if f"<{t}>\n" in content]
    return [t for _, t in sorted(found)]


def run(coro):
    return asyncio.run(coro)


async def start(m, text="q one", rid="t/q1", index=0):
    await m.begin_request(Request(index=index, request_id=rid, text=text))


async def begin(m, text="q one"):
    """begin_task + the first request + its first step."""
    await m.begin_task(TASK)
    await start(m, text)
    return await m.step(Observation())


def test_message_layout_and_raw_ids():
    bb = QueueBackbone([out(calls=[("search", {"q": "x"})]), out(msg="done")])
    m = FlowState(bb)

    async def go():
        await begin(m)
        await m.step(
            Observation(
                tool_results=[
                    ToolResult(call_id="call-0", name="search", content="RESULT-A"),
                    ToolResult(call_id="call-1", name="search", content="B", error=True),
                ]
            )
        )

    run(go())
    sys_msg, user = bb.prompts[1][2]
    assert blocks(sys_msg["content"], ["output_protocol", "tools", "policy", "instructions"]) == [
        "instructions",
        "policy",
        "tools",
        "output_protocol",
    ]
    assert "POLICY TEXT" in sys_msg["content"] and "state_focus" in sys_msg["content"]
    assert blocks(user["content"], ["user_query", "latest_observation", "agent_status", "trajectory_history"]) == [
        "agent_status",
        "latest_observation",
        "user_query",
    ]
    assert "Historical State Index:" in user["content"] and "Active State:" in user["content"]
    assert "[obs-1-2-0] search -> RESULT-A" in user["content"] and "[obs-1-2-1] search -> ERROR: B" in user["content"]
    assert "RESULT-A" not in bb.prompts[0][2][1]["content"]
    assert m.step_log()["raw_ids"] == ["obs-1-2-0", "obs-1-2-1"]
    # no trajectory history: the first step's tool call is not in the second prompt
    assert "trajectory_history" not in user["content"]


def test_resample_then_no_op():
    bb = QueueBackbone(["", "garbage", out(msg="ok")])
    m = FlowState(bb)

    async def go():
        await m.begin_task(TASK)
        await start(m)
        d1 = await m.step(Observation())
        log1 = dict(m.step_log())
        bb.texts = [out()]  # all-empty forever
        d2 = await m.step(Observation())
        return d1, log1, d2, m.step_log()

    d1, log1, d2, log2 = run(go())
    assert (
        d1.message == "ok"
        and log1["attempts"] == 3
        and {e["kind"] for e in log1["protocol_errors"]} == {"empty", "malformed"}
    )
    assert d2.is_empty and log2["no_op"] and log2["attempts"] == 4  # max_resamples=3
    assert [e["kind"] for e in log2["protocol_errors"]] == [
        "empty"
    ] * 4  # typed error per all-empty attempt (docs/flowstate.md §2.2)
    # re-samples use attempts 0..3 (the episode's RecordingBackbone makes repeats of a prompt fresh draws)
    assert [a for r, a, _ in bb.prompts[-4:]] == [0, 1, 2, 3] and all(r == "agent" for r, _, _ in bb.prompts)


def test_step_log_and_persist_across_requests_with_disclosure():
    fact = {
        "state_set": "knowledge",
        "operation": "add",
        "state_id": "fact",
        "summary": "a fact",
        "value": {"x": 7},
        "refs": [{"rel": "supports", "state_id": "obs-1-2-0"}],
    }
    bb = QueueBackbone(
        [
            out(calls=[("search", {})]),
            out(delta=[fact, {"operation": "update", "state_id": "ghost"}], msg="7"),
            out(focus=[{"target_id": "fact", "reason": "need x"}, {"target_id": "nope", "reason": ""}]),
            out(focus=[{"target_id": "obs-1-2-0", "reason": "raw"}], msg="7 again"),
        ]
    )
    m = FlowState(bb)

    async def go():
        await begin(m)
        await m.step(
            Observation(
                tool_results=[
                    ToolResult(call_id="c", name="search", content="x=7"),
                    ToolResult(call_id="d", name="search", content="unused"),
                ]
            )
        )
        log = dict(m.step_log())
        await m.end_request(RequestOutcome(request=m.request, final_response="7"))
        log["boundary"] = m.request_log()
        await start(m, "q two", "t/q2", 1)
        await m.step(Observation())
        log2 = dict(m.step_log())
        await m.step(Observation())
        return log, log2, m.step_log()

    log, log2, log3 = run(go())
    assert [v["state_id"] for v in log["delta_validated"]] == ["fact"] and "ghost" in log["delta_rejected"][0]["op"][
        "state_id"
    ]
    assert log["boundary"]["persisted"] == ["obs-1-2-0", "fact"]  # unreferenced obs-1-2-1 dropped
    assert (
        log2["access"]["granted"] == ["fact"]
        and log2["access"]["rejected"][0]["state_id"] == "nope"
        and log2["disclosed"] == ["fact"]
    )
    p2 = bb.prompts[2][2][1]["content"]
    assert (
        '"query_id": "t/q1"' in p2 and '"state_id": "fact"' in p2 and '"x": 7' not in p2
    )  # index: ids + summaries only
    p3 = bb.prompts[3][2][1]["content"]
    assert '"x": 7' in p3 and "x=7" not in p3  # disclosed at the next step; raw content not yet
    assert log3["access"]["granted"] == ["obs-1-2-0"] and log3["active_state_nodes"] == 1


def test_user_turn_modes():
    async def go(mode):
        greet = {
            "state_set": "judgement",
            "operation": "add",
            "state_id": "greeted",
            "summary": "asked",
            "value": None,
            "refs": [],
        }
        bb = QueueBackbone([out(delta=[greet], msg="hello, what do you need?")])
        m = FlowState(bb, user_turn_mode=mode)
        await begin(m, "first user message")
        await m.step(Observation(user_message="I want X"))
        return m, bb.prompts[-1][2][1]["content"], m.step_log()

    m, prompt, log = run(go("request"))
    assert m.query_id == "t/q1/u1" and log["new_request"] == "t/q1/u1" and m.k == 2
    assert "<user_query>\nI want X" in prompt and '"user_query": "first user message"' in prompt
    assert log["persisted"] == ["greeted"] and m.repo.get("greeted").request == "t/q1"
    m, prompt, log = run(go("observation"))
    assert m.query_id == "t/q1" and "User: I want X" in prompt and "<user_query>\nfirst user message" in prompt


def test_request_mode_keeps_the_agents_last_message_for_the_users_reply():
    """The user's "yes" opens a new request: the question it answers is in the index, not lost."""

    async def go(**kw):
        bb = QueueBackbone([out(msg="Shall I cancel reservation ABC123? (yes/no)")])
        m = FlowState(bb, user_turn_mode="request", **kw)
        await begin(m, "cancel my trip")
        await m.step(Observation(user_message="yes"))
        return m, bb.prompts[-1][2][1]["content"]

    m, prompt = run(go())
    assert m.repo.index()[0]["agent_response"] == "Shall I cancel reservation ABC123? (yes/no)"
    assert "Shall I cancel reservation ABC123?" in prompt and "<user_query>\nyes" in prompt
    m, prompt = run(go(persist_agent_message=False))
    assert "agent_response" not in m.repo.index()[0] and "ABC123" not in prompt


def test_tau_request_end_keeps_the_message_other_benchmarks_keep_states_only():
    async def go(kind):
        m = FlowState(QueueBackbone([out(msg="Anything else?")]))
        await m.begin_task(TASK.model_copy(update={"kind": kind}))
        await start(m)
        await m.step(Observation())
        await m.end_request(RequestOutcome(request=m.request, final_response="Anything else?"))
        return m.repo.index()[0]

    assert run(go("tau"))["agent_response"] == "Anything else?"
    assert "agent_response" not in run(go("formal_math"))


def test_persist_types_and_bad_params():
    keep = {"state_set": "preference", "operation": "add", "state_id": "pref", "summary": "s", "value": 1, "refs": []}
    drop = {"state_set": "knowledge", "operation": "add", "state_id": "know", "summary": "s", "value": 1, "refs": []}
    m = FlowState(QueueBackbone([out(delta=[keep, drop], msg="a")]), persist_types=["preferences"])

    async def go():
        await begin(m)
        await m.end_request(RequestOutcome(request=m.request, final_response="a"))

    run(go())
    assert set(m.repo.nodes) == {"pref"}
    with pytest.raises(ValueError, match="persist_types"):
        FlowState(QueueBackbone([""]), persist_types=["feelings"])
    with pytest.raises(ValueError, match="user_turn_mode"):
        FlowState(QueueBackbone([""]), user_turn_mode="dialogue")
    with pytest.raises(ValueError, match="rule_relation"):
        FlowStateNoISU(QueueBackbone([""]), rule_relation="causes")


def test_no_psa_shows_all_history_and_no_index():
    node = {
        "state_set": "judgements",
        "operation": "add",
        "state_id": "plan",
        "summary": "s",
        "value": {"secret": 1},
        "refs": [],
    }
    bb = QueueBackbone(
        [
            out(delta=[node], msg="a"),
            out(
                focus=[{"target_id": "plan", "reason": ""}],
                delta=[{"operation": "update", "state_id": "plan", "summary": "x"}],
                msg="b",
            ),
        ]
    )
    m = FlowStateNoPSA(bb)

    async def go():
        await begin(m)
        await m.end_request(RequestOutcome(request=m.request, final_response="a"))
        await start(m, "q two", "t/q2", 1)
        await m.step(Observation())
        return m.step_log()

    log = run(go())
    sys_msg, user = bb.prompts[-1][2]
    assert "<state_focus>" not in sys_msg["content"] and "Historical State Index" not in user["content"]
    assert (
        "Historical State Index" not in sys_msg["content"] and "state_focus" not in sys_msg["content"]
    )  # PSA rules dropped (docs/flowstate.md §7)
    assert '"secret": 1' in user["content"] and log["active_state_nodes"] == 1
    assert log["access"]["requested"] == [] and "read-only" in log["delta_rejected"][0]["reason"]


def test_no_psa_shows_the_isu_states_but_not_their_raw_results():
    """docs/flowstate.md §7: w/o PSA the Active State holds every ISU-generated historical state; the raw tool
    results they reference are persisted (refs resolve) but are not ISU-generated, so they are not shown."""
    fact = {
        "state_set": "knowledge",
        "operation": "add",
        "state_id": "fact",
        "summary": "a fact",
        "value": {"x": 7},
        "refs": [{"rel": "supports", "state_id": "obs-1-2-0"}],
    }
    bb = QueueBackbone([out(calls=[("search", {})]), out(delta=[fact], msg="7"), out(msg="again")])
    m = FlowStateNoPSA(bb)

    async def go():
        await begin(m)
        await m.step(Observation(tool_results=[ToolResult(call_id="c", name="search", content="RAW-RESULT-x=7")]))
        await m.end_request(RequestOutcome(request=m.request, final_response="7"))
        await start(m, "q two", "t/q2", 1)
        await m.step(Observation())
        return m.step_log()

    log = run(go())
    assert sorted(m.repo.nodes) == ["fact", "obs-1-2-0"] and m.repo.get("obs-1-2-0").raw  # both persisted
    assert list(m.active.disclosed) == ["fact"] and log["active_state_nodes"] == 1
    user = bb.prompts[-1][2][1]["content"]
    assert '"x": 7' in user and "RAW-RESULT-x=7" not in user


def test_no_isu_rule_node_with_raw_links_and_trajectory():
    delta = [
        {"state_set": "knowledge", "operation": "add", "state_id": "ignored", "summary": "s", "value": 1, "refs": []}
    ]
    bb = QueueBackbone(
        [
            out(delta=delta, calls=[("search", {"q": 1})]),
            out(msg="final answer " + "z" * 300),
            out(focus=[{"target_id": "response-t/q1", "reason": ""}]),
        ]
    )
    m = FlowStateNoISU(bb, rule_summary_chars=20)

    async def go():
        await begin(m)
        await m.step(Observation(tool_results=[ToolResult(call_id="c", name="search", content="R1")]))
        await m.end_request(RequestOutcome(request=m.request, final_response="final answer " + "z" * 300))
        await start(m, "q two", "t/q2", 1)
        await m.step(Observation())
        return m.step_log()

    log = run(go())
    assert "<state_delta>" not in bb.prompts[0][2][0]["content"] and "ignored" not in m.repo.nodes
    node = m.repo.get("response-t/q1")
    assert (
        node.type.value == "judgements"
        and node.summary == "final answer zzzzzzz…"
        and node.value["final_response"].endswith("z")
    )
    assert [(r.rel, r.state_id) for r in node.refs] == [("supports", "obs-1-2-0")] and m.repo.get(
        "obs-1-2-0"
    ).value == "R1"
    assert "<trajectory_history>" in bb.prompts[1][2][1]["content"] and '"q": 1' in bb.prompts[1][2][1]["content"]
    assert "trajectory_history>\n## Request 2" in bb.prompts[2][2][1]["content"]  # current query's trajectory only
    assert log["disclosed"] == ["response-t/q1"]
    assert json.loads(json.dumps(log))  # the step log is JSON-serialisable


def test_no_isu_rules_match_the_layout():
    """Spec §7: with carry_trajectory the w/o ISU prompt shows trajectory_history, so its rules must
    not claim there is no history; without it the full core rule stands."""

    def system(**params):
        bb = QueueBackbone([out(msg="a")])
        run(begin(FlowStateNoISU(bb, **params)))
        return bb.prompts[0][2][0]["content"], bb.prompts[0][2][1]["content"]

    sys_msg, user = system()
    assert (
        "<trajectory_history>" in user
        and "There is no conversation history" not in sys_msg
        and "trajectory_history" in sys_msg
    )
    assert "state_delta" not in sys_msg  # ISU rules dropped
    sys_msg, user = system(carry_trajectory=False)
    assert "<trajectory_history>" not in user and "There is no conversation history" in sys_msg
    sys_msg, _ = run(_full_system())
    assert (
        "There is no conversation history" in sys_msg and "Ids from the Historical State Index are read-only" in sys_msg
    )


@pytest.mark.parametrize("repeat", [False, True])
def test_no_isu_trajectory_shows_the_current_query_once(repeat):
    """w/o ISU with carry_trajectory shows the current query once, in <user_query>, as Full Context
    and the memory baselines do (kit/trajectory.py); repeat_query_in_history=true doubles it."""
    bb = QueueBackbone([out(calls=[("search", {"q": 1})]), out(msg="done")])
    m = FlowStateNoISU(bb, repeat_query_in_history=repeat)

    async def go():
        await begin(m, text="find the unique query text")
        await m.step(Observation(tool_results=[ToolResult(call_id="c", name="search", content="R1")]))

    run(go())
    for prompt in bb.prompts[:2]:
        user = prompt[2][1]["content"]
        history = user.split("<trajectory_history>\n", 1)[1].split("\n</trajectory_history>", 1)[0]
        query = user.split("<user_query>\n", 1)[1].split("\n</user_query>", 1)[0]
        assert query == "find the unique query text"
        assert ("User query: find the unique query text" in history) is repeat, history
        assert user.count("find the unique query text") == (2 if repeat else 1)


async def _full_system():
    bb = QueueBackbone([out(msg="a")])
    await begin(FlowState(bb))
    return bb.prompts[0][2][0]["content"], bb.prompts[0][2][1]["content"]


def test_repeated_identical_prompt_gets_fresh_draws():
    """A no-op step leaves S and O unchanged, so the next prompt is byte-identical; its samples must
    be new draws (new cache keys via `attempt`), not a replay of the failed ones (Alg. 1 line 8).
    The episode's RecordingBackbone provides this for every method."""
    from runners.episode import RecordingBackbone

    bb = QueueBackbone([out()])  # all-empty forever
    sink = []

    async def go():
        await m.begin_task(TASK)
        await start(m)
        for _ in range(2):
            await m.step(Observation())
        bb.texts = [out(calls=[("search", {})])]
        await m.step(Observation(tool_results=[ToolResult(call_id="c", name="search", content="new")]))

    m = FlowState(RecordingBackbone(bb, sink), repair_turns=False)  # the literal re-sample switch
    run(go())
    assert bb.prompts[0][2] == bb.prompts[4][2]  # the same prompt twice ...
    assert [a for _, a, _ in bb.prompts] == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        0,
    ]  # ... with fresh attempts; a new prompt starts at 0
    assert [c.attempt for c in sink] == [0, 1, 2, 3, 4, 5, 6, 7, 0]


def test_retry_is_a_repair_turn_with_the_reply_and_a_correction():
    """Default: the retry shows the model its own unusable reply and one correction naming the
    problem (not a byte-identical re-ask); bounded by max_resamples and recorded in the step log."""
    bad = (
        "<state_focus>[]</state_focus><state_delta>[]</state_delta><tool_calls>oops</tool_calls>"
        "<assistant_message></assistant_message>"
    )
    bb = QueueBackbone([bad, out(msg="done")])

    async def go():
        await m.begin_task(TASK)
        await start(m)
        return await m.step(Observation())

    m = FlowState(bb)
    d = run(go())
    assert d.message == "done"
    first, second = bb.prompts[0][2], bb.prompts[1][2]
    assert second[: len(first)] == first and second[-2] == {"role": "assistant", "content": bad}
    assert (
        second[-1]["role"] == "user"
        and "<tool_calls>" in second[-1]["content"]
        and "could not be used" in second[-1]["content"]
    )
    log = m.step_log()
    assert log["attempts"] == 2 and log["repair_turns"][0]["attempt"] == 1


def test_feedback_reports_rejections_and_empty_accesses_in_the_next_step():
    """[harness choice] `feedback` (default on): the next step's agent_status says briefly which
    state operations were rejected and which accesses disclosed nothing, with the reasons; off =
    the paper read literally (the next prompt does not mention them)."""
    bad = out(
        focus=[{"target_id": "no-such-id", "reason": "look"}],
        delta=[{"state_set": "judgements", "operation": "update", "state_id": "missing-node", "summary": "x"}],
    )

    def prompts(feedback):
        bb = QueueBackbone([bad, out(msg="done")])

        async def go():
            await m.begin_task(TASK)
            await start(m)
            await m.step(Observation())
            await m.step(Observation())

        m = FlowState(bb, feedback=feedback)
        run(go())
        return [p[2][1]["content"] for p in bb.prompts], m

    (first, second), m = prompts(True)
    assert "Last step's state requests" not in first
    assert (
        "state_delta #0 (update missing-node) was rejected" in second and "state_focus no-such-id was refused" in second
    )
    (_, literal), _ = prompts(False)
    assert "Last step's state requests" not in literal
