"""Names and order in the tables: the grid's order of methods and benchmarks (not alphabetical),
PoS's `raw_trajectory` as an alias of Full Context, an unknown --reference listing the
experiment's methods, and the served model of an OpenAI-compatible server in the Backbone column."""

import pytest

from runners.analysis.report import main as view_main
from runners.aggregate import main as aggregate_main
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import run_sweep


@pytest.fixture(scope="module")
def ordered(tmp_path_factory):
    out = tmp_path_factory.mktemp("order")
    p = run_sweep(
        out,
        "runner.limit=1",
        "experiment.name=order",
        "++experiment.grid.method=[flowstate,bm25,raw_trajectory]",
        "++experiment.grid.benchmark=[memoryarena_phys,memoryarena_math]",
    )
    assert p.returncode == 0, p.stderr
    return out / "order"


def _table(summary: str) -> list[str]:
    """The lines of the first markdown table (the main one)."""
    lines = summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_tables_keep_the_grid_order_and_the_alias_is_full_context(ordered):
    assert sorted({d.name.split("__")[0] for d in ordered.iterdir() if "__" in d.name}) == [
        "bm25",
        "flowstate",
        "full_context",
    ]
    rows = _table((ordered / "tables" / "summary.md").read_text())
    header = rows[0]
    assert header.index("memoryarena_phys:SR") < header.index(
        "memoryarena_math:SR"
    )  # the grid's order, not alphabetical
    methods = [
        r.split("|")[1].strip().split(" ")[0] for r in rows[2:] if not r.split("|")[1].strip().startswith(("Δ", "("))
    ]
    methods = [m for m in methods if m]
    assert methods == ["full_context", "flowstate", "bm25"], (
        methods
    )  # the reference first (as the papers), then the grid's order


def test_raw_trajectory_is_accepted_as_the_reference(ordered, capsys):
    assert aggregate_main([str(ordered), "--reference", "raw_trajectory"]) == 0
    assert "Δ vs full_context" in capsys.readouterr().out


def test_a_reference_the_experiment_lacks_lists_its_methods(ordered, capsys, tmp_path):
    assert aggregate_main([str(ordered), "--reference", "pos"]) == 2
    err = capsys.readouterr().err
    assert "'pos' is not in experiment" in err and "flowstate, bm25, full_context" in err and "Fix: --reference" in err
    assert view_main([str(ordered), "--reference", "pos", "--out", str(tmp_path / "r.html")]) == 2
    assert "flowstate, bm25, full_context" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_the_served_model_is_in_the_backbone_column(tmp_path):
    args = (
        "backbone=openai_compatible",
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        "experiment.name=served",
        "roles.judge=agent",
        "roles.tool=agent",
    )
    with FakeOpenAI(responder=react_responder) as srv:
        env = {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "sk-x"}
        for model in ("qwen3-8b", "llama-3.1-8b"):
            p = run_sweep(tmp_path, *args, f"backbone.model={model}", env=env)
            assert p.returncode == 0, p.stderr
    rows = _table((tmp_path / "served" / "tables" / "summary.md").read_text())
    cells = [
        [x.strip().split(" [")[0] for x in r.split("|")[1:3]] for r in rows[2:]
    ]  # fidelity marks ([paraphrased]) aside
    assert ["full_context", "openai_compatible[qwen3-8b]"] in cells and [
        "full_context",
        "openai_compatible[llama-3.1-8b]",
    ] in cells
    assert not any("model=" in m for m, _ in cells)
