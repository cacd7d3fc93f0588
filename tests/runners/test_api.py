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
    by_role = {
        "agent": Usage(prompt_tokens=10, completion_tokens=5),
        "state": {"prompt_tokens": 3, "completion_tokens": 1},
        "judge": Usage(prompt_tokens=1000, completion_tokens=1000),
        "user_sim": 777,
        "tool": 2,
    }
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


def test_every_benchmark_declares_its_metrics_and_table_columns():
    """Each conf/benchmark entry's class declares its metrics (the tables read nothing else), with
    at least one table column, and names no metric twice."""
    from runners.config import CONF_DIR, available, import_target
    import yaml

    for name in available("benchmark"):
        cls = import_target(
            yaml.safe_load((CONF_DIR / "benchmark" / f"{name}.yaml").read_text())["_target_"], "benchmark"
        )
        names = [s.name for s in cls.metric_specs]
        assert any(s.table for s in cls.metric_specs), name
        assert len(names) == len(set(names)), name


def test_metric_spec_families_and_exact_names():
    specs = (
        api.MetricSpec(name="pass^1"),
        api.MetricSpec(name="pass^*", table=True),
        api.MetricSpec(name="n", kind="count"),
    )
    assert api.find_spec(specs, "pass^1") is specs[0] and api.find_spec(specs, "pass^3") is specs[1]
    assert api.find_spec(specs, "n").kind == "count" and api.find_spec(specs, "pass") is None
    with pytest.raises(ValueError):
        api.MetricSpec(name="x", kind="percent")


def test_read_path_takes_the_last_list_element_that_has_the_rest():
    log = {"health": None, "actions": [{"health": {"h": 0.5}}, {"update": 1}], "belief": {"world": {"a": 1}}}
    assert api.read_path(log, "belief.world.a") == 1 and api.read_path(log, "actions.health.h") == 0.5
    assert api.read_path(log, ("health.h", "actions.health.h")) == 0.5 and api.read_path(log, "missing.key") is None
    assert api.read_path({"xs": [1, 2]}, "xs") == [1, 2]
