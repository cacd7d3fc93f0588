"""The shortcuts through Hydra's start (runners/hydra_shortcuts.py). Config files parsed once per
process: every preset composes to the same config as with omegaconf's own loader, an edited file is
read afresh, a broken file fails as before, and no two compositions share a node. The mode probe
skipped only where nothing can set the mode, a `-m` sweep the same either way."""

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runners import hydra_shortcuts
from runners.config import CONF_DIR, available
from runners.sweep import register_resolvers


@pytest.fixture
def original_load():
    register_resolvers()  # installs the cache (the sweep's start does the same)
    assert hydra_shortcuts._ORIGINAL, "register_resolvers did not install the parsing cache"
    return hydra_shortcuts._ORIGINAL[0]


def _composed(overrides):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=False)


def test_every_preset_composes_to_what_omegaconfs_own_loader_gives(original_load, monkeypatch):
    cases = [[f"experiment={p}"] for p in available("experiment")] + [["method=flowstate", "benchmark=tau_airline"]]
    cached = [_composed(o) for o in cases]
    again = [_composed(o) for o in cases]  # every file a second time: from the cache
    assert hydra_shortcuts._PARSED, "the compositions did not go through the cache"
    monkeypatch.setattr(OmegaConf, "load", staticmethod(original_load))
    plain = [_composed(o) for o in cases]
    assert cached == plain and again == plain


def test_an_edited_file_is_parsed_afresh_and_results_share_nothing(original_load, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("a: 1\nb: {c: [1, 2]}\n")
    first = OmegaConf.load(f)
    first.b.c.append(3)  # a caller that edits its config changes nothing the next load gives
    with open(f) as fh:  # an open file (what Hydra's sources pass) reads the same
        assert OmegaConf.to_container(OmegaConf.load(fh)) == {"a": 1, "b": {"c": [1, 2]}}
    f.write_text("a: 2\n")
    assert OmegaConf.to_container(OmegaConf.load(f)) == {"a": 2}
    f.write_text("")  # an empty file is an empty config, as omegaconf makes it
    assert OmegaConf.to_container(OmegaConf.load(f)) == {} == OmegaConf.to_container(original_load(f))


def test_a_broken_file_fails_as_before_naming_it(original_load, tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(yaml.YAMLError) as ours:
        OmegaConf.load(f)
    with pytest.raises(yaml.YAMLError) as theirs:
        original_load(f)
    assert str(ours.value) == str(theirs.value) and "broken.yaml" in str(ours.value)
    f.write_text("a: 1\na: 2\n")  # omegaconf's loader refuses a key given twice; so does the cache's
    with pytest.raises(Exception) as ours_dup:
        OmegaConf.load(f)
    with pytest.raises(Exception) as theirs_dup:
        original_load(f)
    assert type(ours_dup.value) is type(theirs_dup.value) and str(ours_dup.value) == str(theirs_dup.value)
    assert not any("a: 1\na: 2" in t for t in hydra_shortcuts._PARSED)


def test_switched_off_leaves_hydra_as_it_is(monkeypatch):
    monkeypatch.setenv("HARNESS_HYDRA_SHORTCUTS", "0")
    monkeypatch.setattr(hydra_shortcuts, "_ORIGINAL", [])
    before = OmegaConf.load
    assert hydra_shortcuts.install() is False
    assert OmegaConf.load is before
    assert hydra_shortcuts.skip_mode_probe([], CONF_DIR) is False  # Hydra's own probe of hydra.mode stays


def test_what_the_cache_keeps_is_never_changed_by_a_composition(original_load):
    for o in [[], ["experiment=pos_table1"], ["method=pos", "benchmark=alfworld"]]:
        config = _composed(o)
        config["experiment"]["name"] = "changed"  # the caller's copy only
    assert hydra_shortcuts._PARSED
    from omegaconf._utils import get_yaml_loader

    for text, parsed in hydra_shortcuts._PARSED.items():
        assert parsed == yaml.load(text, Loader=get_yaml_loader())


def test_the_mode_probe_is_skipped_only_where_nothing_can_set_the_mode(tmp_path, monkeypatch):
    from hydra._internal.hydra import Hydra

    from runners.hydra_shortcuts import skip_mode_probe

    monkeypatch.setattr(Hydra, "get_mode", Hydra.get_mode)  # restored after the test
    for argv in (["hydra.mode=MULTIRUN"], ["--config-dir", "x"], ["-cd=x"], ["+hydra.searchpath=[file://x]"]):
        assert skip_mode_probe(argv, CONF_DIR) is False, argv
    own = tmp_path / "conf"
    (own / "experiment").mkdir(parents=True)
    (own / "config.yaml").write_text("hydra:\n  help: {app_name: x}\n")
    (own / "experiment" / "multi.yaml").write_text("# @package _global_\nhydra: {mode: MULTIRUN}\n")
    assert skip_mode_probe([], own) is False  # a config that sets the mode: Hydra reads it
    # the project's own configs set no mode (a change that adds one keeps Hydra's probe, by the check above)
    assert skip_mode_probe(["method=flowstate", "-m"], CONF_DIR) is True
    assert Hydra.get_mode(object(), "config", []) is None


def test_a_sweep_with_the_probe_skipped_runs_as_before(tmp_path):
    """The same plan of a `-m` sweep (the grid launcher) with and without the shortcuts."""
    from tests.runners.sweep_helpers import run_sweep

    outs = {}
    for on in ("1", "0"):
        args = ("method=full_context,flowstate", "benchmark=toy", "runner.plan=true", "-m")
        p = run_sweep(tmp_path / on, *args, env={"HARNESS_HYDRA_SHORTCUTS": on})
        assert p.returncode == 0, p.stderr[-2000:]
        outs[on] = p.stdout.replace(str(tmp_path / on), "OUT")
    assert outs["1"] == outs["0"] and "full_context" in outs["1"] and "flowstate" in outs["1"]
