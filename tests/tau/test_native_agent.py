"""`method=tau_native` runs as tau2's LLMAgent: upstream system prompt, tools through the API's
`tools` field, native tool calls, the chat history as messages. It replays the airline gold
actions to the official final DB hashes, both on the scripted backbone (native tool calls) and
through the real OpenAI client against a loopback server that logs every request body."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest

from benchmarks.tau.benchmark import TauBenchmark
from benchmarks.tau.native import LLM_AGENT, TauNative
from benchmarks.tau.replay import gold_actions
from benchmarks.tau.user_sim import GREETING
from runners.backbones.openai import OpenAIBackbone, native_tool_calls
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from runners.upstream import file_text
from tests.conftest import shared_path, upstream_src
from tests.fake_openai import FakeOpenAI

TASKS = ["7", "0", "44"]


@pytest.fixture(scope="module")
def official() -> dict:
    return {
        t["task_id"]: t
        for t in json.loads(shared_path("tau2-conformance", "airline_gold_replay.json").read_text())["tasks"]
    }


def bench(task_ids):
    return TauBenchmark(name="tau_airline", domain="airline", data_dir=str(shared_path("tau2")), task_ids=task_ids)


def run(b, task, agent, user=None):
    u = user or ScriptedBackbone()
    ep = Episode(agent, user_sim=u, judge=u, cell="n", task_id=task.task_id)
    env = ep.make_env(b, task)
    return asyncio.run(ep.run(env, TauNative(ep.agent)))


def upstream_system_prompt(policy: str) -> str:
    tree = ast.parse(file_text(LLM_AGENT))
    consts = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name):
            try:
                consts[n.targets[0].id] = eval(compile(ast.Expression(n.value), "<u>", "eval"), {})  # noqa: S307
            except Exception:
                pass
    return consts["SYSTEM_PROMPT"].format(domain_policy=policy, agent_instruction=consts["AGENT_INSTRUCTION"])


def test_scripted_native_agent_replays_gold_to_the_official_hashes(official):
    upstream_src()
    b = bench(TASKS)
    for task in b.load_tasks():
        rec = run(b, task, ScriptedBackbone())
        assert rec.status == "ok", rec.error
        assert rec.scores["db"]["live_hash"] == official[task.payload["id"]]["final_db_norm_sha256"], task.task_id
        assert rec.scores["db_match"] and rec.scores["reward"] == 1.0


def test_native_agent_sends_tools_through_the_api_and_replays_gold(official):
    upstream_src()
    b = bench(["7"])
    task = b.load_tasks()[0]
    gold = gold_actions(task.payload)

    def responder(body):
        made = sum(len(m.get("tool_calls") or []) for m in body["messages"] if m["role"] == "assistant")
        if made < len(gold):
            a = gold[made]
            return {
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{made}",
                        "type": "function",
                        "function": {"name": a["name"], "arguments": json.dumps(a.get("arguments") or {})},
                    }
                ],
            }
        return "Done: your reservations are updated."

    with FakeOpenAI(responder=responder) as srv:
        agent = OpenAIBackbone(name="fake", model="fake-model", base_url=srv.base_url, api_key="k")
        rec = run(b, task, agent)
        bodies = list(srv.bodies)
    assert rec.status == "ok", rec.error
    s = rec.scores
    assert s["db"]["live_hash"] == official["7"]["final_db_norm_sha256"], (
        s["termination"],
        s["reward_basis"],
        s["communicate"],
    )
    assert s["db_match"] and s["action"]["reward"] == 1.0 and s["termination"] == "user_stop"
    schemas = json.loads(shared_path("tau2-conformance", "tool_schemas.json").read_text())["domains"]["airline"][
        "tools"
    ]
    assert all(body["tools"] == schemas for body in bodies)
    first = bodies[0]["messages"]
    assert first[0] == {"role": "system", "content": upstream_system_prompt(b.data().policy)}
    assert first[1] == {"role": "assistant", "content": GREETING} and first[2]["role"] == "user"
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last[3:5]] == ["assistant", "tool"] and last[4]["tool_call_id"] == last[3]["tool_calls"][
        0
    ]["id"]
    assert sum(m["role"] == "tool" for m in last) == len(gold)


def test_manifest_names_the_native_prompt_source():
    upstream_src()
    notes = TauNative.notes()
    assert notes["text_sources"]["prompts"]["system_prompt"]["path"] == "src/tau2/agent/llm_agent.py"
    assert notes["text_sources"]["paraphrased"] == []


def test_native_tool_call_parsing_keeps_bad_arguments_visible():
    calls = native_tool_calls(
        [
            {"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "b", "function": {"name": "g", "arguments": "not json"}},
            {"bad": 1},
        ]
    )
    assert [(c.name, c.id) for c in calls] == [("f", "a"), ("g", "b")]
    assert calls[0].arguments == {"x": 1} and calls[1].arguments == {"_unparsed_arguments": "not json"}
