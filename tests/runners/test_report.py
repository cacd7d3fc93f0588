"""Paper-style table: paper rows beside ours, Δ rows in pp / relative %, LaTeX escaping."""
from runners.analysis.tables import CellSummary, build_tables
from runners.analysis.papers import delta, fmt_delta, paper_value, to_latex


def cell(method, sr, ps, tok):
    return CellSummary(cell=f"{method}__deepseek_v4_flash__memoryarena_math__x", method=method, backbone="deepseek_v4_flash",
                       benchmark="memoryarena_math", scripted=False, n_episodes=40, n_tasks=40, trials=1,
                       metrics={"SR": sr, "PS": ps, "Tok": tok}, table_metrics=["SR", "PS", "Tok"])


def test_paper_values_are_looked_up_by_our_names():
    assert paper_value("full_context", "deepseek_v4_flash", "memoryarena_math", "SR") == "30.00"
    assert paper_value("full_context", "deepseek_v4_flash", "memoryarena_math", "Tok") == "40.60"
    assert paper_value("flowstate", "deepseek_v4_flash", "tau_airline", "Pass1") is not None
    assert paper_value("pos", "qwen3_7_plus", "alfworld", "SR") == "88.81"
    assert paper_value("full_context", "qwen3_7_plus", "alfworld", "SR") == "62.69"  # PoS's Raw Trajectory
    assert paper_value("pos", "qwen3_7_plus", "rca100", "joint_entity_type_accuracy") is not None
    assert paper_value("acon", "kimi_k3", "clindiag", "diagnosis_accuracy") is not None
    assert paper_value("full_context", "scripted", "memoryarena_math", "SR") is None


def test_table_has_reference_first_paper_rows_and_deltas():
    header, rows, long = build_tables([cell("flowstate", 40.0, 60.0, 20.0), cell("full_context", 30.0, 50.0, 40.0)], "full_context")
    assert header == ["Method", "Backbone", "memoryarena_math:SR", "memoryarena_math:PS", "memoryarena_math:Tok", "memoryarena_math:Tok/task(k)"]
    labels = [r[0] for r in rows]
    assert labels == ["full_context", "  full_context (paper)", "flowstate", "  flowstate (paper)", "  Δ vs full_context"]
    assert rows[1][2:] == ["30.00", "50.36", "40.60", "1015.0"]  # Tok/task: the paper's 40.60 M over its 40 tasks, in k
    assert rows[0][5] == "1000.0"  # ours: 40 M over 40 episodes
    assert rows[4][2:] == ["+10.00pp", "+10.00pp", "-50.00%", "-50.00%"]
    deltas = {r["metric"]: r["value"] for r in long if r["method"] == "flowstate" and r["metric"].startswith("delta_")}
    assert deltas == {"delta_SR": 10.0, "delta_PS": 10.0, "delta_Tok": -50.0}


def test_delta_units_and_undefined_values():
    assert delta("Tok", 1.0, 0.0) is None and delta("SR", None, 3.0) is None
    assert fmt_delta("DR", -2.5) == "-2.50" and fmt_delta("Acc_3", 1) == "+1.00pp" and fmt_delta("SR", None) == "–"
    tex = to_latex(["Method", "a_b"], [["x%", "Δ"]], "cap & co")
    assert r"a\_b" in tex and r"x\%" in tex and r"$\Delta$" in tex and r"cap \& co" in tex


def test_partial_cells_are_marked_in_the_table():
    """A cell with missing episodes (infra errors, interrupted run) must not pass for a complete
    one: its Tok total (and so Δ Tok) covers fewer episodes than the reference's."""
    part = cell("flowstate", 40.0, 60.0, 10.0)
    part.n_episodes = 20
    _, rows, _ = build_tables([part, cell("full_context", 30.0, 50.0, 40.0)], "full_context", with_paper=False)
    assert [r[0] for r in rows] == ["full_context", "flowstate [partial]", "  Δ vs full_context"]


def on(c, backbone, **metrics):
    c.backbone, c.cell = backbone, c.cell.replace("deepseek_v4_flash", backbone)
    c.metrics.update(metrics)
    return c


def test_delta_row_compares_only_against_the_reference_on_the_same_backbone():
    cells = [on(cell("flowstate", 40.0, 60.0, 20.0), "kimi_k3"), on(cell("full_context", 30.0, 50.0, 40.0), "glm_5_3")]
    _, rows, long = build_tables(cells, "full_context", with_paper=False)
    assert not any(r[0].startswith("  Δ") for r in rows) and not any(r["metric"].startswith("delta_") for r in long)
    cells.append(on(cell("full_context", 10.0, 20.0, 10.0), "kimi_k3"))
    _, rows, _ = build_tables(cells, "full_context", with_paper=False)
    assert [r[1:] for r in rows if r[0].startswith("  Δ")] == [["kimi_k3", "+30.00pp", "+40.00pp", "+100.00%"]]
