"""ALFWorld through the real TextWorld engine: walkthrough replay, the exact-match rule, the
budget, ReAct clean-ups on live text, and full scripted episodes (docs/alfworld.md §3, §6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from baselines.full_context import FullContext
from benchmarks.alfworld.benchmark import Alfworld
from benchmarks.alfworld.data import TASK_TYPES
from benchmarks.alfworld.replay import main as replay_main
from benchmarks.alfworld.replay import play
from runners.api import Decision, EpisodeContext, ToolCall
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.alfworld.conftest import needs_engine

pytestmark = [pytest.mark.alfworld, needs_engine]


def act(cmd: str) -> Decision:
    return Decision(tool_calls=[ToolCall(name="act", arguments={"command": cmd}, id="c1")])


@pytest.fixture(scope="module")
def tasks(alf_root):
    """The smallest game file of each task type (small problems ground fastest)."""
    first = {}
    for t in sorted(
        Alfworld(data_dir=str(alf_root)).load_tasks(), key=lambda t: Path(t.payload["path"]).stat().st_size
    ):
        first.setdefault(t.payload["task_type"], t)
    return first


async def test_walkthrough_wins_one_game_per_task_type(tasks):
    """Four types here; heat is won by the scripted episode below, pick-two in put syntax."""
    assert set(tasks) == set(TASK_TYPES)
    for ttype in (
        "pick_and_place_simple",
        "pick_clean_then_place_in_recep",
        "pick_cool_then_place_in_recep",
        "look_at_obj_in_light",
    ):
        row = await play(tasks[ttype], {})
        assert row["won"], row
        assert 3 <= row["steps"] <= 9 and "invalid_actions" not in row


async def test_walkthrough_wins_in_put_syntax(tasks):
    row = await play(tasks["pick_two_obj_and_place"], {"syntax": "put"})
    assert row["won"] and row["steps"] >= 4


async def test_release_adapter_sends_the_task_sentence_and_raw_engine_text(tasks):
    """The PoS release's adapter (default): task = the sentence after "Your task is to:", the reset text
    (banner included) is the first observation, every observation is the engine's text as is."""
    env = Alfworld().make_env(tasks["pick_and_place_simple"], EpisodeContext())
    req = await env.next_request()
    assert req.observation is not None and req.observation.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert req.text == req.goal == req.observation.split("Your task is to:", 1)[1].strip()
    first = env.walkthrough[0]
    reply = await env.act(act(f"think: I should {first}"))
    assert reply.observation.note != "OK."  # no ReAct think rule: the engine answers
    reply = await env.act(act(first))
    assert reply.observation.note.startswith("You arrive at ")  # not stripped


async def test_exact_rule_wrong_case_changes_nothing_and_clean_ups_apply(tasks):
    env = Alfworld(adapter="project", clean_observations=True).make_env(
        tasks["pick_and_place_simple"], EpisodeContext()
    )
    req = await env.next_request()
    assert req.text.startswith("You are in the middle of a room.") and "\nYour task is to: " in req.text
    assert "Welcome to TextWorld" not in req.text
    before = list(env.admissible)
    first = env.walkthrough[0]
    assert first.startswith("go to ")
    reply = await env.act(act(first.capitalize()))
    assert reply.observation.note == "Nothing happens." and not reply.request_done
    assert env.admissible == before and env.actions == 1
    reply = await env.act(act(f"think: I should {first}"))
    assert reply.observation.note == "OK."
    reply = await env.act(act(first))  # arrival sentence stripped (ReAct-identical text)
    target = first[len("go to ") :]
    assert not reply.observation.note.startswith("You arrive at") and target in reply.observation.note
    reply = await env.act(Decision(tool_calls=[ToolCall(name="teleport", arguments={})]))
    assert "Unknown tool" in reply.observation.note
    scores = await env.score_task()
    assert scores["actions"] == 3 and scores["invalid_actions"] == 1 and scores["idle_turns"] == 1
    assert scores["issues"] == {"case": 1, "think": 1, "unknown_tool": 1} and scores["success"] == 0


