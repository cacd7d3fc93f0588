"""Every experiment preset composes, every one of its cells validates, and every cell's method
and benchmark are built from its config (no data is loaded and no episode runs)."""

import pytest
from hydra import compose, initialize_config_dir

from runners.config import CONF_DIR, available, validate
from runners.prepare import probe_method
from runners.sweep import expand_cells, register_resolvers


@pytest.mark.parametrize("preset", available("experiment"))
def test_preset_cells_validate(preset):
    register_resolvers()
    overrides = [f"experiment={preset}"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="config", overrides=overrides)
        cells = [validate(c) for c in expand_cells(cfg, overrides)]
    grid = cfg.experiment.grid
    expected = 1
    for names in grid.values():
        expected *= len(names)
    assert len(cells) == expected
    assert len({c.cell_name for c in cells}) == expected
    assert all(c.experiment.name == cfg.experiment.name for c in cells)
    missing = {}
    for c in cells:  # a typo in a preset's method or benchmark params fails here, not in a sweep
        reason = missing_extra(c)
        if reason is not None:
            missing[c.method.name] = reason
            continue
        probe_method(c)
        bench = c.benchmark.cls(name=c.benchmark.name, **c.benchmark.params)
        assert bench.name == c.benchmark.name
    if missing:  # every other cell was checked above
        pytest.skip(
            f"{preset}: not checked without an optional extra: "
            + "; ".join(f"{m} ({r})" for m, r in sorted(missing.items()))
        )


def missing_extra(cell) -> str | None:
    """Why the cell's method cannot be built on this machine: the ImportError its constructor raises
    when an optional extra is not installed (mem0, or reasoningbank's embedder); None otherwise."""
    try:
        cell.method.cls(backbone=None, **cell.method.params)
    except ImportError as e:
        return str(e)
    except Exception:  # anything else is probe_method's to report
        return None
    return None


def test_cli_group_pins_a_grid_axis():
    register_resolvers()
    overrides = ["experiment=flowstate_table1", "method=flowstate"]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cells = [validate(c) for c in expand_cells(compose(config_name="config", overrides=overrides), overrides)]
    assert {c.method.name for c in cells} == {"flowstate"} and len(cells) == 4


def test_a_grid_names_a_config_from_an_added_config_dir(tmp_path):
    """`--config-dir` adds configs a grid may name (runners.config.available asks Hydra's search path)."""
    from tests.runners.sweep_helpers import run_sweep

    (tmp_path / "conf" / "method").mkdir(parents=True)
    (tmp_path / "conf" / "method" / "short_full_context.yaml").write_text(
        "defaults: [full_context, _self_]\nparams: {max_resamples: 0}\n"
    )
    p = run_sweep(
        tmp_path / "out",
        "benchmark=memoryarena_math",
        "++experiment.grid.method=[full_context,short_full_context]",
        "runner.limit=1",
        "experiment.name=added",
        "--config-dir",
        str(tmp_path / "conf"),
    )
    assert p.returncode == 0, p.stderr[-2000:]
    cells = [d for d in (tmp_path / "out" / "added").iterdir() if (d / "manifest.json").exists()]
    assert len(cells) == 2 and all(d.name.startswith("full_context__") for d in cells)
