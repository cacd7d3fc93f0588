"""Ablation configs inherit their base through Hydra defaults and differ only in their switches."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runners.config import CONF_DIR, group_config

ABLATIONS = {  # ablation -> (base, the exact difference as flattened key -> value)
    "pos_no_trapping": (
        "pos",
        {
            "name": "pos_no_trapping",
            "params.trapping.enabled": False,
            "params.recovery.enabled": False,
            "params.release_run_config": "pos_no_trapping",  # the release's own run config for this ablation
        },
    ),
    "pos_no_consistency": (
        "pos",
        {
            "name": "pos_no_consistency",
            "params.sentinel.consistency_enabled": False,
            "params.release_run_config": "pos_no_consistency",  # the release's own run config for this ablation
        },
    ),
    "pos_generic_recovery": ("pos", {"name": "pos_generic_recovery", "params.recovery.mode": "generic"}),
    "flowstate_no_psa": ("flowstate", {"name": "flowstate_no_psa", "_target_": "flowstate.FlowStateNoPSA"}),
    "flowstate_no_isu": (
        "flowstate",
        {
            "name": "flowstate_no_isu",
            "_target_": "flowstate.FlowStateNoISU",
            "params.rule_node_type": "judgements",
            "params.rule_summary_chars": 200,
            "params.rule_relation": "supports",
            "params.carry_trajectory": True,
            "params.repeat_query_in_history": False,
        },
    ),
}


def flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out |= flat(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


@pytest.mark.parametrize("name", sorted(ABLATIONS))
def test_ablation_is_its_base_plus_exactly_its_difference(name):
    base, diff = ABLATIONS[name]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        composed = OmegaConf.to_container(compose(config_name="config", overrides=[f"method={name}"]).method)
    assert composed == group_config("method", name)  # the test helper composes as Hydra does
    a, b = flat(composed), flat(group_config("method", base))
    changed = {k: v for k, v in a.items() if b.get(k, object()) != v}
    assert changed == diff and set(b) <= set(a)
