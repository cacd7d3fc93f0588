"""Per-benchmark overrides shared by PoS and its baselines."""
from pydantic import Field

from kit.overrides import BenchmarkOverrides, deep_merge


class Cfg(BenchmarkOverrides):
    model_config = {"extra": "forbid"}
    budget: int = 50
    sampling: dict = Field(default_factory=dict)


def test_matching_patterns_merge_in_yaml_order_and_nested_maps_merge_by_key():
    c = Cfg(sampling={"agent": {"temperature": 0, "max_tokens": 4096}},
            benchmark_overrides={"alf*": {"budget": 30, "sampling": {"agent": {"max_tokens": 512}}}, "alfworld": {"budget": 40}})
    a = c.for_benchmark("alfworld")
    assert a.budget == 40 and a.sampling == {"agent": {"temperature": 0, "max_tokens": 512}}
    assert c.for_benchmark("tau_airline").budget == 50
    assert deep_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}
