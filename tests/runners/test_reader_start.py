"""A reader's fixed start (aggregate, view): method aliases read without composing every method
config in OmegaConf, and the configs listed without importing Hydra when no Hydra app runs."""

import subprocess
import sys
from pathlib import Path

from runners import config


# Every real method file's composed name against OmegaConf's: tests/runners/test_config.py.


def test_the_last_default_that_sets_the_name_wins(tmp_path, monkeypatch):
    g = tmp_path / "method"
    g.mkdir()
    (g / "base.yaml").write_text("name: base\n_target_: x.Y\n")
    (g / "after.yaml").write_text("defaults: [base, _self_]\nname: after\n")
    (g / "before.yaml").write_text("defaults: [_self_, base]\nname: before\n")
    (g / "alias.yaml").write_text("defaults: [base]\n")
    (g / "none.yaml").write_text("params: {}\n")
    monkeypatch.setattr(config, "CONF_DIR", tmp_path)
    for name, want in [("after", "after"), ("before", "base"), ("alias", "base"), ("none", None)]:
        assert config._composed_key("method", name, "name") == want
        assert config.group_config("method", name).get("name") == want


def test_a_reader_imports_neither_hydra_nor_omegaconf_for_the_method_names():
    code = (
        "import sys; from runners.config import available, canonical_method; "
        "assert 'full_context' in available('method'); assert canonical_method('raw_trajectory') == 'full_context'; "
        "print(sorted(m for m in ('hydra', 'omegaconf') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
