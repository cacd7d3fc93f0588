"""Group Travel Planning environment and benchmark (docs/memoryarena.md §3.2, §4 Travel, §5.1)."""

import asyncio
import json

import pytest

from baselines.full_context import FullContext
from benchmarks.memoryarena import travel_score
from benchmarks.memoryarena.travel import GroupTravel, traveller_name
from runners.api import Decision, EpisodeContext, ToolCall
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.conftest import shared_path


def bench(**kw):
    return GroupTravel(
        name="memoryarena_travel",
        db_dir=str(shared_path("memoryarena-travel-db")),
        flights_path="fixtures",
        data_dir="fixtures",
        **kw,
    )


def episode(b, backbone=None):
    task = b.load_tasks()[0]
    ep = Episode(backbone or ScriptedBackbone(), cell="c", task_id=task.task_id)
    return asyncio.run(ep.run(ep.make_env(b, task), FullContext(ep.agent)))


def test_traveller_names_follow_upstream_regex():
    assert traveller_name("I am Eric.\nI'm joining") == "Eric" and traveller_name("Hello, I'm Bo.") == "Person"


def test_scripted_full_context_scores_100_and_writes_memory():
    b = bench()
    rec = episode(b)
    assert rec.status == "ok", rec.error
    assert rec.scores["subtask_correct"] == [1, 1, 1] and rec.scores["success"] == 1 and rec.scores["sps"] == 1.0
    m = b.metrics([rec.model_dump()])
    assert m["SR"] == m["PS"] == m["PS_persons"] == m["sPS"] == 100.0 and m["Acc_3"] == 100.0 and m["nAUC"] == 100.0
    first = rec.requests[0]
    assert len(first.steps) == 2 and first.steps[0].decision.tool_calls[0].name == "RestaurantSearch"
    assert "Coco Bambu" in first.steps[1].observation.tool_results[0].content
    mem = json.loads(first.outcome["memory_text"])
    assert mem["name"] == "Eric" and mem["query"].startswith("I am Eric.")
    assert (
        mem["scratchpad"][0]["tool_results"][0]["name"] == "RestaurantSearch"
        and "Coco Bambu" in mem["scratchpad"][0]["tool_results"][0]["result"]
    )
    assert (
        mem["final_plan"].startswith("=== Eric's Plan ===")
        and mem["scratchpad"][1]["final_output"] == mem["final_plan"]
    )


def test_view_gives_the_base_plan_first():
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    v = env.view()
    base = json.loads(v.initial_memory[0])
    assert base["is_base_person"] is True and base["name"] == "Jennifer"
    assert base["final_plan"].startswith("=== Jennifer's Plan ===\nDay 1:") and base["final_plan"] in v.policy
    # as upstream run_travel.py: a memory method gets the base traveller only through memory
    assert v.memory_policy is not None and base["final_plan"] not in v.for_memory_method().policy
    assert [t.name for t in v.tools] == [
        "FlightSearch",
        "RestaurantSearch",
        "AccommodationSearch",
        "AttractionSearch",
        "DistanceMatrix",
        "CitySearch",
    ]
    assert env.step_budget() == 30 and v.kind == "travel" and len(env.requests) == 3
    assert "Jennifer's Plan" not in b.make_env(b.load_tasks()[0], EpisodeContext()).requests[0].text
    b2 = bench(base_plan_in_policy=False)
    assert "Jennifer's Plan" not in b2.make_env(b2.load_tasks()[0], EpisodeContext()).view().policy
    b3 = bench(base_plan_in_policy=True)
    v3 = b3.make_env(b3.load_tasks()[0], EpisodeContext()).view()
    assert base["final_plan"] in v3.for_memory_method().policy


def test_a_traveller_without_a_plan_fails_itself_and_the_group():
    rec = episode(bench(), ScriptedBackbone(wrong_requests=["travel-0/q2"]))
    assert rec.scores["subtask_correct"] == [1, 0, 1]
    person = rec.scores["persons"][1]
    assert person["submitted"] is True and person["parsed"] is False  # "(scripted wrong answer)" has no Day blocks
    # upstream combination.py writes the traveller with plan null and eval.py fails the group
    assert rec.scores["success"] == 0


def drive(env, decisions_per_request):
    async def go():
        for decisions in decisions_per_request:
            await env.next_request()
            last = None
            for d in decisions:
                last = await env.act(d)
            await env.end_request(truncated=not (last and last.request_done), steps=len(decisions))
        assert await env.next_request() is None
        return await env.score_task()

    return asyncio.run(go())


