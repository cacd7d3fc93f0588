"""Per-kind overrides shared by PoS and its baselines."""

import pytest
import yaml
from pydantic import Field

from kit.overrides import KindOverrides, deep_merge
from runners.api import Benchmark, register_task_kinds, task_kinds
from runners.config import CONF_DIR, ConfigError, validate
from runners.prepare import known_task_kinds, probe_method
from tests.runners.test_config import base


class Cfg(KindOverrides):
    model_config = {"extra": "forbid"}
    budget: int = 50
    sampling: dict = Field(default_factory=dict)


def test_the_kinds_override_merges_and_nested_maps_merge_by_key():
    c = Cfg(
        sampling={"agent": {"temperature": 0, "max_tokens": 4096}},
        kind_overrides={"alfworld": {"budget": 30, "sampling": {"agent": {"max_tokens": 512}}}, "rca": {"budget": 40}},
    )
    a = c.for_kind("alfworld")
    assert a.budget == 30 and a.sampling == {"agent": {"temperature": 0, "max_tokens": 512}}
    assert c.for_kind("tau").budget == 50 and c.for_kind("").budget == 50
    assert deep_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}


def pos_cell(kind_overrides):
    raw = base()
    raw["method"] = yaml.safe_load((CONF_DIR / "method" / "pos.yaml").read_text())
    raw["method"]["params"]["kind_overrides"] = kind_overrides
    return validate(raw)


def test_a_kind_no_benchmark_declares_is_an_error_before_any_work():
    with pytest.raises(ConfigError, match=r"unknown task kind\(s\) \['alfworld_text'\]; kinds are .*alfworld"):
        probe_method(pos_cell({"alfworld_text": {"max_actions_per_turn": 2}}))
    assert probe_method(pos_cell({"alfworld": {"max_actions_per_turn": 2}, "rca": {"task_mode": "diagnostic"}}))


def test_a_benchmark_declares_its_kinds_where_it_lives():
    """A benchmark defined anywhere (here: outside the project's benchmarks) declares its kind with
    its description when its class is defined; methods may then key settings by it. A kind means
    one thing: the same kind with another description is an error naming both."""
    assert "quiz_kind_test" not in known_task_kinds()

    class Quiz(Benchmark):
        task_kinds = {"quiz_kind_test": "one-word quiz (a benchmark of this test)"}

        def load_tasks(self):
            return []

        def make_env(self, task, ctx):
            raise NotImplementedError

        def metrics(self, episodes):
            return {}

    assert task_kinds()["quiz_kind_test"] == "one-word quiz (a benchmark of this test)"
    assert "alfworld" in known_task_kinds() and task_kinds()["alfworld"]  # every configured benchmark's
    assert probe_method(pos_cell({"quiz_kind_test": {"max_actions_per_turn": 2}}))
    with pytest.raises(ValueError, match="task kind 'quiz_kind_test' is declared by .*Quiz as .* and by elsewhere"):
        register_task_kinds({"quiz_kind_test": "something else"}, "elsewhere")
