"""What a researcher quotes from the paper artefacts, checked by hand: the marks of figures,
headlines and claims, missing cells drawn as gaps, the settings the papers fix, and the interval
legend. Synthetic experiments in the real record format (tests/runners/paper_helpers.py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from runners.analysis import paper_figures
from runners.analysis.fidelity import cell_marks
from runners.analysis.paper import Cells, layout
from runners.analysis.stats import INTERVAL_LEGEND, rate_interval, wilson_interval
from runners.analysis.tables import collect
from tests.runners.paper_helpers import episode, formal_scores, health_step, write_cell

FAITHFUL_ROLES = {"judge": {"name": "gpt_5_mini"}, "tool": {"name": "gpt_5_mini"}}
DS = "deepseek_v4_flash"
WON = {"success": 1, "task_type": "pick_and_place_simple"}
LOST = {"success": 0, "task_type": "pick_and_place_simple"}


def patch_config(cell_dir: Path, **changes: object) -> None:
    """Set dotted config keys in a written cell's manifest (`backbone.sampling`, `runner.trials`…)."""
    path = cell_dir / "manifest.json"
    m = json.loads(path.read_text())
    for dotted, value in changes.items():
        if dotted == "trials":
            m["trials"] = value
            continue
        d = m["config"]
        *head, last = dotted.split(".")
        for k in head:
            d = d.setdefault(k, {})
        d[last] = value
    path.write_text(json.dumps(m))


def read_csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# ---------------------------------------------------------------- figures: gaps, CSV, marks
def test_recovery_figure_draws_no_bar_and_an_empty_csv_value_for_an_unrun_cell(tmp_path):
    # PoS ran on ALFWorld (2 of 2 won); the generic-recovery ablation did not run anywhere
    write_cell(tmp_path, "pos", "qwen3_7_plus", "alfworld", [episode("c", t, WON, {"agent": 1}) for t in "ab"])
    art = paper_figures.build(layout("pos_recovery"), Cells(collect(tmp_path)))
    rows = read_csv(paper_figures.figure_csv(art))
    alf = {r["series"]: r for r in rows if r["benchmark"] == "ALFWorld"}
    assert alf["generic recovery"]["ours"] == "" and alf["generic recovery"]["marks"] == "not run"  # not "0"
    assert alf["generic recovery"]["paper"] == "76.8700"  # the page's number stays beside the gap
    assert alf["factorised recovery (PoS)"]["ours"] == "100.0000"
    assert alf["factorised recovery (PoS)"]["marks"] == "[subset 2/134]"
    # the other three benchmarks: the page's bars, ours empty
    loca = {r["series"]: r for r in rows if r["benchmark"] == "LOCA-Bench"}
    assert loca["factorised recovery (PoS)"]["ours"] == "" and loca["factorised recovery (PoS)"]["paper"] == "56.3800"
    ax = art.figure.axes[0]
    bars = {c.get_label(): c for c in ax.containers}
    assert len(bars["generic recovery"].patches) == 0  # no bar at all, not a bar of height 0
    assert [p.get_height() for p in bars["factorised recovery (PoS)"].patches] == [100.0]
    assert len(bars["generic (paper)"].patches) == 4  # the page gives all four
    assert sum(t.get_text() == "not run" for t in ax.texts) == 4 + 3  # generic ×4, factorised ×3
    assert "[subset 2/134]" in art.data["footnote"]
    paper_figures._plt().close(art.figure)


def test_trapping_incidence_leaves_a_gap_where_a_backbone_did_not_run_a_benchmark(tmp_path):
    trap = [health_step(0, True, "static")]
    write_cell(tmp_path, "pos", "qwen3_7_plus", "alfworld", [episode("c", "a", WON, {"agent": 1}, steps=trap)])
    rca = {"success": 1, "entity_correct": 1, "type_correct": 1, "submitted": 1}
    write_cell(tmp_path, "pos", "qwen3_7_plus", "rca100", [episode("c", "b", rca, {"agent": 1})])
    write_cell(tmp_path, "pos", "kimi_k3", "alfworld", [episode("c", "a", WON, {"agent": 1})])
    art = paper_figures.build(layout("pos_fig3"), Cells(collect(tmp_path)))
    inc = {
        (r["backbone"], r["benchmark"]): r for r in read_csv(paper_figures.figure_csv(art)) if r["panel"] == "incidence"
    }
    assert inc[("Qwen3.7-Plus", "ALFWorld")]["ours"] == "100.0000"
    assert inc[("Qwen3.7-Plus", "RCA-100")]["ours"] == "0.0000"  # ran, never trapped: a true 0
    assert inc[("Kimi-K3", "RCA-100")]["ours"] == "" and inc[("Kimi-K3", "RCA-100")]["marks"] == "not run"
    a1 = art.figure.axes[0]
    heights = [p.get_height() for c in a1.containers for p in c.patches]
    assert sorted(heights) == [0.0, 0.0, 100.0]  # Qwen ALFWorld 100, Qwen RCA 0, Kimi ALFWorld 0; nothing else
    assert [t.get_text() for t in a1.get_legend().get_texts()] == ["ALFWorld", "LOCA-Bench", "RCA-100", "ClinDiag"]
    paper_figures._plt().close(art.figure)


