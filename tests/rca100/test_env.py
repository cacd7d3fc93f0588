"""The RCA-100 protocol (docs/pos-benchmarks.md §2.6): turns, action cap, rejections, observation
cap, forced-submission note, submission, scores and metrics."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.rca100.benchmark import Rca100
from runners.api import Decision, EpisodeContext, ToolCall
from tests.conftest import upstream_src


def call(name: str, **args) -> ToolCall:
    return ToolCall(name=name, arguments=args, id=f"{name}-x")


@pytest.fixture
def bench(rca_root):
    return Rca100(name="rca100", data_dir=str(rca_root))


def env_for(bench, case_id: str = "t001", **settings):
    b = Rca100(name="rca100", data_dir=bench.data_dir, **settings) if settings else bench
    task = next(t for t in b.load_tasks() if t.task_id == case_id)
    env = b.make_env(task, EpisodeContext())
    req = asyncio.run(env.next_request())
    return env, req


def act(env, *calls, message=None):
    return asyncio.run(env.act(Decision(tool_calls=list(calls), message=message)))


def test_request_and_view(bench):
    env, req = env_for(bench, adapter="project")
    assert req.observation is None and (
        '"alert_entity_name": "frontend"' in req.text
        and "prompt_text" not in req.text
        and "often NOT the root cause" in req.text
    )
    view = env.view()
    assert len(view.tools) == 10 and "nodeCpuHigh" in view.policy and env.step_budget() == 50
    assert asyncio.run(env.next_request()) is None


def test_bad_inputs_are_error_observations_not_crashes(bench):
    env, _ = env_for(bench)
    r = act(
        env,
        call("rm_rf"),
        call("query_metrics", entity_name=""),
        call("list_entities", entity_type="k8s.pod", limit=[1]),
    )
    assert not r.request_done and [t.error for t in r.observation.tool_results] == [True, True, True]
    assert "available tools" in r.observation.tool_results[0].content
    r = act(env, call("search_logs", keyword="../answer_key/t001.gt.json"))
    assert r.observation.tool_results[0].error and "answer_key" in r.observation.tool_results[0].content
    r = act(env, call("submit_root_cause", root_cause_entity="  ", fault_type="memoryPressure"))
    assert r.observation.tool_results[0].error and not r.request_done
    r = act(env, call("submit_root_cause", root_cause_entity="inventory", fault_type="outOfMemory"))
    assert r.observation.tool_results[0].error and "catalog" in r.observation.tool_results[0].content
    r = act(env, message="I think it is inventory")
    assert not r.request_done and "No tool was called" in r.observation.note
    scores = asyncio.run(env.score_task())
    assert scores["success"] == 0 and scores["reason"] == "no_submission" and scores["turns"] == 5
    assert scores["tool_use_counter"] == 6 and scores["issues"]["invalid_submission"] == 2


def test_action_cap_and_submission_ends_the_turn(bench):
    env, _ = env_for(bench)
    r = act(env, *[call("get_alerts")] * 5)
    assert len(r.observation.tool_results) == 3 and "2 further call(s)" in r.observation.note
    r = act(
        env,
        call(
            "submit_root_cause", root_cause_entity="Inventory", fault_type="F006-memorypressure", analysis="gc bursts"
        ),
        call("get_alerts"),
    )
    assert r.request_done and len(r.observation.tool_results) == 1 and "1 later call(s)" in r.observation.note
    out = asyncio.run(env.end_request(truncated=False, steps=2))
    assert json.loads(out.final_response) == {"root_cause_entity": "Inventory", "fault_type": "memoryPressure"}
    s = asyncio.run(env.score_task())
    assert s["success"] == 1 and s["tool_use_counter"] == 4 and "gold" not in s


def test_wrong_type_scores_zero(bench):
    env, _ = env_for(bench, "t002")
    act(env, call("submit_root_cause", root_cause_entity="node-a", fault_type="cpuFullLoad"))
    s = asyncio.run(env.score_task())
    assert (s["success"], s["entity_correct"], s["type_correct"]) == (0, True, False)


def test_observation_cap_and_forced_submission_note(bench):
    env, _ = env_for(bench, observation_max_chars=300, max_steps=3)
    r = act(env, call("get_data_overview"))
    content = r.observation.tool_results[0].content
    assert len(content) < 400 and content.endswith("narrow the query (filters, smaller limit)]")
    assert r.observation.note is None
    r = act(env, call("get_alerts"))
    assert "submit_root_cause" in r.observation.note  # upstream's wording, or the project's own without upstream


def test_forced_submission_note_is_upstreams_directive(bench):
    upstream_src()
    env, _ = env_for(bench, max_steps=2)
    r = act(env, call("get_alerts"))
    assert (
        "This is the final interaction turn" in r.observation.note and "submit_root_cause" in r.observation.note
    )  # upstream RCA100_FINAL_TURN_DIRECTIVE


def test_metrics_in_percent(bench):
    eps = [
        {"scores": {"success": s, "entity_correct": e, "type_correct": t, "submitted": True}}
        for s, e, t in ((1, True, True), (0, True, False), (0, False, False), (0, False, True))
    ]
    m = bench.metrics(eps)
    assert m["joint_entity_type_accuracy"] == 25.0 and m["entity_accuracy"] == 50.0 and m["type_accuracy"] == 50.0


def test_garbled_model_output_never_crashes_an_episode(bench):
    """Scripted backbone answering half its calls with malformed text or nothing: the episode ends
    normally (turns spent, errors recorded), never as a harness error."""
    from baselines.full_context import FullContext
    from runners.backbones.scripted import ScriptedBackbone
    from runners.episode import Episode

    task = bench.load_tasks()[0]
    ep = Episode(ScriptedBackbone(malformed_rate=0.4, empty_rate=0.2, seed=3), cell="t", task_id=task.task_id)
    env = ep.make_env(Rca100(name="rca100", data_dir=bench.data_dir, max_steps=6), task)
    rec = asyncio.run(ep.run(env, FullContext(ep.agent)))
    assert rec.status == "ok", rec.error
    assert rec.scores["turns"] == len(rec.requests[0].steps) <= 6


def test_release_adapter_first_observation_is_the_pinned_reset_sentence(bench):
    """`adapter: release` sends, as the first observation, the string the release's
    `_RCA100.reset` assigns to `observation` (read here independently from the pinned file)."""
    import ast

    from benchmarks.rca100.env import NOTICE

    path = next(upstream_src().glob("PoS@*/benchmarks/adapter.py"), None)
    if path is None:
        pytest.skip("the pinned PoS benchmarks/adapter.py is absent from upstream-src")
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "_RCA100")
    reset = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "reset")
    want = next(
        n.value.value
        for n in ast.walk(reset)
        if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "observation" for t in n.targets)
    )
    _, req = env_for(bench)
    assert req.observation == want and want != NOTICE
