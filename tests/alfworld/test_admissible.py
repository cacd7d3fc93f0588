"""Conformance: on a real ALFWorld game the policy prompt of every step lists that step's
admissible commands (upstream PoS adapter.py passes `infos["admissible_commands"]`, and
`build_belief_prompt` lists them every turn), for PoS and for the baselines; the switch
`show_admissible: false` removes the list."""

from __future__ import annotations

from runners.config import group_config

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml

from benchmarks.alfworld.data import discover
from benchmarks.alfworld.env import AlfworldEnv
from runners.api import Backbone, EpisodeContext, Message, Observation, Protocol, TaskSpec
from runners.backbones.scripted import ScriptedBackbone
from runners.config import import_target
from runners.episode import Episode
from tests.alfworld.conftest import needs_engine

REPO = Path(__file__).resolve().parents[2]
GAME = "pick_and_place_simple-AlarmClock-None-Desk-307/trial_T20190907_072303_146844"


class Spy(Backbone):
    """The scripted backbone, recording each agent call's prompt next to the env's admissible list then."""

    def __init__(self, env_box: list[Any], inner: Backbone | None = None, seen: list | None = None) -> None:
        self.inner, self.env_box = inner or ScriptedBackbone(), env_box
        self.seen: list = seen if seen is not None else []
        self.name, self.model = self.inner.name, self.inner.model

    def bind(self, scope):
        return Spy(self.env_box, self.inner.bind(scope), self.seen)

    async def complete(
        self, messages: list[Message], *, role: str, protocol: Protocol | None = None, attempt: int = 0, **s: Any
    ):
        if role == "agent":
            self.seen.append((json.dumps(messages, ensure_ascii=False), list(self.env_box[0].admissible)))
        return await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **s)


def _play(alf_root: Path, method: str, steps: int = 3, **bench_over: Any) -> tuple[Any, Spy]:
    from benchmarks.alfworld.benchmark import Alfworld

    bparams = yaml.safe_load((REPO / "conf/benchmark/alfworld.yaml").read_text())["params"]
    bparams |= {"data_dir": str(alf_root), "verify": "off", "max_steps": steps, **bench_over}
    bench = Alfworld(name="alfworld", **bparams)
    tasks = [t for t in bench.load_tasks() if t.task_id == GAME] or bench.load_tasks()[:1]
    mcfg = group_config("method", method)
    box: list[Any] = []
    spy = Spy(box)
    ep = Episode(spy, cell=method, task_id=tasks[0].task_id)
    env = ep.make_env(bench, tasks[0])
    box.append(env)
    m = import_target(mcfg["_target_"], "method")(backbone=ep.agent, **mcfg.get("params", {}))
    rec = asyncio.run(ep.run(env, m))
    return rec, spy


def _check_lists(spy: Spy) -> None:
    assert len(spy.seen) >= 3
    for prompt, admissible in spy.seen:
        assert admissible, "the game offers commands at every step before the win"
        # upstream's form: the JSON list of the step's admissible commands, in the engine's order
        assert json.dumps(json.dumps(admissible, ensure_ascii=False), ensure_ascii=False)[1:-1] in prompt
    assert len({json.dumps(a) for _, a in spy.seen}) > 1  # this step's list, not the first step's


@needs_engine
def test_pos_policy_prompt_lists_this_steps_admissible_commands(alf_root):
    rec, spy = _play(alf_root, "pos")
    assert rec.status == "ok", rec.error
    _check_lists(spy)
    request = rec.requests[0].request
    # goal.user_input is the task sentence alone; the room is the first observation and turn 1 shows it
    assert request.goal and "Your task is to" not in request.goal and request.text.endswith(request.goal)
    assert "You are in the middle of a room" in spy.seen[0][0]
    init = rec.requests[0].steps[0].method["update"]
    assert init["step"] == -1


@needs_engine
def test_baseline_policy_prompts_list_this_steps_admissible_commands(alf_root):
    for method in ("full_context", "zipact"):
        rec, spy = _play(alf_root, method)
        assert rec.status == "ok", rec.error
        _check_lists(spy)


def test_show_admissible_switch(alf_root):
    """Default on (upstream); `show_admissible: false` sends no list. No engine needed."""
    g = discover(alf_root, "valid_unseen", ["pick_and_place_simple"])[0]
    spec = TaskSpec(
        task_id=g.id,
        payload={
            "path": str(g.path),
            "root": str(alf_root),
            "task_type": g.task_type,
            "task_key": g.task_key,
            "sha256": g.sha256,
        },
    )
    on, off = AlfworldEnv(spec, EpisodeContext(), {}), AlfworldEnv(spec, EpisodeContext(), {"show_admissible": False})
    for env in (on, off):
        env.admissible = ["look", "go to desk 1"]
    assert on._actions() == ["look", "go to desk 1"] and off._actions() is None
    assert Observation(note="x", actions=on._actions()).as_text() == 'x\nAvailable actions: ["look", "go to desk 1"]'
    assert Observation(note="x", actions=off._actions()).as_text(actions=False) == "x"
    assert Observation(note="x", actions=off._actions()).as_text() == "x"
