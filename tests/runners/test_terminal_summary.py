"""The end of a run at the terminal: one line per cell with the table's headline metrics and their Δ,
fitted to 80 columns, and where the full tables are (the Markdown table is ~230 columns wide)."""

from runners.sweep import compact_summary


def _row(method, bench, metric, value, scripted=True, p_holm=""):
    return {"method": method, "backbone": "scripted", "benchmark": bench, "metric": metric, "value": value,
            "scripted": scripted, "p_holm": p_holm}  # fmt: skip


def _long():
    out = []
    for bench, fc, fs in (("memoryarena_math", (33.33, 41.67, 0.008406), (66.67, 69.44, 0.017651)),
                          ("memoryarena_phys", (50.0, 58.33, 0.003184), (50.0, 66.67, 0.011354))):  # fmt: skip
        for method, (sr, ps, tok) in (("full_context", fc), ("flowstate", fs)):
            out += [_row(method, bench, "SR", sr), _row(method, bench, "PS", ps), _row(method, bench, "Tok", tok)]
            out += [_row(method, bench, "nAUC", 150.0), _row(method, bench, "tokens_agent", tok * 1e6)]
        out += [
            _row("flowstate", bench, "delta_SR", fs[0] - fc[0], p_holm=0.01 if bench.endswith("math") else 1.0),
            _row("flowstate", bench, "delta_PS", fs[1] - fc[1], p_holm=1.0),
            _row("flowstate", bench, "delta_Tok", 100 * (fs[2] / fc[2] - 1)),
        ]
    return out


SNAPSHOT = """\
Results: offline_demo [scripted]: offline demo, not model results. Rates in %;
(Δ vs full_context: pp for rates, * significant after Holm; % for Tok)
memoryarena_math full_context  SR 33.3  PS 41.7  Tok 8.4k
memoryarena_math flowstate     SR 66.7(+33.3*)  PS 69.4(+27.8)  Tok 17.7k(+110%)
memoryarena_phys full_context  SR 50.0  PS 58.3  Tok 3.2k
memoryarena_phys flowstate     SR 50.0(+0.0)  PS 66.7(+8.3)  Tok 11.4k(+257%)
Marks [paraphrased]: explained below the full table.
Full tables (intervals, p-values, depth retention, notes): {tdir}/summary.md
  (also .csv, .tex, metrics.csv); printed whole by: python -m runners.aggregate {root}"""


def _experiment(tmp_path):
    root = tmp_path / "offline_demo"
    (root / "tables").mkdir(parents=True)
    cols = [f"{b}:{m}" for b in ("memoryarena_math", "memoryarena_phys") for m in ("SR", "PS", "Tok(k)")]
    (root / "tables" / "summary.csv").write_text(
        "Method,Backbone," + ",".join(cols) + "\nfull_context [scripted] [paraphrased],scripted\n"
    )
    return root


def test_the_summary_at_80_columns_is_one_line_per_cell_with_its_delta(tmp_path):
    root = _experiment(tmp_path)
    text = compact_summary(root, _long(), "full_context", width=80)
    assert text == SNAPSHOT.format(tdir=root / "tables", root=root)
    assert all(len(ln) <= 80 for ln in text.splitlines() if str(tmp_path) not in ln)


def test_a_narrow_terminal_wraps_a_cells_metrics_under_it(tmp_path):
    root = _experiment(tmp_path)
    lines = compact_summary(root, _long(), "full_context", width=64).splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("memoryarena_math flowstate"))
    assert lines[i] == "memoryarena_math flowstate     SR 66.7(+33.3*)  PS 69.4(+27.8)"
    assert lines[i + 1] == " " * 21 + "  Tok 17.7k(+110%)"
    assert all(len(ln) <= 64 for ln in lines if str(tmp_path) not in ln)


def test_no_finished_cell_says_so(tmp_path):
    assert (
        compact_summary(tmp_path, [], "full_context", width=80) == f"No finished cells under {tmp_path} yet: no tables."
    )
