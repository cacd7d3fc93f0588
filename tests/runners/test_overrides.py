"""Per-kind overrides shared by PoS and its baselines."""

import pytest
from pydantic import Field, ValidationError

from kit.overrides import KindOverrides, deep_merge


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
    with pytest.raises(ValidationError, match="unknown task kind.*'alfworld_text'"):
        Cfg(kind_overrides={"alfworld_text": {"budget": 1}})
    assert deep_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}
