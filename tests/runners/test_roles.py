"""Benchmark-level role defaults (τ: user simulator and NL judge on gpt-4.1 as tau2; MemoryArena
formal: judge and `reasoning` tool on gpt-5-mini as upstream), their command-line overrides, the
scripted-agent rule, the missing-key error, and presets whose values survive composition."""

from __future__ import annotations

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runners.config import CONF_DIR, ConfigError, available, validate
from runners.pool import BackbonePool
from runners.sweep import expand_cells, register_resolvers


def composed(*overrides: str):
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
        return cfg, [validate(c) for c in expand_cells(cfg, list(overrides))]


def one(*overrides: str):
    _, cells = composed(*overrides)
    assert len(cells) == 1
    return cells[0]


def test_tau_roles_default_to_gpt_4_1_at_temperature_0():
    c = one("backbone=deepseek_v4_flash", "benchmark=tau_airline", "method=full_context")
    for role in ("user_sim", "judge"):
        b = getattr(c.roles, role)
        assert (
            b.model == "gpt-4.1-2025-04-14" and b.sampling["temperature"] == 0.0 and b.api_key_env == "OPENAI_API_KEY"
        )
        assert "tau_airline" in c.roles.origin[role]
    assert c.roles.tool is None


def test_memoryarena_formal_judge_and_tool_default_to_gpt_5_mini():
    c = one("backbone=deepseek_v4_flash", "benchmark=memoryarena_phys", "method=full_context")
    assert c.roles.judge.model == c.roles.tool.model == "gpt-5-mini" and c.roles.user_sim is None


def test_command_line_agent_means_the_agents_backbone():
    c = one("backbone=deepseek_v4_flash", "benchmark=tau_retail", "method=full_context", "roles.user_sim=agent")
    assert c.roles.user_sim is None and c.roles.judge.model == "gpt-4.1-2025-04-14"
    c = one("backbone=deepseek_v4_flash", "benchmark=tau_retail", "method=full_context", "roles.judge=qwen3_5_397b")
    assert c.roles.judge.name == "qwen3_5_397b"


def test_scripted_agent_keeps_every_role_on_the_agent_unless_named():
    c = one("benchmark=tau_airline", "method=full_context")
    assert c.roles.user_sim is c.roles.judge is c.roles.tool is None
    c = one("benchmark=tau_airline", "method=full_context", "roles.judge=gpt_4_1")
    assert c.roles.judge.name == "gpt_4_1"


def test_missing_key_of_a_role_backbone_fails_before_work_naming_variable_and_override(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-x")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    c = one("backbone=deepseek_v4_flash", "benchmark=tau_airline", "method=full_context")
    with pytest.raises(ConfigError) as e:
        BackbonePool(None).prepare([c])
    assert "OPENAI_API_KEY" in str(e.value) and "roles.user_sim=agent" in str(e.value)
    BackbonePool(None).prepare(
        [
            one(
                "backbone=deepseek_v4_flash",
                "benchmark=tau_airline",
                "method=full_context",
                "roles.user_sim=agent",
                "roles.judge=agent",
            )
        ]
    )


def test_unknown_role_is_an_error():
    with pytest.raises(ConfigError, match="configurable roles"):
        one("benchmark=tau_airline", "method=full_context", "+roles.jduge=gpt_4_1")


def test_role_choice_is_part_of_the_cell_key():
    a = one("backbone=deepseek_v4_flash", "benchmark=tau_airline", "method=full_context")
    b = one("backbone=deepseek_v4_flash", "benchmark=tau_airline", "method=full_context", "roles.user_sim=agent")
    assert a.key() != b.key()


def _leaves(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict) and v:
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


@pytest.mark.parametrize("preset", available("experiment"))
def test_every_preset_value_survives_composition(preset):
    raw = yaml.safe_load((CONF_DIR / "experiment" / f"{preset}.yaml").read_text())
    overrides = [d for d in raw.pop("defaults", []) if isinstance(d, dict)]
    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        # the preset's composed config only: its cells are composed and validated by
        # tests/runners/test_presets.py::test_preset_cells_validate (a Hydra compose per cell)
        cfg = compose(config_name="config", overrides=[f"experiment={preset}"])
    plain = OmegaConf.to_container(cfg, resolve=False)
    for key, value in _leaves(raw):
        node = plain
        for part in key.split("."):
            node = node[part]
        assert node == value, f"{preset}: {key} = {node!r}, the preset sets {value!r}"
    for d in overrides:
        for group, name in d.items():
            group = group.split("/")[-1].replace("override ", "")
            assert cfg[group.strip("/ ")].name == name, f"{preset}: {group}"


def test_preset_roles_reach_the_cells():
    _, cells = composed("experiment=pos_table1", "benchmark=clindiag", "method=pos")
    assert cells[0].roles.judge.name == cells[0].roles.user_sim.name == "qwen3_7_plus"


def test_tau_preset_reports_flowstate_in_both_user_turn_modes():
    _, cells = composed("experiment=flowstate_table2_tau", "benchmark=tau_airline")
    modes = {c.method.params.get("user_turn_mode") for c in cells if c.method.target == "flowstate.FlowState"}
    assert modes == {"request", "observation"}
