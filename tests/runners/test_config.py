"""Config validation and cell keys."""
import pytest
import yaml

from runners.config import CONF_DIR, ConfigError, validate


def base():
    load = lambda g, n: yaml.safe_load((CONF_DIR / g / f"{n}.yaml").read_text())  # noqa: E731
    return {"method": load("method", "full_context"), "backbone": load("backbone", "scripted"),
            "benchmark": load("benchmark", "memoryarena_math"), "runner": load("runner", "default")}


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


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r["runner"].update(concurrency=0), "runner.concurrency"),
    (lambda r: r["runner"].update(display="fancy"), "runner.display"),
    (lambda r: r["backbone"].update(kind="anthropic"), "backbone.kind"),
    (lambda r: r["backbone"].update(temprature=1), "unknown key"),
    (lambda r: r["backbone"].update(sampling={"temperature": 7}), "temperature"),
    (lambda r: r["method"].update(name="flowstat"), "available: "),
    (lambda r: r["method"].update(_target_="baselines.nope.Nope"), "cannot be imported"),
    (lambda r: r.update(roles={"judge": "gpt9"}), "unknown backbone 'gpt9'"),
    (lambda r: r.update(experiment={"grid": {"method": ["nope"]}}), "unknown method 'nope'"),
])
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
