"""`runners.aggregate --plots` writes the plots as SVG and PNG files (matplotlib, the `analysis`
extra), and names the extra when matplotlib is missing."""

import sys

import pytest

from runners.aggregate import main
from tests.runners.sweep_helpers import run_sweep


def test_plots_written_with_labels(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib comes with the analysis extra")
    assert run_sweep(tmp_path).returncode == 0
    exp = tmp_path / "offline_demo"
    assert main([str(exp), "--plots"]) == 0
    assert "Plots written: acc_k, success_vs_tokens, tokens_by_role" in capsys.readouterr().out
    for name in ("acc_k", "success_vs_tokens", "tokens_by_role"):
        assert (exp / "tables" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        svg = (exp / "tables" / f"{name}.svg").read_text()
        assert all(w in svg for w in ("full_context", "flowstate", "memoryarena_math", "memoryarena_phys")), name
    assert "judge (not #Tok)" in (exp / "tables" / "tokens_by_role.svg").read_text()


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    assert main([str(tmp_path), "--plots"]) == 2
    err = capsys.readouterr().err
    assert "'analysis' extra" in err and "pip install -e '.[analysis]'" in err


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """PoS and Full Context on the toy benchmark, one sweep for the tests below (each writes the plots again)."""
    pytest.importorskip("matplotlib", reason="matplotlib comes with the analysis extra")
    out = tmp_path_factory.mktemp("plots")
    p = run_sweep(out, "benchmark=toy", "experiment.name=toy", "experiment.grid.method=[pos,full_context]")
    assert p.returncode == 0, p.stderr[-3000:]
    return out / "toy"


def test_a_methods_declared_step_series_is_plotted(toy, capsys):
    """PoS declares its health H as a step series (Method.step_series); --plots draws it under the
    declared name, with no method name in the plotting code."""
    assert main([str(toy), "--plots"]) == 0
    assert "pos_health" in capsys.readouterr().out
    svg = (toy / "tables" / "pos_health.svg").read_text()
    assert "health H" in svg and "toy-0 #0 (pos)" in svg and "(full_context)" not in svg


def test_plots_read_no_record_again(toy, monkeypatch):
    """`--plots` draws from the records the summaries hold (slim: scores, usage, step method logs):
    no cell's records file is read a second time, whole (at 10,000 episodes, ~1 GB of parsed records)."""
    from runners.analysis import cells as cells_mod
    from runners.analysis.plots import write_plots
    from runners.records import store

    exp = toy
    summaries = cells_mod.collect(exp)
    reads: list[str] = []

    def counted(cell_dir, *a, **k):
        reads.append(str(cell_dir))
        return real(cell_dir, *a, **k)

    real = store.stream_cell_lines  # what stream_cell reads through too
    monkeypatch.setattr(store, "stream_cell_lines", counted)
    monkeypatch.setattr(cells_mod, "stream_cell_lines", counted)
    names = {p.stem for p in write_plots(exp, summaries)}
    assert reads == []
    assert {"success_vs_tokens", "pos_health"} <= names  # drawn from the slim records
    svg = (exp / "tables" / "pos_health.svg").read_text()
    assert "toy-0 #0 (pos)" in svg


def test_figures_are_drawn_without_pyplot(tmp_path):
    """The report and --plots draw with matplotlib's object API (plots.subplots): pyplot, its
    backend machinery and its figure registry are never imported, and the report's paper figure
    is still there. Each in a fresh interpreter, where nothing else imported pyplot first."""
    pytest.importorskip("matplotlib", reason="matplotlib comes with the analysis extra")
    import subprocess

    assert run_sweep(tmp_path).returncode == 0
    exp = tmp_path / "offline_demo"
    for call in (
        f"from runners.analysis.report import main; assert main([{str(exp)!r}]) == 0",
        f"from runners.aggregate import main; assert main([{str(exp)!r}, '--plots']) == 0",
    ):
        code = f"import sys; {call}; assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    page = (exp / "report.html").read_text()
    assert "data:image/svg+xml;base64," in page  # the paper's depth figure, drawn
    assert (exp / "tables" / "acc_k.svg").read_text().startswith("<?xml")