def test_bad_inputs_give_error_observations_and_zeros():
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    gold = env.task.payload["answers"]

    async def first():
        await env.next_request()
        r = await env.act(
            Decision(
                tool_calls=[
                    ToolCall(name="RestaurantSearch", arguments={"town": "Rockford"}),
                    ToolCall(name="Teleport", arguments={}),
                ]
            )
        )
        return r

    r = asyncio.run(first())
    assert [t.error for t in r.observation.tool_results] == [True, True] and not r.request_done
    assert "Error executing RestaurantSearch" in r.observation.tool_results[0].content
    env.k = -1  # restart the task

    emma_fix = travel_score.format_plan("Eric", gold[0])  # Emma's output also (re)submits Eric's plan
    scores = drive(
        env,
        [
            [Decision(message="Sorry, I cannot plan this.")],  # malformed plan
            [Decision(message=travel_score.format_plan("Emma", gold[1]) + "\n" + emma_fix)],  # revises Eric
            [Decision(tool_calls=[ToolCall(name="CitySearch", arguments={"state": "Illinois"})])],  # budget ran out
        ],
    )
    assert scores["subtask_correct"] == [1, 1, 0]  # Eric's plan came from Emma's output (last block wins)
    assert scores["persons"][2]["parsed"] is False and scores["outputs"][2] == ""
    assert scores["success"] == 0  # Liam ran and has no plan: upstream fails the group


def test_headerless_plan_switch():
    gold_text = "\n".join(
        travel_score.format_plan("Eric", bench().load_tasks()[0].payload["answers"][0]).splitlines()[1:]
    )
    assert bench().params["headerless_plan"] == "ignore"  # the default is upstream's: a headerless plan is no one's
    for mode, expect in (("current", 1), ("ignore", 0), (None, 0)):
        b = bench(headerless_plan=mode) if mode else bench()
        env = b.make_env(b.load_tasks()[0], EpisodeContext())
        scores = drive(env, [[Decision(message=gold_text)], [Decision(message="x")], [Decision(message="y")]])
        assert scores["subtask_correct"][0] == expect


def test_memory_record_keeps_the_raw_final_output():
    # upstream build_memory_entry: final_plan = the agent's reply as written (no header added)
    b = bench(headerless_plan="current")
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    headerless = "Day 1:\nDinner: Coco Bambu, Rockford"

    async def go():
        await env.next_request()
        await env.act(Decision(message=headerless))
        return await env.end_request(truncated=False, steps=1)

    out = asyncio.run(go())
    assert json.loads(out.memory_text)["final_plan"] == headerless
    assert env.outputs[0].startswith("=== Eric's Plan ===")  # the harness header is for scoring only


def test_missing_flights_only_breaks_flight_search(tmp_path):
    b = GroupTravel(
        name="t",
        db_dir=str(shared_path("memoryarena-travel-db")),
        flights_path=str(tmp_path / "f.csv"),
        data_dir="fixtures",
    )
    env = b.make_env(b.load_tasks()[0], EpisodeContext())

    async def go():
        await env.next_request()
        return await env.act(
            Decision(
                tool_calls=[
                    ToolCall(
                        name="FlightSearch",
                        arguments={"origin": "St. Petersburg", "destination": "Rockford", "date": "2022-03-16"},
                    ),
                    ToolCall(name="AttractionSearch", arguments={"city": "Rockford"}),
                ]
            )
        )

    res = asyncio.run(go()).observation.tool_results
    assert res[0].error and str(tmp_path / "f.csv") in res[0].content and not res[1].error
    assert b.notes()["flights_present"] is False


def test_metrics_pool_or_average_persons():
    p = lambda full: {"submitted": True, "full_pass": full, "constraint_slots": 1, "constraint_passed": int(full)}  # noqa: E731
    eps = [
        {"scores": {"persons": [p(True), p(False)], "subtask_correct": [1, 0]}},
        {"scores": {"persons": [p(True), p(True), p(True), p(False)], "subtask_correct": [1, 1, 1, 0]}},
    ]
    group = bench().metrics(eps)
    assert group["PS"] == pytest.approx(100 * (0.5 + 0.75) / 2) and group["PS_persons"] == pytest.approx(100 * 4 / 6)
    assert bench(ps_pooling="persons").metrics(eps)["PS"] == pytest.approx(100 * 4 / 6)
    assert group["Acc_1"] == 100.0 and group["Acc_2"] == 50.0 and group["SR"] == 0.0
    with pytest.raises(ValueError, match="persons"):
        bench(ps_pooling="tasks")


def test_a_submitted_wrong_plan_fails_the_group_and_counts_slots():
    b = bench()
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    gold, base = env.task.payload["answers"], env.base["daily_plans"]
    scores = drive(
        env,
        [
            [Decision(message=travel_score.format_plan("Eric", base))],  # ignores Eric's constraint
            [Decision(message=travel_score.format_plan("Emma", gold[1]))],
            [Decision(message=travel_score.format_plan("Liam", gold[2]))],
        ],
    )
    assert scores["subtask_correct"] == [0, 1, 1] and scores["success"] == 0
    assert scores["persons"][0] == {
        "submitted": True,
        "parsed": True,
        "full_pass": False,
        "constraint_slots": 1,
        "constraint_passed": 0,
    }
    assert scores["sps"] == pytest.approx((0 + 1 + 1) / 3)
