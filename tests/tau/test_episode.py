"""End-to-end τ³ episodes through the real loop (`runners.episode.Episode`) with Full Context
and the scripted backbone; orchestration rules of docs/tau-bench.md §3 (steps, errors, stops,
termination reasons), the user simulator's view, and the judge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from baselines.full_context import FullContext
from benchmarks.tau.benchmark import TauBenchmark
from benchmarks.tau.judge import transcript
from benchmarks.tau.user_sim import GREETING, STOP, scenario_text, system_prompt, user_view
from runners.api import Backbone, Completion, Decision, EpisodeContext, ToolCall
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.conftest import shared_path
from tests.tau.helpers import upstream_error


class Override(ScriptedBackbone):
    """Scripted backbone, except for the roles given: role -> function(messages) -> text."""

    def __init__(self, **fns) -> None:
        super().__init__()
        self.fns = fns

    async def complete(self, messages, *, role, **kw) -> Completion:
        if role in self.fns:
            return Completion(text=self.fns[role](messages), role=role, model="override")
        return await super().complete(messages, role=role, **kw)


def episode(domain: str, task_id: str, backbone: Backbone | None = None, **params: Any):
    bench = TauBenchmark(
        name=f"tau_{domain}", domain=domain, data_dir=str(shared_path("tau2")), task_ids=[task_id], **params
    )
    task = bench.load_tasks()[0]
    ep = Episode(backbone or ScriptedBackbone(), cell="t", task_id=task.task_id)
    env = ep.make_env(bench, task)
    rec = asyncio.run(ep.run(env, FullContext(ep.agent)))
    return rec, env


def react(calls: list[dict], message: str | None = None) -> str:
    return (
        f"<tool_calls>\n{json.dumps(calls)}\n</tool_calls>\n"
        f"<assistant_message>\n{json.dumps({'content': message})}\n</assistant_message>"
    )


@pytest.mark.parametrize("task_id", ["7", "0"])
def test_scripted_full_context_scores_one_on_airline(task_id):
    rec, env = episode("airline", task_id)
    s = rec.scores
    assert rec.status == "ok", rec.error
    assert s["termination"] == "user_stop" and s["reward"] == 1.0 and s["success"] and s["db_match"]
    assert s["db"]["live_hash"] == s["db"]["predicted_hash"] and s["db"]["replay_mismatches"] == []
    steps = rec.requests[0].steps
    assert rec.calls_by_role["user_sim"] == 2 and "judge" not in rec.calls_by_role
    assert s["messages"][0]["content"] == GREETING and STOP in s["messages"][-1]["content"]
    if task_id == "7":  # DB-changing task: an upgrade and two cancellations
        assert s["action"]["correct"] == s["action"]["count"] == 5 and s["steps"] == 1 + 5 * 2 + 2
        assert sum(bool(st.observation.tool_results) for st in steps) == 5
        assert env.tools.db["reservations"]["XEHM4B"]["status"] == "cancelled"


def test_user_replies_reach_the_agent_as_observations():
    replies = iter(
        ["I want to cancel XEHM4B and 59XX6W; my id is daiki_muller_1116.", "Yes, go ahead.", f"Thanks {STOP}"]
    )
    rec, _ = episode("airline", "7", Override(user_sim=lambda m: next(replies)))
    obs = [st.observation.user_message for st in rec.requests[0].steps if st.observation.user_message]
    assert obs == ["Yes, go ahead."] and rec.requests[0].request.text.startswith("I want to cancel")
    assert rec.scores["termination"] == "user_stop" and rec.scores["db_match"]


def test_scripted_retail_judge_task():
    rec, _ = episode("retail", "21")
    assert rec.status == "ok", rec.error
    assert rec.scores["reward"] == 1.0 and rec.scores["nl_assertion"]["called"] and rec.calls_by_role["judge"] == 1


def test_malformed_tool_calls_count_toward_max_errors():
    bad = [
        {"name": "no_such_tool", "arguments": {}},
        {"name": "get_reservation_details", "arguments": {}},
        {"name": "get_reservation_details", "arguments": {"reservation_id": 7}},
    ]
    rec, env = episode("airline", "7", Override(agent=lambda m: react(bad)))
    assert rec.status == "ok"
    s = rec.scores
    assert s["termination"] == "too_many_errors" and s["reward"] == 0.0 and not s["db_match"]
    assert s["errors"] == 12  # 4 tool steps x 3 errors; the check runs after each tool step
    results = rec.requests[0].steps[1].observation.tool_results
    assert results[0].content == "Error: Tool 'no_such_tool' not found." and all(r.error for r in results)
    assert "missing 1 required positional argument" in results[1].content
    assert results[2].content == upstream_error("airline", "_get_reservation", reservation_id=7)


def test_max_steps_and_stop_on_the_last_step():
    rec, _ = episode("airline", "7", Override(agent=lambda m: react([], "Could you tell me more?")), max_steps=10)
    assert rec.scores["termination"] == "max_steps" and rec.scores["steps"] == 10 and rec.scores["reward"] == 0.0
    # Task 0 (no gold actions): opening (step 1), agent answer (2), user stop (3).
    rec, _ = episode("airline", "0", max_steps=3)
    assert rec.scores["termination"] == "max_steps" and rec.scores["reward"] == 0.0
    rec, _ = episode("airline", "0", max_steps=4)
    assert rec.scores["termination"] == "user_stop" and rec.scores["reward"] == 1.0


def test_agent_stop_token_switch():
    rec, _ = episode("airline", "0", Override(agent=lambda m: react([], f"Bye {STOP}")), agent_stop_token=True)
    assert rec.scores["termination"] == "agent_stop" and rec.scores["evaluated"] and rec.scores["reward"] == 1.0
    # Default (upstream LLMAgent: `is_stop` is False): the text reaches the user, who ends the dialogue.
    rec, env = episode("airline", "0", Override(agent=lambda m: react([], f"Bye {STOP}")))
    assert rec.scores["termination"] == "user_stop" and env.traj[-2] == {
        "role": "assistant",
        "content": f"Bye {STOP}",
        "tool_calls": None,
    }


def test_empty_user_reply_is_an_infrastructure_error():
    # Upstream an empty user message fails validation and the run raises: an infrastructure error (§7.6).
    rec, _ = episode("airline", "0", Override(user_sim=lambda m: "  "))
    assert rec.status == "infra_error" and "empty replies" in rec.error and rec.calls_by_role["user_sim"] == 3
    rec, _ = episode("airline", "0", Override(user_sim=lambda m: "  "), empty_user_reply="user_error")
    assert rec.status == "ok" and rec.scores["termination"] == "user_error" and rec.scores["reward"] == 0.0
    with pytest.raises(ValueError, match="empty_user_reply"):
        TauBenchmark(name="t", domain="airline", empty_user_reply="ignore")


def test_unparsable_judge_is_an_infrastructure_error():
    rec, _ = episode("retail", "21", Override(judge=lambda m: "I think it is fine."))
    assert rec.status == "infra_error" and "judge" in rec.error


def airline_3_with(first: Decision) -> tuple[dict, list]:
    """Airline task 3 driven by hand: the user opens, the agent sends `first` (tool calls, maybe text), then
    asks "Anything else?" and the user stops. Returns the scores and every message list the user LLM saw."""
    bench = TauBenchmark(name="tau_airline", domain="airline", data_dir=str(shared_path("tau2")), task_ids=["3"])
    seen: list = []

    class User(Backbone):
        async def complete(self, messages, *, role, **kw):
            seen.append(messages)
            return Completion(text="Hi, I am mia_li_3668." if len(seen) == 1 else f"ok {STOP}", role=role, model="u")

    env = bench.make_env(bench.load_tasks()[0], EpisodeContext(backbones={"user_sim": User()}))

    async def drive():
        await env.next_request()
        r = await env.act(first)
        assert r.observation.tool_results[0].content == "4.0" and not r.request_done
        r = await env.act(Decision(message="Anything else?"))
        assert r.request_done
        return await env.score_task()

    return asyncio.run(drive()), seen


CALC = [ToolCall(name="calculate", arguments={"expression": "2+2"})]


def test_text_with_tool_calls_counts_for_communicate_but_is_not_sent():
    scores, seen = airline_3_with(Decision(tool_calls=CALC, message="The answer is 4"))
    assert scores["communicate"]["reward"] == 1.0 and scores["termination"] == "user_stop" and scores["steps"] == 5
    assert all("The answer is 4" not in m["content"] for m in seen[-1])
    assert seen[0][1:] == [{"role": "user", "content": GREETING}]  # first call: system prompt + greeting


def test_user_turn_requests_switch():
    replies = iter(["I want to cancel XEHM4B and 59XX6W; my id is daiki_muller_1116.", "Great, thanks.", f"Bye {STOP}"])
    rec, _ = episode("airline", "7", Override(user_sim=lambda m: next(replies)), requests="user_turn")
    assert rec.scores["db_match"] and [r.request.text for r in rec.requests][1] == "Great, thanks."
    assert len(rec.requests) == 2 and rec.scores["termination"] == "user_stop"


def test_user_simulator_prompt_layout():
    scenario = {
        "persona": None,
        "instructions": {
            "domain": "airline",
            "reason_for_call": "Cancel.\nNow.",
            "known_info": "id x",
            "unknown_info": None,
            "task_instructions": "Be terse.",
        },
    }
    assert scenario_text(scenario) == (
        "Instructions:\n\tDomain: airline\n\tReason for call:\n\t\tCancel.\n\t\tNow.\n"
        "\tKnown info:\n\t\tid x\n\tTask instructions:\n\t\tBe terse."
    )
    prompt = system_prompt("GUIDE", scenario)
    assert prompt.startswith("GUIDE\n\n<scenario>\nInstructions:") and prompt.endswith("</scenario>")
    traj = [
        {"role": "assistant", "content": GREETING, "tool_calls": None},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "checking", "tool_calls": [{"id": "1", "name": "x", "arguments": {}}]},
        {"role": "tool", "id": "1", "name": "x", "content": "r", "error": False},
        {"role": "assistant", "content": "done", "tool_calls": None},
    ]
    assert [(m["role"], m["content"]) for m in user_view("S", traj)] == [
        ("system", "S"),
        ("user", GREETING),
        ("assistant", "hi"),
        ("user", "done"),
    ]


def test_text_dropped_by_the_protocol_still_counts_for_communicate():
    """ReAct drops a message sent with tool calls; handed over as `extras["dropped_message"]` it is kept on the
    tool-call message as upstream keeps the text (COMMUNICATE, judge transcript) and never reaches the user."""
    scores, seen = airline_3_with(Decision(tool_calls=CALC, extras={"dropped_message": "You may bring 4 bags."}))
    assert scores["communicate"]["reward"] == 1.0 and scores["reward"] == 1.0
    assert scores["messages"][2]["content"] == "You may bring 4 bags." and scores["messages"][2]["tool_calls"]
    assert "assistant: You may bring 4 bags." in transcript(scores["messages"])
    assert all("4 bags" not in m["content"] for m in seen[-1])
    scores, _ = airline_3_with(Decision(tool_calls=CALC))  # without the text, "4" is never said
    assert scores["communicate"]["reward"] == 0.0 and scores["messages"][2]["content"] is None
