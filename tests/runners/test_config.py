"""Config validation and cell keys."""

import pytest
import yaml

from runners.config import CONF_DIR, ConfigError, validate


def base():
    load = lambda g, n: yaml.safe_load((CONF_DIR / g / f"{n}.yaml").read_text())  # noqa: E731
    return {
        "method": load("method", "full_context"),
        "backbone": load("backbone", "scripted"),
        "benchmark": load("benchmark", "memoryarena_math"),
        "runner": load("runner", "default"),
    }


def test_valid_config_and_stable_key():
    a, b = validate(base()), validate(base())
    assert a.key() == b.key() and a.cell_name.startswith("full_context__scripted__memoryarena_math__")


def test_runtime_knobs_do_not_change_the_key():
    a = validate(base())
    raw = base()
    raw["runner"].update(concurrency=64, trials=5, display="plain", limit=2)
    raw["backbone"]["scripted"]["latency_s"] = 0.5
    assert validate(raw).key() == a.key()


def test_semantic_changes_do_change_the_key():
    a = validate(base())
    raw = base()
    raw["method"]["params"]["max_resamples"] = 0
    assert validate(raw).key() != a.key()
    raw = base()
    raw["benchmark"]["params"]["judge_includes_question"] = True
    assert validate(raw).key() != a.key()


def test_the_seed_is_part_of_the_cell():
    """runner.seed seeds every episode (seed + trial): a run with another seed is another cell, never a
    resume of the first one's records."""
    keys = set()
    for seed in (0, 1, 2):
        raw = base()
        raw["runner"]["seed"] = seed
        cfg = validate(raw)
        keys.add(cfg.key())
        assert cfg.cell_name.endswith(cfg.key())
    assert len(keys) == 3


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r["runner"].update(concurrency=0), "runner.concurrency"),
        (lambda r: r["runner"].update(display="fancy"), "runner.display"),
        (lambda r: r["backbone"].update(kind="anthropic"), "backbone.kind"),
        (lambda r: r["backbone"].update(temprature=1), "unknown key"),
        (lambda r: r["backbone"].update(sampling={"temperature": 7}), "temperature"),
        (lambda r: r["method"].update(name="flowstat"), "available: "),
        (lambda r: r["method"].update(_target_="baselines.nope.Nope"), "cannot be imported"),
        (lambda r: r.update(roles={"judge": "gpt9"}), "unknown backbone 'gpt9'"),
        (lambda r: r.update(experiment={"grid": {"method": ["nope"]}}), "unknown method 'nope'"),
    ],
)
def test_bad_values_name_the_fix(mutate, message):
    raw = base()
    mutate(raw)
    with pytest.raises(ConfigError, match=message):
        validate(raw)


def test_role_backbone_by_name():
    raw = base()
    raw["roles"] = {"judge": "deepseek_v4_flash", "user_sim": None}
    cfg = validate(raw)
    assert cfg.roles.judge.model == "deepseek-v4-flash" and cfg.roles.user_sim is None
    assert cfg.key() != validate(base()).key()


def test_benchmark_params_are_typed_and_unknown_keys_name_the_valid_ones():
    raw = base()
    raw["benchmark"]["params"]["ps_pooling"] = "persons"  # a Travel parameter on Formal Reasoning
    with pytest.raises(
        ConfigError, match=r"benchmark 'memoryarena_math': unknown param 'ps_pooling' \(valid keys: .*reasoning_tool"
    ):
        validate(raw)
    raw = base()
    raw["benchmark"]["params"]["max_tool_iterations"] = "many"
    with pytest.raises(ConfigError, match="max_tool_iterations: Input should be a valid integer"):
        validate(raw)


def test_experiment_benchmark_params_reach_only_the_named_benchmark():
    raw = base()
    raw["experiment"] = {"benchmark_params": {"memoryarena_travel": {"ps_pooling": "persons"}}}
    assert "ps_pooling" not in validate(raw).benchmark.params  # math is untouched
    raw["benchmark"] = yaml.safe_load((CONF_DIR / "benchmark" / "memoryarena_travel.yaml").read_text())
    assert validate(raw).benchmark.params["ps_pooling"] == "persons"
    raw["experiment"] = {"benchmark_params": {"memoryarena_trvl": {}}}
    with pytest.raises(ConfigError, match="unknown benchmark 'memoryarena_trvl'"):
        validate(raw)


def test_a_method_file_whose_name_differs_names_the_file_and_the_fix(tmp_path, monkeypatch):
    # conf/method/mine.yaml with `name: wrongname` said "unknown method 'wrongname'" while listing `mine`
    import shutil

    import runners.config as rc

    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    text = (conf / "method" / "full_context.yaml").read_text().replace("name: full_context", "name: wrongname")
    (conf / "method" / "mine.yaml").write_text(text)
    monkeypatch.setattr(rc, "CONF_DIR", conf)
    rc.method_aliases.cache_clear()
    try:
        raw = base()
        raw["method"] = yaml.safe_load(text)
        with pytest.raises(ConfigError) as e:
            validate(raw)
    finally:
        rc.method_aliases.cache_clear()
    assert "conf/method/mine.yaml sets `name: wrongname`" in str(e.value)
    assert "Fix: set `name: mine` in conf/method/mine.yaml" in str(e.value)


def test_method_aliases_read_the_name_each_method_file_composes_to():
    # method_aliases reads `name` with PyYAML instead of composing every file with OmegaConf (every sweep
    # process asks it): the composed name, defaults included, of every file of every group.
    from runners.config import _composed_key, group_config, method_aliases

    for group in ("method", "benchmark", "backbone"):
        for p in sorted((CONF_DIR / group).glob("*.yaml")):
            assert _composed_key(group, p.stem, "name") == group_config(group, p.stem).get("name"), p
    assert method_aliases() == {"raw_trajectory": "full_context"}
