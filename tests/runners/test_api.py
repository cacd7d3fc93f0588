"""The contract package: roles, #Tok, the episode scope handed to the scripted backbone."""
from __future__ import annotations

import asyncio

import pytest

import runners.api as api
from runners.api import Decision, EpisodeScope, Usage, method_tokens
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode


def test_public_names_resolve_and_nothing_private_leaks():
    assert all(hasattr(api, n) for n in api.__all__)
    assert not any(n.startswith("current_") for n in dir(api))  # no contextvar channels


def test_tok_counts_method_roles_only():
    by_role = {"agent": Usage(prompt_tokens=10, completion_tokens=5), "state": {"prompt_tokens": 3, "completion_tokens": 1},
               "judge": Usage(prompt_tokens=1000, completion_tokens=1000), "user_sim": 777, "tool": 2}
    assert method_tokens(by_role) == 21
    with pytest.raises(ValueError, match="unknown call role.*'agnet'"):
        method_tokens({"agnet": 5})


class _Oracle(api.Oracle):
    def reference(self, role, messages):
        return Decision(message=f"{role}:{messages[-1]['content']}")


def test_scripted_backbone_answers_only_from_the_scope_it_is_bound_to():
    bb = ScriptedBackbone()
    msgs = [{"role": "user", "content": "x"}]
    assert asyncio.run(bb.complete(msgs, role="agent")).text == ""  # unbound: no oracle
    bound = bb.bind(EpisodeScope(oracle=_Oracle()))
    assert asyncio.run(bound.complete(msgs, role="judge")).text == "judge:x"


def test_episode_owns_sink_aliases_and_context():
    ep = Episode(ScriptedBackbone(), judge=ScriptedBackbone(name="j"), cell="c", task_id="t", trial=2, seed=5)
    assert ep.ctx.backbone("agent") is ep.agent and ep.ctx.backbone("tool") is ep.agent
    assert ep.ctx.backbone("user_sim") is ep.agent and ep.ctx.backbone("judge") is not ep.agent
    assert (ep.ctx.trial, ep.ctx.seed, ep.scope.key) == (2, 5, "c/t/2")
    ep.attach(_Oracle())
    asyncio.run(ep.ctx.backbone("judge").complete([{"role": "user", "content": "q"}], role="judge"))
    assert [c.role for c in ep.sink] == ["judge"]
    with pytest.raises(ValueError, match="unknown call role"):
        asyncio.run(ep.agent.complete([{"role": "user", "content": "q"}], role="planner"))