async def test_lenient_matching_plays_the_admissible_string(tasks):
    env = Alfworld(lenient_match=True, show_admissible=True).make_env(tasks["look_at_obj_in_light"], EpisodeContext())
    req = await env.next_request()
    assert req.actions == env.admissible and env.walkthrough[0] in env.admissible
    reply = await env.act(Decision(message="> " + env.walkthrough[0].upper()))  # message_as_command
    assert not reply.observation.note.startswith("Nothing happens.") and env._wt == 1
    assert reply.observation.actions == env.admissible and "Available actions" not in reply.observation.note
    assert (await env.score_task())["issues"] == {"prompt_prefix": 1}


async def test_nothing_is_stepped_after_won(tasks):
    """Pitfall 9: after `won` further commands would still "work"; the env must not step them."""
    env = Alfworld().make_env(tasks["look_at_obj_in_light"], EpisodeContext())
    await env.next_request()
    for cmd in env.walkthrough:
        reply = await env.act(act(cmd))
    assert reply.request_done and env.won and env.actions == len(env.walkthrough)
    after = await env.act(act("look"))
    assert after.request_done and after.observation.is_empty and env.actions == len(env.walkthrough)
    assert (await env.score_task())["success"] == 1


async def run(bench, task, **backbone):
    bb = ScriptedBackbone(**backbone)
    ep = Episode(bb, cell="alf", task_id=task.task_id)
    return await ep.run(ep.make_env(bench, task), FullContext(ep.agent))


async def test_scripted_full_context_episodes_win_concurrently(tasks):
    """Two episodes in flight at once (the sweep runs several; the engine is not thread-safe)."""
    bench = Alfworld()
    task = tasks["pick_heat_then_place_in_recep"]
    rec, other = await asyncio.gather(run(bench, task), run(bench, tasks["pick_two_obj_and_place"]))
    assert other.status == "ok" and other.scores["success"] == 1, other.error
    assert rec.status == "ok", rec.error
    assert rec.scores["success"] == 1 and rec.scripted
    steps = rec.requests[0].steps
    walk = json.loads(open(task.payload["path"]).read())["walkthrough"]
    assert [s.decision.tool_calls[0].arguments["command"] for s in steps] == walk
    assert rec.requests[0].outcome["truncated"] is False
    assert rec.usage_by_role["agent"].total > 0
    m = bench.metrics([rec.model_dump()])
    assert m["SR"] == 100.0 and m["SR_pick_heat_then_place_in_recep"] == 100.0


async def test_budget_ends_an_unfinished_episode(tasks):
    task = tasks["pick_two_obj_and_place"]
    rec = await run(Alfworld(max_steps=3), task)
    assert rec.status == "ok" and rec.scores["success"] == 0 and rec.scores["actions"] == 3
    assert rec.requests[0].outcome["truncated"] is True and len(rec.requests[0].steps) == 3


async def test_malformed_output_spends_a_turn_without_an_engine_step(tasks):
    rec = await run(Alfworld(max_steps=2), tasks["look_at_obj_in_light"], malformed_rate=1.0)
    assert rec.status == "ok" and rec.scores["actions"] == 0 and rec.scores["idle_turns"] == 2


def test_replay_command_prints_rows_and_summary(alf_root, capsys):
    rc = replay_main(["--data", str(alf_root), "--limit", "1"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rc == 0 and len(lines) == 2
    assert set(lines[0]) == {"game", "task_type", "won", "steps"} and lines[0]["won"] is True
    assert lines[-1]["summary"] and lines[-1]["won"] == 1 and lines[-1]["games"] == 1


async def test_closed_games_hand_their_engine_to_the_next(tasks):
    from benchmarks.alfworld.data import read_game
    from benchmarks.alfworld.engine import Game

    a, b = (read_game(Path(tasks[t].payload["path"])) for t in ("look_at_obj_in_light", "pick_and_place_simple"))
    g1 = Game(a)
    g1.reset()
    engine_a = g1._env
    g1.close()
    with pytest.raises(RuntimeError, match="before reset or after close"):
        g1.step("look")
    g2 = Game(b)
    assert g2._env is engine_a
    frame = g2.reset()
    assert "Your task is to: put" in frame.feedback
    for cmd in b["walkthrough"]:
        frame = g2.step(cmd)
    assert frame.won
    g2.close()
