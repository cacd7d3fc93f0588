"""The offline demo shows a difference: the default experiment's `scripted_noise` gives the
scripted backbone seeded mistakes, so Full Context and FlowState differ (still [scripted]), the
same on every run; a knob set on the command line wins; real backbones never get it."""

import csv
import os

import yaml

from runners.config import CONF_DIR, validate
from tests.runners.sweep_helpers import run_sweep
from tests.runners.test_config import base


def _headline(path):
    with open(path, newline="") as f:
        return {
            (r["method"], r["benchmark"], r["metric"]): r["value"]
            for r in csv.DictReader(f)
            if r["metric"] in ("SR", "PS")
        }


def test_the_demo_differs_between_methods_and_is_reproducible(tmp_path):
    noisy = {
        **os.environ,
        "HARNESS_DEMO_NOISE": "1",
    }  # the suite turns it off (tests/conftest.py); the demo as users run it
    p = run_sweep(tmp_path / "a", env=noisy)
    assert p.returncode == 0, p.stderr  # mistakes lower the scores; every episode still finishes
    assert "seeded noise malformed_rate=0.25, empty_rate=0.1" in p.stdout and "[scripted]" in p.stdout
    first = _headline(tmp_path / "a" / "offline_demo" / "tables" / "metrics.csv")
    fc = {k[1:]: v for k, v in first.items() if k[0] == "full_context"}
    fs = {k[1:]: v for k, v in first.items() if k[0] == "flowstate"}
    assert fc and fc.keys() == fs.keys() and fc != fs  # the methods differ
    assert any(float(v) < 100 for v in first.values())  # not 100 % everywhere
    summary = (tmp_path / "a" / "offline_demo" / "tables" / "summary.md").read_text()
    assert "Δ vs full_context" in summary and "SCRIPTED" in summary
    assert run_sweep(tmp_path / "b", env=noisy).returncode == 0
    assert _headline(tmp_path / "b" / "offline_demo" / "tables" / "metrics.csv") == first  # seeded: the same every run


def test_noise_is_for_the_scripted_backbone_only_and_the_command_line_wins(monkeypatch):
    monkeypatch.setenv("HARNESS_DEMO_NOISE", "1")
    noise = yaml.safe_load((CONF_DIR / "experiment" / "default.yaml").read_text())["experiment"]["scripted_noise"]
    raw = {**base(), "experiment": {"name": "x", "scripted_noise": noise}}
    assert validate(raw).backbone.scripted["malformed_rate"] == noise["malformed_rate"]
    raw = {**base(), "experiment": {"name": "x", "scripted_noise": noise}}
    raw["backbone"]["scripted"]["malformed_rate"] = 0.5
    assert validate(raw).backbone.scripted["malformed_rate"] == 0.5  # set on the command line: kept
    real = {
        **base(),
        "experiment": {"name": "x", "scripted_noise": noise},
        "backbone": yaml.safe_load((CONF_DIR / "backbone" / "gpt_4o.yaml").read_text()),
    }
    assert validate(real).backbone.scripted == {}  # a real backbone's cell key is untouched
    monkeypatch.setenv("HARNESS_DEMO_NOISE", "0")
    assert (
        validate({**base(), "experiment": {"name": "x", "scripted_noise": noise}}).backbone.scripted["malformed_rate"]
        == 0.0
    )


def test_the_documented_overrides_give_the_noiseless_demo(monkeypatch):
    # `experiment.scripted_noise={}` (conf/experiment/default.yaml, docs/running.md): Hydra merges `{}` into the
    # preset's mapping, which used to leave the noise on; `=null` was refused
    from hydra import compose, initialize_config_dir

    from runners.sweep import CONF_PATH, expand_cells, register_resolvers

    monkeypatch.setenv("HARNESS_DEMO_NOISE", "1")
    register_resolvers()
    for ov, rate in (([], 0.25), (["experiment.scripted_noise={}"], 0.0), (["experiment.scripted_noise=null"], 0.0)):
        with initialize_config_dir(config_dir=CONF_PATH, version_base="1.3"):
            cells = [validate(c) for c in expand_cells(compose(config_name="config", overrides=ov), ov)]
        assert len(cells) == 4 and {c.backbone.scripted.get("malformed_rate", 0.0) for c in cells} == {rate}, ov
