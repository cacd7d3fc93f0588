"""`python -m runners.paper`: both papers' artefacts from synthetic experiments in the real record
format, with every expected number computed by hand here; the figures checked through their
matplotlib objects before saving."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from runners.analysis import paper, paper_figures, paper_tables, units
from runners.analysis.paper import Cells, build_cost, build_table, headlines, layout
from runners.analysis.stats import holm, wilson_interval
from runners.analysis.cells import collect
from runners.analysis.tables import build_tables
from tests.runners.paper_helpers import episode, formal_scores, health_step, shopping_scores, write_cell

FAITHFUL_ROLES = {"judge": {"name": "gpt_5_mini"}, "tool": {"name": "gpt_5_mini"}}
DS = "deepseek_v4_flash"


def formal_cell(root, method, bench, tasks, backbone=DS, tokens=1000, **kw):
    eps = [episode("c", tid, formal_scores(corr), {"agent": tokens}) for tid, corr in tasks.items()]
    kw.setdefault("roles", FAITHFUL_ROLES)
    return write_cell(root, method, backbone, bench, eps, **kw)


def row(table, label_start, backbone_label=None):
    return next(
        r
        for r in table.rows
        if r.label.startswith(label_start) and (backbone_label is None or r.backbone == backbone_label)
    )


def col(table, title):
    return table.header.index(title) - 2


DRAW = paper_figures.figures_available()


def figures_or_skip() -> None:
    """Skip the rest of a test that checks the drawn figures (matplotlib, the `analysis` extra); the
    numbers a figure shows are checked before this, without it."""
    if not paper_figures.figures_available():
        pytest.skip("figure checks need matplotlib: install the analysis extra (pip install -e '.[analysis]')")


# ---------------------------------------------------------------- FlowState Table 4 (pooled Formal Reasoning)
def test_table4_pools_math_and_physics_and_computes_nauc_and_dr_by_hand(tmp_path):
    # Math tasks A, B and Physics tasks C, D: Formal Reasoning is one curve over all four.
    formal_cell(tmp_path, "full_context", "memoryarena_math", {"m-A": [1, 1, 0], "m-B": [1, 0]})
    formal_cell(tmp_path, "full_context", "memoryarena_phys", {"p-C": [0, 1, 1], "p-D": [1, 1]})
    art = build_table(layout("flowstate_table4"), Cells(collect(tmp_path)), resamples=0)
    # Acc_1 = 3/4, Acc_2 = 3/4 (B's 2nd wrong), Acc_3 = 1/2 (A wrong, C right) -> R = 100, 100, 66.67
    acc = [75.0, 75.0, 50.0]
    r = [100.0 * a / acc[0] for a in acc]
    nauc = ((r[0] + r[1]) / 2 + (r[1] + r[2]) / 2) / 2
    kbar, rbar = 2.0, sum(r) / 3
    dr = -sum((k - kbar) * (rk - rbar) for k, rk in zip((1, 2, 3), r)) / sum((k - kbar) ** 2 for k in (1, 2, 3))
    fc = row(art.table, "Full Context", "DeepSeek-V4-Flash")
    assert fc.kind == "ours"
    assert fc.cells[col(art.table, "Formal Reasoning nAUC")] == f"{nauc:.2f}" == "91.67"
    assert fc.cells[col(art.table, "Formal Reasoning DR")] == f"{dr:.2f}" == "16.67"
    paper_row = art.table.rows[art.table.rows.index(fc) + 1]
    assert (
        paper_row.label == "Full Context (paper)"
        and paper_row.cells[col(art.table, "Formal Reasoning nAUC")] == "69.82"
    )
    assert art.status == "partial" and "Full Context / DeepSeek-V4-Flash / Web Shopping" in art.missing
    # the same pooled curve feeds Figure 4's Formal Reasoning panel
    fig = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path)), draw=False)
    formal = next(p for p in fig.data["panels"] if p["title"] == "Formal Reasoning")
    assert formal["curves"] == [{"method": "full_context", "backbone": DS, "acc": acc}]


def test_table1_layout_order_groups_delta_rows_and_best_marking(tmp_path):
    for method, corr, tok in (("full_context", [1, 0], 4000), ("flowstate", [1, 1], 1000), ("bm25", [0, 0], 2000)):
        formal_cell(tmp_path, method, "memoryarena_math", {f"t{i}": corr for i in range(40)}, tokens=tok)
    formal_cell(
        tmp_path, "my_method", "memoryarena_math", {f"t{i}": [1, 0] for i in range(40)}, tokens=1500
    )  # a researcher's own method
    art = build_table(layout("flowstate_table1"), Cells(collect(tmp_path)), resamples=0)
    kinds = [(r.kind, r.label) for r in art.table.rows]
    groups = [lab for k, lab in kinds if k == "group"]
    assert groups == [
        "Full Context",
        "Memory System",
        "State Tracking",
        "State Tracking + Memory",
        "FlowState",
        "Other methods (not in the paper)",
    ]
    labels = [lab for k, lab in kinds if k != "group"]
    assert (
        labels.index("Full Context")
        < labels.index("ReasoningBank (paper)")
        < labels.index("BM25")
        < labels.index("Mem0 (paper)")
        < labels.index("FlowState")
    )  # the paper's order, not alphabetical
    assert labels[-1] == "my_method"
    fs = row(art.table, "FlowState", "DeepSeek-V4-Flash")
    after = art.table.rows[art.table.rows.index(fs) + 1 : art.table.rows.index(fs) + 4]
    assert [r.kind for r in after] == ["paper", "delta", "paper_delta"]
    sr, tok = col(art.table, "Math SR"), col(art.table, "Math #Tok (M)")
    assert after[1].cells[sr] == "+100.00" and after[1].cells[tok] == "-75.00%"  # SR 100 vs 0; Tok 0.04 M vs 0.16 M
    assert after[2].cells[sr] == "+7.50"  # the paper's own Δ row (Table 1: 37.50 − 30.00)
    assert after[2].cells[tok] == "-73.01%"  # and its #Tok Δ, relative as the paper prints it
    # best bold / second underlined among our rows, per performance column as the paper does (token columns unranked)
    assert fs.styles[sr] == "best" and fs.styles[tok] == ""
    assert row(art.table, "my_method").styles[sr] == "second" and row(art.table, "my_method").styles[tok] == ""
    md = paper_tables.table_md(art.table, art.title)
    assert "**100.00**" in md and "<u>" in md
    tex = paper_tables.table_tex(art.table, art.title)
    assert r"\textbf{100.00}" in tex and r"\underline{" in tex and r"\multicolumn" in tex


# ---------------------------------------------------------------- FlowState Figure 3
def test_fig3_equal_weight_means_and_relative_tokens_by_hand(tmp_path):
    bb = "qwen3_5_397b"
    spec = {
        "memoryarena_shopping": ([1, 1], [1, 0], 4000, 1000),
        "memoryarena_math": ([1, 0], [1, 1], 2000, 1000),
        "memoryarena_phys": ([0, 0], [1, 1], 1000, 1000),
    }
    for bench, (fc, fs, tfc, tfs) in spec.items():
        sc = shopping_scores if bench == "memoryarena_shopping" else formal_scores
        write_cell(
            tmp_path, "full_context", bb, bench, [episode("c", "t0", sc(fc), {"agent": tfc})], roles=FAITHFUL_ROLES
        )
        write_cell(tmp_path, "flowstate", bb, bench, [episode("c", "t0", sc(fs), {"agent": tfs})], roles=FAITHFUL_ROLES)
    art = paper_figures.build(layout("flowstate_fig3"), Cells(collect(tmp_path)), draw=DRAW)
    p = next(x for x in art.data["points"] if x["backbone"] == bb)
    # SR per task: FC 100, 0, 0; FS 0, 100, 100. PS: FC 100, 50, 0; FS 50, 100, 100.
    assert p["full_context_SR"] == pytest.approx((100 + 0 + 0) / 3) and p["flowstate_SR"] == pytest.approx(
        (0 + 100 + 100) / 3
    )
    assert p["full_context_PS"] == pytest.approx((100 + 50 + 0) / 3) and p["flowstate_PS"] == pytest.approx(
        (50 + 100 + 100) / 3
    )
    assert p["relative_tokens"] == pytest.approx(
        (1000 / 4000 + 1000 / 2000 + 1000 / 1000) / 3
    )  # per task, then averaged
    assert art.status == "partial"  # the paper's other two backbones are missing
    # the paper's own points from Table 5 (Qwen: FS/FC token ratios 57.68/134.82, 14.53/19.97, 2.01/2.02)
    qp = next(x for x in art.data["paper"] if x["backbone"] == bb)
    assert qp["relative_tokens"] == pytest.approx((57.68 / 134.82 + 14.53 / 19.97 + 2.01 / 2.02) / 3)
    figures_or_skip()
    fig = art.figure
    assert [ax.get_title() for ax in fig.axes] == ["SR", "PS"]
    ax = fig.axes[0]
    ours = [ln for ln in ax.get_lines() if "(paper)" not in ln.get_label()]
    fc = next(ln for ln in ours if ln.get_label().endswith("Full Context"))
    fs = next(ln for ln in ours if ln.get_label().endswith("FlowState"))
    assert fc.get_markerfacecolor() == "none" and fs.get_markerfacecolor() != "none"  # hollow vs filled
    assert list(fc.get_xdata()) == [1.0] and fs.get_xdata()[0] == pytest.approx(p["relative_tokens"])
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == 1 and arrows[0].arrow_patch.get_linestyle() == "--"


def test_fig4_one_panel_per_domain_curve_per_method_flowstate_annotated(tmp_path):
    for method, corr in (("full_context", [1, 0, 0]), ("flowstate", [1, 1, 0])):
        formal_cell(tmp_path, method, "memoryarena_math", {"a": corr, "b": [1, 1, 1]})
        write_cell(
            tmp_path, method, DS, "memoryarena_shopping", [episode("c", "s", shopping_scores([1, 0]), {"agent": 10})]
        )
    art = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path)), draw=DRAW)
    figures_or_skip()
    fig = art.figure
    assert [ax.get_title() for ax in fig.axes] == ["Web Shopping", "Travel", "Formal Reasoning"]
    formal = fig.axes[2]
    assert [ln.get_label() for ln in formal.get_lines()] == ["Full Context", "FlowState"]
    fs = formal.get_lines()[1]
    assert list(fs.get_ydata()) == [100.0, 100.0, 50.0]  # Acc_3: a wrong, b right
    assert [t.get_text() for t in formal.texts] == ["50.0"]  # FlowState's value at the last depth
    assert any(t.get_text() == "not run" for t in fig.axes[1].texts)
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"Full Context", "FlowState"}


# ---------------------------------------------------------------- PoS Figure 3, recovery, Figure 4, Table 2
def test_pos_fig3_trapping_incidence_and_pattern_shares_by_hand(tmp_path):
    s = {"success": 1, "task_type": "pick_and_place_simple"}
    no, trap = (lambda t: health_step(t, False)), (lambda t, p: health_step(t, True, p))
    qwen = [
        episode(
            "c", "e1", s, {"agent": 1}, steps=[no(0), trap(1, "static"), trap(2, "static"), no(3), trap(4, "cycle")]
        ),
        episode("c", "e2", s, {"agent": 1}, steps=[no(0), no(1)]),
    ]
    kimi = [
        episode("c", "e3", s, {"agent": 1}, steps=[trap(0, None), trap(1, "drift")]),
        episode("c", "e4", s, {"agent": 1}, steps=[trap(0, "static")]),
    ]
    write_cell(tmp_path, "pos", "qwen3_7_plus", "alfworld", qwen)
    write_cell(tmp_path, "pos", "kimi_k3", "alfworld", kimi)
    art = paper_figures.build(layout("pos_fig3"), Cells(collect(tmp_path)), draw=DRAW)
    inc = art.data["incidence"]
    assert inc["qwen3_7_plus"]["alfworld"]["incidence"] == 50.0  # e1 trapped, e2 never
    assert inc["kimi_k3"]["alfworld"]["incidence"] == 100.0
    # events: e1 static, cycle (the repeated static step is one event); e3 unmatched, drift; e4 static
    shares = art.data["patterns"]["alfworld"]
    assert shares["events"] == 5 and shares["shares"] == {
        "static": 40.0,
        "cycle": 20.0,
        "drift": 20.0,
        "unmatched": 20.0,
    }
    figures_or_skip()
    fig = art.figure
    assert [ax.get_title() for ax in fig.axes] == ["Trapping incidence", "Trapping patterns"]
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["Static", "Cycle", "Drift", "unmatched"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["Qwen3.7-Plus", "Kimi-K3"]


def test_pos_recovery_and_fig4_strongest_baseline(tmp_path):
    won = {"success": 1, "task_type": "pick_and_place_simple"}
    lost = {"success": 0, "task_type": "pick_and_place_simple"}
    write_cell(
        tmp_path,
        "pos",
        "qwen3_7_plus",
        "alfworld",
        [episode("c", "a", won, {"agent": 1}), episode("c", "b", won, {"agent": 1})],
    )
    write_cell(
        tmp_path,
        "pos_generic_recovery",
        "qwen3_7_plus",
        "alfworld",
        [episode("c", "a", won, {"agent": 1}), episode("c", "b", lost, {"agent": 1})],
    )
    loca = {"pos": [1, 1, 1, 0], "acon": [1, 0, 0, 0], "pace": [1, 1, 0, 0]}
    for m, succ in loca.items():
        eps = [
            episode("c", f"t{i}", {"success": s, "length": ln}, {"agent": 1})
            for i, (s, ln) in enumerate(zip(succ, ["8k", "8k", "256k", "256k"]))
        ]
        write_cell(tmp_path, m, "qwen3_7_plus", "loca", eps)
    cells = Cells(collect(tmp_path))
    rec = paper_figures.build(layout("pos_recovery"), cells, draw=DRAW)
    alf = next(r for r in rec.data["rows"] if r["benchmark"] == "alfworld")
    assert (alf["generic"], alf["factorised"], alf["paper_generic"], alf["paper_factorised"]) == (
        50.0,
        100.0,
        76.87,
        88.81,
    )
    f4 = paper_figures.build(layout("pos_fig4"), cells, draw=DRAW)
    (panel,) = f4.data["panels"]
    assert panel["strongest"] == "pace"  # 50 % overall beats ACON's 25 %
    lengths = f4.data["lengths"]
    pos_curve = dict(zip(lengths, panel["curves"][0]["values"]))
    assert pos_curve["8k"] == 100.0 and pos_curve["256k"] == 50.0 and pos_curve["64k"] is None
    figures_or_skip()
    assert rec.figure.axes[0].get_title() == "Generic vs factorised recovery"
    ax = f4.figure.axes[0]
    assert ax.get_title() == "Qwen3.7-Plus" and [ln.get_label() for ln in ax.get_lines()] == [
        "PoS",
        "PACE (strongest baseline)",
    ]
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "8K"


def test_pos_table2_ratios_by_hand_beside_the_pages(tmp_path):
    rca = {"success": 1, "entity_correct": 1, "type_correct": 1, "submitted": 1}
    write_cell(
        tmp_path,
        "full_context",
        "qwen3_7_plus",
        "rca100",
        [episode("c", f"t{i}", rca, {"agent": 300_000}) for i in range(2)],
    )
    write_cell(
        tmp_path,
        "pos",
        "qwen3_7_plus",
        "rca100",
        [
            episode("c", f"t{i}", rca, {"agent": 240_000, "state": 600_000, "sentinel": 300_000, "judge": 9_000_000})
            for i in range(2)
        ],
    )
    art = build_cost(layout("pos_table2"), Cells(collect(tmp_path)))
    got = art.data["ratios"][("pos", "qwen3_7_plus", "rca100")]
    ratio, change = got["total_ratio"], got["agent_change_pct"]
    assert change == pytest.approx(100 * (240_000 / 300_000 - 1)) == pytest.approx(-20.0)
    assert ratio == pytest.approx((240_000 + 600_000 + 300_000) / 300_000)  # judge is not a method role
    pos_row = row(art.table, "PoS")
    assert pos_row.cells == ["RCA-100", "240.0", "-20.0", "1140.0", "3.80×"]
    assert row(art.table, "PoS (paper)").cells == ["RCA-100", "–", "-20.9", "–", "5.06×"]
    assert art.status == "produced"
    assert (
        row(art.table, "Raw Trajectory").cells[-1] == "1.00×"
    )  # PoS's name for Full Context (the layout's method_labels)


# ---------------------------------------------------------------- headlines
def test_headlines_computed_the_papers_way(tmp_path):
    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0], "b": [1, 0]}, tokens=3000)
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1, 1], "b": [1, 0]}, tokens=1000)
    formal_cell(tmp_path, "full_context", "memoryarena_phys", {"a": [1, 1], "b": [1, 1]}, tokens=1000)
    formal_cell(tmp_path, "flowstate", "memoryarena_phys", {"a": [1, 1], "b": [1, 1]}, tokens=1000)
    (h,) = [x for x in headlines(Cells(collect(tmp_path))) if x["paper"] == "FlowState"]
    assert h["delta_pp"] == pytest.approx((50 + 0) / 2)  # mean of per-domain ΔSR (math +50, physics 0)
    assert h["tokens_pct"] == pytest.approx(100 * ((2000 + 2000) / (6000 + 2000) - 1))  # pooled, not a mean of ratios
    assert (h["paper_delta_pp"], h["paper_tokens_pct"], h["n_domains"]) == (4.55, -43.2, 2)


# ---------------------------------------------------------------- honest comparison
def test_paper_rows_are_in_our_unit_at_k_and_m_scale(tmp_path):
    def cells(tok):
        root = tmp_path / str(tok)
        formal_cell(root, "full_context", "memoryarena_math", {f"t{i}": [1, 0] for i in range(40)}, tokens=tok)
        return collect(root)

    for tok, unit, paper_tok in ((1000, "k", "40600.0"), (1_000_000, "M", "40.60")):  # 0.04 M vs 40 M in all
        cs = cells(tok)
        header, rows, _ = build_tables(cs, "full_context", resamples=0)
        paper_row = next(r for r in rows if r[0].endswith("(paper)"))
        ti = header.index("memoryarena_math:Tok" + (f"({unit})" if unit == "k" else ""))
        pi = header.index("memoryarena_math:Tok/task(k)")
        assert paper_row[ti] == paper_tok and paper_row[pi] == "1015.0"  # 40.60 M / 40 tasks = 1015 k per task
        ours = next(r for r in rows if r[0].startswith("full_context"))
        assert ours[pi] == f"{tok / 1000:.1f}"  # our mean per episode, same unit
        art = build_table(layout("flowstate_table1"), Cells(cs), resamples=0)
        t = art.table
        tcol = col(t, f"Math #Tok ({unit})")
        assert row(t, "Full Context (paper)", "DeepSeek-V4-Flash").cells[tcol] == paper_tok
        assert row(t, "Full Context (paper)", "DeepSeek-V4-Flash").cells[col(t, "Math Tok/task (k)")] == "1015.0"
    # every (paper) value of a whole table is in the table's unit (here k): the reference M × 1000
    from runners.analysis.papers import paper_lookup

    root = tmp_path / "all"
    for m in ("full_context", "flowstate", "bm25"):
        for bench in ("memoryarena_math", "memoryarena_phys"):
            formal_cell(root, m, bench, {"a": [1]}, tokens=500)
    t = build_table(layout("flowstate_table1"), Cells(collect(root)), resamples=0).table
    domains = {
        "Web Shopping": "bundled_web_shopping",
        "Travel": "group_travel_planning",
        "Math": "math",
        "Physics": "physics",
    }
    checked = 0
    for r in (r for r in t.rows if r.kind == "paper"):
        method = r.label.removesuffix(" (paper)")
        for j, h in enumerate(t.header[2:]):
            if h.endswith("#Tok (k)") and r.cells[j] != "–":
                ref = paper_lookup(
                    method,
                    next(k for k, v in paper_tables.BACKBONE_LABELS.items() if v == r.backbone),
                    domains[h.split(" #Tok")[0]],
                    "Tok",
                )
                assert r.cells[j] == f"{float(ref) * 1000:.1f}", (r.label, h)
                checked += 1
    assert checked >= 30
    html_js = (paper.Path(paper.__file__).parent / "assets" / "report.js").read_text()
    assert "tokens in millions" not in html_js  # the HTML heading follows the table's unit


def test_marks_footnotes_and_strict(tmp_path):
    # a fixture subset whose judge ran on the agent's model: three marks, and --strict drops the (paper) row
    eps = [episode("c", f"t{i}", formal_scores([1, 0]), {"agent": 10, "judge": 5}) for i in range(2)]
    write_cell(tmp_path, "full_context", DS, "memoryarena_math", eps, data_dir="fixtures", roles={})
    # a faithful cell: all 20 Physics tasks, the paper's data and judge: no mark, (paper) row kept under --strict
    formal_cell(tmp_path, "full_context", "memoryarena_phys", {f"p{i}": [1] for i in range(20)})
    # text sources that differ among episodes
    mixed = [episode("c", f"t{i}", formal_scores([1]), {"agent": 1}, text_fingerprint=f"fp{i % 2}") for i in range(40)]
    write_cell(tmp_path, "flowstate", DS, "memoryarena_math", mixed, roles=FAITHFUL_ROLES)
    cs = collect(tmp_path)
    marks: list = []
    _, rows, _ = build_tables(cs, "full_context", resamples=0, marks_out=marks)
    fc = next(r for r in rows if r[0].startswith("full_context"))
    assert "[fixture]" in fc[0] and "[subset 2/40]" in fc[0] and "[roles≠paper]" in fc[0]
    fs = next(r for r in rows if r[0].startswith("flowstate"))
    assert "[mixed]" in fs[0] and "[subset" not in fs[0]
    assert any("judge on deepseek_v4_flash (paper: gpt_5_mini)" in m.detail for m in marks)
    _, strict_rows, _ = build_tables(cs, "full_context", resamples=0, strict=True)
    assert not any(r[0].endswith("(paper)") for r in strict_rows)  # both rows are marked
    t = build_table(layout("flowstate_table1"), Cells(cs), strict=True, resamples=0).table
    assert row(t, "Full Context [fixture]").backbone == "DeepSeek-V4-Flash"
    assert not [r for r in t.rows if r.label == "Full Context (paper)" and r.backbone == "DeepSeek-V4-Flash"]
    assert [
        r for r in t.rows if r.label == "Full Context (paper)" and r.backbone == "GPT-5.6-terra"
    ]  # the paper's own rows stay
    assert any(n.startswith("[fixture]") for n in t.notes) and any(n.startswith("[subset n/N]") for n in t.notes)
    t4 = build_table(layout("flowstate_table5"), Cells(collect(tmp_path)), strict=True, resamples=0).table
    phys = [
        r
        for r in t4.rows
        if r.kind == "ours" and r.backbone == "DeepSeek-V4-Flash" and r.label.startswith("Full Context")
    ]
    assert phys and "[" in phys[0].label  # the math cell's marks are on the row too (same method and backbone)


def test_only_the_phys_cell_faithful_keeps_its_paper_row_under_strict(tmp_path):
    formal_cell(tmp_path, "full_context", "memoryarena_phys", {f"p{i}": [1] for i in range(20)})
    _, rows, _ = build_tables(collect(tmp_path), "full_context", resamples=0, strict=True)
    assert [r[0] for r in rows] == ["full_context", "  full_context (paper)"]


# ---------------------------------------------------------------- statistics
def test_holm_against_a_hand_computation():
    # sorted 0.01, 0.03, 0.04, 0.5 -> ×4, ×3, ×2, ×1 = 0.04, 0.09, 0.08, 0.5 -> monotone: 0.04, 0.09, 0.09, 0.5
    got = holm([0.04, 0.01, None, 0.5, 0.03])
    assert got[2] is None
    assert [round(x, 10) for x in (got[0], got[1], got[3], got[4])] == [0.09, 0.04, 0.5, 0.09]
    assert holm([0.6, 0.6]) == [1.0, 1.0]  # capped at 1


def test_wilson_does_not_collapse_at_0_and_n():
    z = NormalDist().inv_cdf(0.975)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(100 * z * z / (10 + z * z))  # closed form at k = 0
    lo, hi = wilson_interval(10, 10)
    assert hi == 100.0 and lo == pytest.approx(100 * 10 / (10 + z * z))
    scipy_stats = pytest.importorskip("scipy.stats")
    ci = scipy_stats.binomtest(3, 17).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson_interval(3, 17) == pytest.approx((100 * ci.low, 100 * ci.high))


def test_a_zero_rate_cell_gets_a_wilson_interval_and_significance_is_marked(tmp_path):
    formal_cell(tmp_path, "full_context", "memoryarena_math", {f"t{i}": [0] for i in range(12)})
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {f"t{i}": [1] for i in range(12)})
    header, rows, long = build_tables(collect(tmp_path), "full_context", resamples=200)
    sr = header.index("memoryarena_math:SR")
    fc = next(r for r in rows if r[0].startswith("full_context"))
    lo, hi = wilson_interval(0, 12)
    assert fc[sr] == f"0.00 [{lo:.2f}, {hi:.2f}]" and hi > 20  # not [0.00, 0.00]
    delta = next(r for r in rows if r[0].strip().startswith("Δ"))
    # 12 wins, 0 losses: sign test p = 2 / 2^12; two comparisons (SR, PS) in the table -> Holm ×2
    p = 2 / 2**12
    assert f"p={2 * p:.2g}*" in delta[sr]
    assert next(x for x in long if x["metric"] == "delta_SR")["p_holm"] == pytest.approx(2 * p)


# ---------------------------------------------------------------- the command
def test_cli_writes_every_file_and_an_index(tmp_path, capsys):
    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0]})
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1, 1]})
    assert paper.main([str(tmp_path), "--bootstrap", "0"]) == 0
    out = tmp_path / "paper"
    for name in ("flowstate_table1", "flowstate_table4", "flowstate_table5"):
        assert all((out / f"{name}.{ext}").is_file() for ext in ("md", "csv", "tex"))
    index = (out / "index.md").read_text()
    for name in paper_tables.ORDER:
        assert f"`{name}`" in index
    assert "| not produced |" in index and "experiment=pos_table1" in index and "| partial |" in index
    assert "## Headlines" in index
    figures_or_skip()
    assert (out / "flowstate_fig4.svg").is_file() and (out / "flowstate_fig4.png").is_file()


def test_without_matplotlib_tables_are_written_and_index_says_how(tmp_path, monkeypatch):
    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0]})
    monkeypatch.setattr(paper_figures, "figures_available", lambda: False)
    paper.write_all(tmp_path, collect(tmp_path), resamples=0)
    out = tmp_path / "paper"
    assert (out / "flowstate_table1.md").is_file() and not (out / "flowstate_fig4.svg").exists()
    index = (out / "index.md").read_text()
    assert "Figures not drawn" in index and "analysis" in index


def test_layouts_are_data_and_name_known_cells():
    from runners.analysis.papers import METHOD_LABELS

    for lay in paper_tables.layouts():
        assert lay["name"] in paper_tables.ORDER and lay.get("preset")
        for r in lay.get("rows", []):
            assert r["method"] in METHOD_LABELS
    from runners.analysis.papers import paper_task_count

    assert paper_task_count("memoryarena_math") == 40 and paper_task_count("no_such_benchmark") is None
    assert math.isclose(float(paper.paper_lookup("PoS", "qwen3_7_plus", "RCA-100", "total_tokens_ratio")), 5.06)


def test_html_report_has_a_paper_tab_with_the_same_artefacts(tmp_path):
    import base64

    from runners.analysis.report import gather, render

    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0], "b": [1, 1]})
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1, 1], "b": [1, 1]})
    index, payloads = gather(tmp_path)
    arts = {a["name"]: a for a in index["paper"]["artefacts"]}
    assert list(arts) == paper_tables.ORDER
    t1 = arts["flowstate_table1"]
    assert t1["status"] == "partial" and t1["table"]["header"][:3] == ["Method", "Backbone", "Web Shopping SR"]
    assert any(r["kind"] == "delta" for r in t1["table"]["rows"]) and any(
        r["label"] == "Full Context (paper)" for r in t1["table"]["rows"]
    )
    assert arts["pos_table1"]["status"] == "not produced" and "table" not in arts["pos_table1"]
    assert index["tok_unit"] == "k"
    html = render(index, payloads)
    assert "tab('paper', 'Paper')" in html and "Formal Reasoning" not in html.split('id="index"')[0]
    figures_or_skip()
    svg = arts["flowstate_fig4"]["svg"]
    assert svg.startswith("data:image/svg+xml;base64,") and b"Formal Reasoning" in base64.b64decode(
        svg.split(",", 1)[1]
    )


def test_wilson_counts_tasks_not_trials_when_a_task_ran_several_trials():
    from runners.analysis.stats import rate_interval

    eps = [{"task_id": t, "trial": k, "scores": {"success": s}} for t, s in (("a", 1), ("b", 0)) for k in range(3)]
    fn = lambda es: {"SR": 100.0 * sum(e["scores"]["success"] for e in es) / len(es)}  # noqa: E731
    ci, kind = rate_interval(50.0, eps, fn, "SR", None, n_tasks=2)
    assert kind == "wilson" and ci == pytest.approx(wilson_interval(1, 2))  # 2 tasks, not 6 episodes
    ci1, _ = rate_interval(50.0, eps[::3], fn, "SR", None, n_tasks=2)
    assert ci1 == pytest.approx(wilson_interval(1, 2))


def test_paper_tok_leaves_out_the_reasoning_tool_as_the_paper_counts(tmp_path):
    eps = [episode("c", f"t{i}", formal_scores([1]), {"agent": 1000, "tool": 3000}) for i in range(40)]
    write_cell(tmp_path, "full_context", DS, "memoryarena_math", eps, roles=FAITHFUL_ROLES)
    t = build_table(layout("flowstate_table1"), Cells(collect(tmp_path)), resamples=0).table
    ours = row(t, "Full Context", "DeepSeek-V4-Flash")
    assert (
        ours.cells[col(t, "Math #Tok (k)")] == "40.0" and ours.cells[col(t, "Math Tok/task (k)")] == "1.0"
    )  # agent only
    assert units.PAPER_TOK_NOTE in t.notes


def test_several_experiments_pool_their_cells(tmp_path):
    a, b = tmp_path / "flowstate_table1", tmp_path / "flowstate_table5_backbones"
    formal_cell(a, "full_context", "memoryarena_math", {"x": [1]})
    formal_cell(b, "full_context", "memoryarena_math", {"x": [1]}, backbone="gpt_5_6_terra")
    assert paper.main([str(a), str(b), "--bootstrap", "0", "--out", str(tmp_path / "both")]) == 0
    md = (tmp_path / "both" / "flowstate_table1.md").read_text()
    assert (
        "| Full Context [subset 1/40] | DeepSeek-V4-Flash |" in md
        and "| Full Context [subset 1/40] | GPT-5.6-terra |" in md
    )


def test_index_lists_the_cells_a_sweep_skipped(tmp_path):
    import json

    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0]})
    entry = {
        "cell": "mem0__deepseek_v4_flash__memoryarena_math__x",
        "method": "mem0",
        "backbone": DS,
        "benchmark": "memoryarena_math",
        "missing": [{"what": "extra mem0", "fix": "pip install -e '.[mem0]'"}],
    }
    (tmp_path / "skipped.json").write_text(json.dumps({"cells": [entry]}))
    paper.write_all(tmp_path, collect(tmp_path), resamples=0)
    index = (tmp_path / "paper" / "index.md").read_text()
    assert (
        "## Skipped cells" in index
        and "mem0 / deepseek_v4_flash / memoryarena_math: extra mem0 (Fix: pip install -e '.[mem0]')" in index
    )
