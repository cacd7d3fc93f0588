"""Smaller facts of PoS's policy prompt as upstream's `build_belief_prompt` writes them: no gap is
shown as `null`, tool schemas are serialised compactly, the step's valid actions are listed, and
upstream's format example of the task kind (read at run time) comes first when switched on."""

from __future__ import annotations

import ast
import asyncio
import json

from pos.method import PoS
from runners.api import Observation, Request
from tests.conftest import upstream_src
from tests.pos.helpers import TASK, QueueBackbone, act


def policy_prompt(task=TASK, obs=Observation(note="You see a drawer 1."), init_reply=None, **params):
    replies = {"pos-policy": [act("look")]}
    if init_reply is not None:
        replies["pos-init"] = [init_reply]
    bb = QueueBackbone(replies)

    async def go():
        m = PoS(bb, **params)
        await m.begin_task(task)
        await m.begin_request(Request(index=0, request_id="toy-1/q1", text="Find the key."))
        await m.step(obs)
        return m

    m = asyncio.run(go())
    msgs = next(msgs for _, p, msgs in bb.calls if p == "pos-policy")
    return m, msgs[0]["content"], msgs[1]["content"]


def test_no_gap_is_null_and_tools_are_compact():
    no_gaps = {
        "goal_specification": "key found",
        "entities": [],
        "states": [],
        "relations": [],
        "epistemic_gaps": [],
        "achievement_gaps": [],
        "frontier": None,
    }
    _, system, user = policy_prompt(init_reply=no_gaps)
    assert "<active_gap>\nnull\n</active_gap>" in user
    assert (
        json.dumps([t.openai_schema() for t in TASK.tools], ensure_ascii=False) in system
    )  # upstream: json.dumps(schemas)


def test_valid_actions_are_listed_for_the_policy_only():
    m, _, user = policy_prompt(obs=Observation(note="You see a drawer 1.", actions=["look", "open drawer 1"]))
    assert '<available_actions>\n["look", "open drawer 1"]\n</available_actions>' in user
    assert m.raw[0]["observation"] == "You see a drawer 1."  # the belief model's evidence has no action list


def test_upstream_format_example_by_kind():
    path = upstream_src() / "PoS@506558c48565317569e117c40feeb6eb57313305/prompts/react_prompt.py"
    consts = {
        n.targets[0].id: n.value.value
        for n in ast.parse(path.read_text()).body
        if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Constant)
    }
    task = TASK.model_copy(update={"kind": "alfworld"})
    _, _, user = policy_prompt(task=task)  # the release's layout: the example first, as build_belief_prompt puts it
    assert user.startswith(consts["ALFWORLD_EXAMPLE"] + "\n")
    _, _, off = policy_prompt(task=task, policy_format_example=False)
    assert consts["ALFWORLD_EXAMPLE"] not in off
    _, _, user = policy_prompt(task=task, policy_prompt="project")  # the project's layout keeps it as a block
    assert user.startswith("<format_example>\n" + consts["ALFWORLD_EXAMPLE"].strip() + "\n</format_example>")
    _, _, off = policy_prompt(task=task, policy_format_example=False, policy_prompt="project")
    assert "format_example" not in off
    _, _, rca = policy_prompt(
        task=TASK.model_copy(update={"kind": "rca"}), policy_format_example=True, policy_prompt="project"
    )
    assert "format_example" not in rca  # upstream's PoS prompt has no RCA-100 example
    notes = PoS.notes({"policy_format_example": True, "policy_prompt": "project"})["text_sources"]
    examples = {k for k in notes["prompts"] if k.startswith("pos.format_example.")}
    assert notes["paraphrased"] == [] and examples == {
        f"pos.format_example.{k}" for k in ("alfworld", "loca", "clindiag")
    }
