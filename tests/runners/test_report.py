"""Paper-style table: paper rows beside ours, Δ rows in pp / relative % by each metric's declared
kind, LaTeX escaping."""

from benchmarks.alfworld.benchmark import Alfworld
from benchmarks.memoryarena.formal import FormalReasoning
from runners.analysis.cells import CellSummary, metric_spec
from runners.analysis.tables import build_tables
from runners.analysis.papers import delta, fmt_delta, paper_value, to_latex


def cell(method, sr, ps, tok):
    return CellSummary(
        cell=f"{method}__deepseek_v4_flash__memoryarena_math__x",
        method=method,
        backbone="deepseek_v4_flash",
        benchmark="memoryarena_math",
        scripted=False,
        n_episodes=40,
        n_tasks=40,
        trials=1,
        metrics={"SR": sr, "PS": ps, "Tok": tok},
        table_metrics=["SR", "PS", "Tok"],
        specs=FormalReasoning.metric_specs,
    )


def test_paper_values_are_looked_up_by_our_names():
    assert paper_value("full_context", "deepseek_v4_flash", "memoryarena_math", "SR") == "30.00"
    assert paper_value("full_context", "deepseek_v4_flash", "memoryarena_math", "Tok") == "40.60"
    assert paper_value("flowstate", "deepseek_v4_flash", "tau_airline", "Pass1") is not None
    paper_sr = Alfworld.metric_spec("SR").paper  # ALFWorld declares that PoS Table 1 calls its SR task_success
    assert paper_sr == "task_success" and paper_value("pos", "qwen3_7_plus", "alfworld", "SR") is None
    assert paper_value("pos", "qwen3_7_plus", "alfworld", paper_sr) == "88.81"
    assert paper_value("full_context", "qwen3_7_plus", "alfworld", paper_sr) == "62.69"  # PoS's Raw Trajectory
    assert paper_value("pos", "qwen3_7_plus", "rca100", "joint_entity_type_accuracy") is not None
    assert paper_value("acon", "kimi_k3", "clindiag", "diagnosis_accuracy") is not None
    assert paper_value("full_context", "scripted", "memoryarena_math", "SR") is None


def test_table_has_reference_first_paper_rows_and_deltas():
    header, rows, long = build_tables(
        [cell("flowstate", 40.0, 60.0, 20.0), cell("full_context", 30.0, 50.0, 40.0)], "full_context"
    )
    assert header == [
        "Method",
        "Backbone",
        "memoryarena_math:SR",
        "memoryarena_math:PS",
        "memoryarena_math:Tok",
        "memoryarena_math:Tok/task(k)",
    ]
    labels = [r[0] for r in rows]
    assert labels == [
        "full_context",
        "  full_context (paper)",
        "flowstate",
        "  flowstate (paper)",
        "  Δ vs full_context",
    ]
    assert rows[1][2:] == ["30.00", "50.36", "40.60", "1015.0"]  # Tok/task: the paper's 40.60 M over its 40 tasks, in k
    assert rows[0][5] == "1000.0"  # ours: 40 M over 40 episodes
    assert rows[4][2:] == ["+10.00pp", "+10.00pp", "-50.00%", "-50.00%"]
    deltas = {r["metric"]: r["value"] for r in long if r["method"] == "flowstate" and r["metric"].startswith("delta_")}
    assert deltas == {"delta_SR": 10.0, "delta_PS": 10.0, "delta_Tok": -50.0}


def test_alfworld_paper_row_comes_from_the_declared_paper_name():
    def alf(method, sr):
        return CellSummary(
            cell=f"{method}__qwen3_7_plus__alfworld__x",
            method=method,
            backbone="qwen3_7_plus",
            benchmark="alfworld",
            scripted=False,
            n_episodes=134,
            n_tasks=134,
            trials=1,
            metrics={"SR": sr, "Tok": 1.0},
            table_metrics=["SR", "Tok"],
            specs=Alfworld.metric_specs,
        )

    _, rows, long = build_tables([alf("pos", 90.0), alf("full_context", 60.0)], "full_context")
    assert ["  pos (paper)", "qwen3_7_plus", "88.81", "–"] in rows
    assert {(r["method"], r["paper"]) for r in long if r["metric"] == "SR"} == {
        ("pos", "88.81"),
        ("full_context", "62.69"),
    }


def test_delta_units_follow_the_declared_kind():
    def kind(m):
        return metric_spec(FormalReasoning.metric_specs, m).kind

    assert [kind(m) for m in ("SR", "Acc_3", "DR", "K", "Tok", "USD", "undeclared")] == [
        "rate",
        "rate",
        "other",
        "count",
        "tokens",
        "cost",
        "other",
    ]
    assert (
        delta(kind("Tok"), 1.0, 0.0) is None
        and delta(kind("SR"), None, 3.0) is None
        and delta(kind("Tok"), 3.0, 2.0) == 50.0
    )
    assert (
        fmt_delta(kind("DR"), -2.5) == "-2.50"
        and fmt_delta(kind("Acc_3"), 1) == "+1.00pp"
        and fmt_delta(kind("SR"), None) == "–"
    )
    assert fmt_delta(kind("USD"), 12.5) == "+12.50%"
    for total in ("Tok", "Tok_no_tool", "USD"):  # totals: relative Δ in %
        assert delta(kind(total), 0.5, 2.0) == -75.0 and fmt_delta(kind(total), -75.0) == "-75.00%"
    assert delta(kind("SR"), 0.5, 2.0) == -1.5  # a rate: the difference in points
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