def test_a_figure_states_the_marks_of_its_cells_or_that_none_applies(tmp_path):
    for method, corr in (("full_context", [1, 0]), ("flowstate", [1, 1])):
        write_cell(
            tmp_path / "fixture",
            method,
            DS,
            "memoryarena_math",
            [episode("c", "a", formal_scores(corr), {"agent": 1})],
            data_dir="fixtures",
            roles=FAITHFUL_ROLES,
        )
        write_cell(
            tmp_path / "full",
            method,
            DS,
            "memoryarena_math",
            [episode("c", f"t{i}", formal_scores(corr), {"agent": 1}) for i in range(40)],
            roles=FAITHFUL_ROLES,
        )
    marked = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path / "fixture")))
    assert marked.data["footnote"].startswith("Marks: [fixture] [subset 1/40]")
    rows = read_csv(paper_figures.figure_csv(marked))
    assert {r["marks"] for r in rows if r["series"] == "FlowState" and r["panel"] == "Formal Reasoning"} == {
        "[fixture] [subset 1/40]"
    }
    assert any(t.get_text().startswith("Marks: [fixture]") for t in marked.figure.texts)
    clean = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path / "full")))
    assert clean.data["footnote"].startswith("Marks: none")
    for a in (marked, clean):
        paper_figures._plt().close(a.figure)


# ---------------------------------------------------------------- settings the paper fixes
def test_sampling_that_differs_from_the_papers_is_marked(tmp_path):
    eps = [episode("c", f"t{i}", formal_scores([1]), {"agent": 1}) for i in range(40)]
    hot = write_cell(tmp_path, "flowstate", DS, "memoryarena_math", eps, roles=FAITHFUL_ROLES)
    patch_config(hot, **{"backbone.sampling": {"temperature": 0.9, "top_p": 1.0, "max_completion_tokens": 32768}})
    same = write_cell(tmp_path, "full_context", DS, "memoryarena_math", eps, roles=FAITHFUL_ROLES)
    patch_config(same, **{"backbone.sampling": {"temperature": 0.1, "top_p": 1.0, "max_tokens": 32768}})
    cells = {c.method: c for c in collect(tmp_path)}
    (m,) = cell_marks(cells["flowstate"])
    assert m.label == "[sampling≠paper]" and "temperature=0.9 (paper: 0.1)" in m.detail
    assert cell_marks(cells["full_context"]) == []  # max_tokens is the same limit under another name
    from runners.analysis.paper import build_table

    t = build_table(layout("flowstate_table1"), Cells(list(cells.values())), strict=True, resamples=0).table
    fs = next(r for r in t.rows if r.kind == "ours" and r.label.startswith("FlowState"))
    assert fs.label == "FlowState [sampling≠paper]"
    assert not [r for r in t.rows if r.label == "FlowState (paper)" and r.backbone == "DeepSeek-V4-Flash"]
    assert any(n.startswith("[sampling≠paper]") and "temperature=0.9" in n for n in t.notes)


def test_pos_runs_are_held_to_the_release_settings(tmp_path):
    eps = [episode("c", f"t{i}", WON, {"agent": 1}) for i in range(134)]
    pos = write_cell(tmp_path, "pos", "qwen3_7_plus", "alfworld", eps)
    # the backbone says 0.1, PoS's own per-role setting (the release's) says 0: the agent sent 0
    patch_config(
        pos, **{"backbone.sampling": {"temperature": 0.1}, "method.params": {"sampling": {"agent": {"temperature": 0}}}}
    )
    raw = write_cell(tmp_path, "full_context", "qwen3_7_plus", "alfworld", eps, params={"max_steps": 30})
    patch_config(raw, **{"backbone.sampling": {"temperature": 0.1}}, trials=1)
    cells = {c.method: c for c in collect(tmp_path)}
    assert cell_marks(cells["pos"]) == []
    labels = [m.label for m in cell_marks(cells["full_context"])]
    assert labels == ["[sampling≠paper]", "[setting≠paper]"]
    detail = next(m.detail for m in cell_marks(cells["full_context"]) if m.code == "setting")
    assert "benchmark.max_steps=30 (paper: 50)" in detail


# ---------------------------------------------------------------- the interval legend
def _eps(outcomes: dict[str, list[int]]) -> list[dict]:
    return [
        {"task_id": t, "trial": k, "scores": {"success": s}}
        for t, trials in outcomes.items()
        for k, s in enumerate(trials)
    ]


def _sr(es: list[dict]) -> dict[str, float]:
    return {"SR": 100.0 * sum(e["scores"]["success"] for e in es) / len(es)}


def test_wilson_over_episodes_at_one_trial_and_over_tasks_at_three():
    # 6 of 9 correct. Wilson(6, 9) by hand: p = 2/3, z² = 3.8415; centre = (p + z²/18) / (1 + z²/9) = 0.6168,
    # half = z·sqrt(p(1−p)/9 + z²/324) / (1 + z²/9) = 0.2626 -> [35.42, 87.94]
    one = _eps({f"t{i}": [int(i < 6)] for i in range(9)})
    (lo, hi), kind = rate_interval(200 / 3, one, _sr, "SR", None, n_tasks=9)
    assert kind == "wilson" and (round(lo, 1), round(hi, 1)) == (35.4, 87.9)
    # 3 tasks × 3 trials, 6 of 9: n = 3 tasks, k = 2 -> Wilson(2, 3): centre = (2/3 + z²/6) / (1 + z²/3) = 0.5731,
    # half = z·sqrt(2/27 + z²/36) / (1 + z²/3) = 0.3654 -> [20.77, 93.85] (not Wilson(6, 9): trials are not tasks)
    three = _eps({"a": [1, 1, 1], "b": [1, 1, 0], "c": [1, 0, 0]})
    (lo3, hi3), kind3 = rate_interval(200 / 3, three, _sr, "SR", None, n_tasks=3)
    assert kind3 == "wilson" and (round(lo3, 2), round(hi3, 2)) == (20.77, 93.85)
    assert (lo3, hi3) == pytest.approx(wilson_interval(2, 3))
    # the legend says exactly what was used
    assert (
        "with several trials per task n = tasks" in INTERVAL_LEGEND
        and "one trial per task n = episodes" in INTERVAL_LEGEND
    )
