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
from runners.analysis.cells import collect
from tests.runners.paper_helpers import episode, formal_scores, health_step, write_cell
from tests.runners.test_paper import DRAW, figures_or_skip

FAITHFUL_ROLES = {"judge": {"name": "gpt_5_mini"}, "tool": {"name": "gpt_5_mini"}}
DS = "deepseek_v4_flash"
REPO_DOCS = Path(__file__).resolve().parents[2] / "docs"
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
    art = paper_figures.build(layout("pos_recovery"), Cells(collect(tmp_path)), draw=DRAW)
    rows = read_csv(paper_figures.figure_csv(art))
    alf = {r["series"]: r for r in rows if r["benchmark"] == "ALFWorld"}
    assert alf["generic recovery"]["ours"] == "" and alf["generic recovery"]["marks"] == "not run"  # not "0"
    assert alf["generic recovery"]["paper"] == "76.8700"  # the page's number stays beside the gap
    assert alf["factorised recovery (PoS)"]["ours"] == "100.0000"
    assert alf["factorised recovery (PoS)"]["marks"] == "[subset 2/134]"
    # the other three benchmarks: the page's bars, ours empty
    loca = {r["series"]: r for r in rows if r["benchmark"] == "LOCA-Bench"}
    assert loca["factorised recovery (PoS)"]["ours"] == "" and loca["factorised recovery (PoS)"]["paper"] == "56.3800"
    figures_or_skip()  # the footnote is written under the drawn axes
    assert "[subset 2/134]" in art.data["footnote"]
    ax = art.figure.axes[0]
    bars = {c.get_label(): c for c in ax.containers}
    assert len(bars["generic recovery"].patches) == 0  # no bar at all, not a bar of height 0
    assert [p.get_height() for p in bars["factorised recovery (PoS)"].patches] == [100.0]
    assert len(bars["generic (paper)"].patches) == 4  # the page gives all four
    assert sum(t.get_text() == "not run" for t in ax.texts) == 4 + 3  # generic ×4, factorised ×3
    assert "[subset 2/134]" in art.data["footnote"]


def test_trapping_incidence_leaves_a_gap_where_a_backbone_did_not_run_a_benchmark(tmp_path):
    trap = [health_step(0, True, "static")]
    write_cell(tmp_path, "pos", "qwen3_7_plus", "alfworld", [episode("c", "a", WON, {"agent": 1}, steps=trap)])
    rca = {"success": 1, "entity_correct": 1, "type_correct": 1, "submitted": 1}
    write_cell(tmp_path, "pos", "qwen3_7_plus", "rca100", [episode("c", "b", rca, {"agent": 1})])
    write_cell(tmp_path, "pos", "kimi_k3", "alfworld", [episode("c", "a", WON, {"agent": 1})])
    art = paper_figures.build(layout("pos_fig3"), Cells(collect(tmp_path)), draw=DRAW)
    inc = {
        (r["backbone"], r["benchmark"]): r for r in read_csv(paper_figures.figure_csv(art)) if r["panel"] == "incidence"
    }
    assert inc[("Qwen3.7-Plus", "ALFWorld")]["ours"] == "100.0000"
    assert inc[("Qwen3.7-Plus", "RCA-100")]["ours"] == "0.0000"  # ran, never trapped: a true 0
    assert inc[("Kimi-K3", "RCA-100")]["ours"] == "" and inc[("Kimi-K3", "RCA-100")]["marks"] == "not run"
    figures_or_skip()
    a1 = art.figure.axes[0]
    heights = [p.get_height() for c in a1.containers for p in c.patches]
    assert sorted(heights) == [0.0, 0.0, 100.0]  # Qwen ALFWorld 100, Qwen RCA 0, Kimi ALFWorld 0; nothing else
    assert [t.get_text() for t in a1.get_legend().get_texts()] == ["ALFWorld", "LOCA-Bench", "RCA-100", "ClinDiag"]


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
    marked = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path / "fixture")), draw=DRAW)
    rows = read_csv(paper_figures.figure_csv(marked))
    assert {r["marks"] for r in rows if r["series"] == "FlowState" and r["panel"] == "Formal Reasoning"} == {
        "[fixture] [subset 1/40]"
    }
    clean = paper_figures.build(layout("flowstate_fig4"), Cells(collect(tmp_path / "full")), draw=DRAW)
    figures_or_skip()  # the footnote is written under the drawn axes
    assert marked.data["footnote"].startswith("Marks: [fixture] [subset 1/40]")
    assert clean.data["footnote"].startswith("Marks: none")
    assert any(t.get_text().startswith("Marks: [fixture]") for t in marked.figure.texts)


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
    # RCA-100 with a 4,000-character observation cap (the release: 20,000) and three trials (the release: one)
    rca = {"success": 1, "entity_correct": 1, "type_correct": 1, "submitted": 1}
    d = write_cell(
        tmp_path / "rca",
        "pos",
        "qwen3_7_plus",
        "rca100",
        [episode("c", f"t{i}", rca, {"agent": 1}, trial=k) for i in range(103) for k in range(3)],
        params={"observation_max_chars": 4000, "max_steps": 50},
    )
    patch_config(d, trials=3)
    (m,) = cell_marks(collect(tmp_path / "rca")[0])
    assert m.label == "[setting≠paper]"
    assert m.detail.endswith("benchmark.observation_max_chars=4000 (paper: 20000), trials=3 (paper: 1)")


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


# ---------------------------------------------------------------- the papers' claims
def summary(method: str, backbone: str, bench: str, metrics: dict, tokens: dict | None = None, **kw: object):
    """A cell summary of the full split (no subset mark) with these metrics."""
    from runners.analysis.papers import paper_task_count
    from runners.analysis.cells import CellSummary

    n = paper_task_count(bench) or 1
    return CellSummary(
        cell=f"{method}__{backbone}__{bench}",
        method=method,
        backbone=backbone,
        benchmark=bench,
        scripted=False,
        n_episodes=n,
        n_tasks=n,
        trials=1,
        metrics=dict(metrics),
        table_metrics=list(metrics),
        tokens_by_role=tokens or {},
        config={"backbone": {"name": backbone}, "benchmark": {"name": bench}},
        **kw,
    )


def the_papers_numbers_as_cells(tmp_path) -> dict:
    """Our cells holding exactly the paper's numbers (Tables 1–5 and PoS Table 1; Table 2's cost as
    tokens per episode; LOCA 256K and the pooled Formal Reasoning curve made up so the claims hold)."""
    from runners.analysis.papers import BACKBONE_LABELS, BENCHMARK_DOMAINS, METHOD_LABELS, reference_rows

    inv_m = {v: k for k, v in METHOD_LABELS.items()} | {"Raw Trajectory": "full_context"}
    inv_b = {v: k for k, v in BACKBONE_LABELS.items()}
    inv_x = {v: k for k, v in BENCHMARK_DOMAINS.items()}
    metrics: dict = {}
    for r in reference_rows():
        dom = r.get("domain") or r.get("benchmark")
        if (
            r.get("row_type", "result") != "result"
            or not r.get("value")
            or dom not in inv_x
            or r["method"] not in inv_m
        ):
            continue
        if r.get("table") not in ("Table 1", "Table 2", "Table 4", "Table 5") or r["backbone"] not in inv_b:
            continue
        key = (inv_m[r["method"]], inv_b[r["backbone"]], inv_x[dom])
        name = "SR" if (key[2], r["metric"]) == ("alfworld", "task_success") else r["metric"]
        metrics.setdefault(key, {}).setdefault(name, float(r["value"]))
    for (m, b, x), ms in metrics.items():
        if x == "loca":
            ms["success_256k"] = 60.0 if m == "pos" else 50.0
    # FlowState's pooled Formal Reasoning curve holds every subtask; the others lose depth
    from tests.runners.test_paper import formal_cell

    fn = collect(formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1]}).parent)[0].metric_fn
    cells = {}
    for key, ms in metrics.items():
        m, b, x = key
        eps = []
        if x in ("memoryarena_math", "memoryarena_phys") and b == DS:
            corr = [1, 1, 1] if m == "flowstate" else [1, 1, 0]
            n = 40 if x == "memoryarena_math" else 20  # the full split: no subset mark
            eps = [episode("c", f"{x}-t{i}", formal_scores(corr), {"agent": 1}) for i in range(n)]
        tokens = None
        if key == ("full_context", "qwen3_7_plus", "rca100"):
            tokens = {"agent": 355_700 * 103}
        if key == ("pos", "qwen3_7_plus", "rca100"):
            tokens = {"agent": 281_200 * 103, "state": 1_000_000 * 103, "sentinel": (1_800_130 - 1_281_200) * 103}
        cells[key] = summary(m, b, x, ms, tokens, episodes=eps, metric_fn=fn if eps else None)
    return cells


def test_every_claim_recomputed_on_the_papers_tables_gives_the_stated_number():
    from runners.analysis.paper_claims import check

    by = {c.claim.id: c for c in check(Cells([]))}
    for cid, want in {
        "fs-leads-8-of-9": "8 of 9",
        "fs-shopping-ps-over-memory": "+11.78 pp",  # 42.89 − ReasoningBank 31.11
        "fs-travel-ps-over-strongest": "+5.61 pp",  # 12.57 − Full Context on Qwen3.5 6.96
        "fs-shopping-ps-backbones": "+17.55 to +21.78 pp",
        "fs-relative-tokens": "28.3–56.3 % lower",  # Qwen −28.32, GPT −56.30 (means of the Table 5 token Δs)
        "fs-headline-memoryarena": "+4.55 pp SR, -43.2 % tokens",
        "fs-headline-tau": "+13.95 pp Pass1, -40.6 % tokens",
        "fs-retail-action-acc": "-4.90 pp",
        "fs-highest-nauc": "highest in 3 of 3",
        "pos-best-everywhere": "best in 12 of 12",
        "pos-ablations-lower": "24 of 24 lower",
        "pos-total-tokens": "5.06×",
        "pos-agent-tokens": "-20.9 %",
    }.items():
        assert by[cid].paper_value == want, cid
    assert by["pos-256k-lead"].paper_value.startswith("not in the tables")  # the page gives the range only
    assert all(c.verdict == "not computable" and c.missing for c in by.values())  # no cell of ours


def test_every_claim_holds_on_the_papers_own_numbers_and_says_so(tmp_path):
    from runners.analysis import paper_claims

    cells = the_papers_numbers_as_cells(tmp_path)
    got = {c.claim.id: c for c in paper_claims.check(Cells(list(cells.values())))}
    assert {cid: c.verdict for cid, c in got.items() if c.verdict != "holds"} == {}
    for cid in ("fs-leads-8-of-9", "fs-shopping-ps-over-memory", "fs-travel-ps-over-strongest", "pos-total-tokens"):
        assert got[cid].ours == got[cid].paper_value  # the same computation on the same numbers
    assert got["pos-256k-lead"].ours == "+10.00 pp"  # 60 − 50 on each backbone
    assert got["fs-leads-8-of-9"].detail == "not led: Math SR (to Full Context / GPT-5.6-terra)"
    assert all(c.marks == "" for c in got.values())  # full splits, no recorded setting differs
    md = paper_claims.claims_md(list(got.values()))
    assert md.startswith("# The papers' claims, checked") and "14 hold, 0 do not hold, 0 not computable" in md
    rows = read_csv(paper_claims.claims_csv(list(got.values())))
    assert [r["id"] for r in rows] == [c.id for c in paper_claims.CLAIMS] and {r["verdict"] for r in rows} == {"holds"}


@pytest.mark.parametrize(
    "cid, change, ours",
    [
        # Mem0 at 50.00 PS on Shopping: FlowState 42.89 − 50.00
        ("fs-shopping-ps-over-memory", {("mem0", DS, "memoryarena_shopping"): {"PS": 50.0}}, "-7.11 pp"),
        # Full Context on Qwen3.5 Travel PS at 13.00: 12.57 − 13.00
        (
            "fs-travel-ps-over-strongest",
            {("full_context", "qwen3_5_397b", "memoryarena_travel"): {"PS": 13.0}},
            "-0.43 pp",
        ),
        # BM25 above FlowState on Shopping SR too: a second metric lost refutes "8 of 9"
        ("fs-leads-8-of-9", {("bm25", DS, "memoryarena_shopping"): {"SR": 6.0}}, "7 of 9"),
        # GPT FlowState Shopping PS 10 below its Full Context (GPT FC Shopping PS is 31.33 in Table 5)
        ("fs-shopping-ps-backbones", {("flowstate", "gpt_5_6_terra", "memoryarena_shopping"): {"PS": 21.33}}, None),
        # Qwen's FlowState spends as much as Full Context on every task: 0 % lower there
        (
            "fs-relative-tokens",
            {
                ("flowstate", "qwen3_5_397b", x): {"Tok": None}
                for x in ("memoryarena_shopping", "memoryarena_math", "memoryarena_phys")
            },
            None,
        ),
        # an ablation above PoS once (GLM ClinDiag: w/o trapping 60 > PoS 52.15)
        (
            "pos-ablations-lower",
            {("pos_no_trapping", "glm_5_3", "clindiag"): {"diagnosis_accuracy": 60.0}},
            "23 of 24 lower",
        ),
        (
            "pos-best-everywhere",
            {("pace", "kimi_k3", "rca100"): {"joint_entity_type_accuracy": 51.46}},
            "best in 11 of 12",
        ),  # a tie is not best
        ("pos-256k-lead", {("acon", "glm_5_3", "loca"): {"success_256k": 61.0}}, "-1.00 to +10.00 pp"),
        ("fs-retail-action-acc", {("flowstate", DS, "tau_retail"): {"ActionAcc": 99.0}}, None),
        # FlowState Shopping SR at −20 (5.33 in the paper): the mean ΔSR turns negative
        ("fs-headline-memoryarena", {("flowstate", DS, "memoryarena_shopping"): {"SR": -20.0}}, None),
        # FlowState on Airline spends 1,000 M tokens: pooled tokens above Full Context's
        ("fs-headline-tau", {("flowstate", DS, "tau_airline"): {"Tok": 1000.0}}, None),
        # Full Context's Shopping nAUC at 99: FlowState no longer highest there
        ("fs-highest-nauc", {("full_context", DS, "memoryarena_shopping"): {"nAUC": 99.0}}, "highest in 2 of 3"),
        # PoS's belief and sentinel calls cost nothing and its agent as much as Raw's: 1.00×, +0.0 %
        ("pos-total-tokens", {("pos", "qwen3_7_plus", "rca100"): {"tokens": {"agent": 355_700 * 103}}}, "1.00×"),
        ("pos-agent-tokens", {("pos", "qwen3_7_plus", "rca100"): {"tokens": {"agent": 355_700 * 103}}}, "+0.0 %"),
    ],
)
def test_each_claim_fails_on_results_built_to_refute_it(tmp_path, cid, change, ours):
    from runners.analysis import paper_claims

    cells = the_papers_numbers_as_cells(tmp_path)
    for key, ms in change.items():
        for k, v in ms.items():
            if k == "tokens":
                cells[key].tokens_by_role = v
            elif k == "Tok" and v is None:  # same tokens as Full Context on that backbone and task
                cells[key].metrics["Tok"] = cells[("full_context", key[1], key[2])].metrics["Tok"]
            else:
                cells[key].metrics[k] = v
    (got,) = [c for c in paper_claims.check(Cells(list(cells.values()))) if c.claim.id == cid]
    assert got.verdict == "does not hold", (got.ours, got.detail)
    if ours is not None:
        assert got.ours == ours


def test_a_claim_over_missing_cells_is_not_computable_and_lists_them_unless_refuted(tmp_path):
    from runners.analysis import paper_claims

    cells = the_papers_numbers_as_cells(tmp_path)
    del cells[("reasoningbank", DS, "memoryarena_shopping")]
    got = {c.claim.id: c for c in paper_claims.check(Cells(list(cells.values())))}
    shop = got["fs-shopping-ps-over-memory"]
    assert shop.verdict == "not computable" and shop.missing == ["ReasoningBank / DeepSeek-V4-Flash / Web Shopping"]
    # one missing cell cannot rescue a claim of "every setting" that a present cell already refutes
    cells[("pos_no_consistency", "kimi_k3", "alfworld")].metrics["SR"] = 99.0
    del cells[("pos_no_trapping", "glm_5_3", "loca")]
    got = {c.claim.id: c for c in paper_claims.check(Cells(list(cells.values())))}
    assert got["pos-ablations-lower"].verdict == "does not hold"
    assert "PoS w/o consistency validation / Kimi-K3 / ALFWorld" in got["pos-ablations-lower"].detail


def test_a_claims_marks_are_those_of_the_cells_it_read(tmp_path):
    from runners.analysis import paper_claims

    cells = the_papers_numbers_as_cells(tmp_path)
    c = cells[("mem0", DS, "memoryarena_shopping")]
    c.config = {**c.config, "benchmark": {"name": "memoryarena_shopping", "params": {"data_dir": "fixtures"}}}
    got = {x.claim.id: x for x in paper_claims.check(Cells(list(cells.values())))}
    assert got["fs-shopping-ps-over-memory"].marks == "[fixture]"
    assert got["fs-travel-ps-over-strongest"].marks == ""  # it never read the Shopping cell


# ---------------------------------------------------------------- headlines
def _headline_pool(root: Path, backbone: str, **kw: object) -> None:
    """FlowState and Full Context on Math and Physics (all 40 / 20 tasks): ΔSR +50 on Math, 0 on Physics."""
    from tests.runners.test_paper import formal_cell

    kw.setdefault("roles", FAITHFUL_ROLES)
    for bench, n in (("memoryarena_math", 40), ("memoryarena_phys", 20)):
        fc = {f"t{i}": ([1, 0] if i % 2 else [1, 1]) if bench == "memoryarena_math" else [1, 1] for i in range(n)}
        fs = {f"t{i}": [1, 1] for i in range(n)}
        formal_cell(root, "full_context", bench, fc, backbone=backbone, tokens=3000, **kw)
        formal_cell(root, "flowstate", bench, fs, backbone=backbone, tokens=1000, **kw)


def test_headline_marks_and_strict_on_a_marked_and_an_unmarked_pool(tmp_path):
    from runners.analysis.paper_tables import headlines, headlines_md

    _headline_pool(tmp_path / "clean", DS)
    _headline_pool(tmp_path / "marked", DS, data_dir="fixtures")
    (clean,) = [h for h in headlines(Cells(collect(tmp_path / "clean"))) if h["paper"] == "FlowState"]
    # ΔSR: Math FC 50 % (odd tasks lose the last subtask), FS 100 % -> +50; Physics 0 -> mean +25
    assert clean["delta_pp"] == pytest.approx(25.0) and clean["tokens_pct"] == pytest.approx(100 * (1 / 3 - 1))
    assert clean["marks"] == ["[2 of 4 domains]"]  # the paper's figure is over four domains
    (marked,) = [h for h in headlines(Cells(collect(tmp_path / "marked"))) if h["paper"] == "FlowState"]
    assert marked["marks"] == ["[fixture]", "[2 of 4 domains]"]
    line = next(ln for ln in headlines_md([marked]).splitlines() if ln.startswith("| FlowState"))
    assert "| [fixture] [2 of 4 domains] |" in line and "+4.55 pp, -43.2 % tokens" in line  # shown, with its marks
    strict = next(ln for ln in headlines_md([marked], strict=True).splitlines() if ln.startswith("| FlowState"))
    assert "+4.55" not in strict and "--strict" in strict
    assert any(ln.startswith("- [fixture]") for ln in headlines_md([marked]).splitlines())  # the marks' footnote
    # an unmarked headline keeps the paper's value under --strict: the full four domains, faithful cells
    full = dict(clean, marks=[], n_domains=4)
    assert "+4.55 pp, -43.2 % tokens" in headlines_md([full], strict=True)


def test_the_papers_headline_stands_only_beside_its_own_backbone(tmp_path):
    from runners.analysis.paper_tables import headlines, headlines_md

    for bb in (DS, "gpt_5_6_terra", "qwen3_5_397b"):
        _headline_pool(tmp_path, bb)
    hs = {h["backbone"]: h for h in headlines(Cells(collect(tmp_path))) if h["paper"] == "FlowState"}
    assert hs[DS]["paper_delta_pp"] == 4.55 and hs[DS]["paper_tokens_pct"] == -43.2
    for other in ("gpt_5_6_terra", "qwen3_5_397b"):
        assert hs[other]["paper_delta_pp"] is None and hs[other]["paper_tokens_pct"] is None
    md = headlines_md(list(hs.values()))
    assert md.count("+4.55 pp") == 1
    assert md.count("– (reported on DeepSeek-V4-Flash only)") == 2


# ---------------------------------------------------------------- PoS Table 2
def test_pos_table2_prints_a_dash_for_a_cell_whose_every_episode_errored_and_marks_scripted(tmp_path):
    from runners.analysis.paper import build_cost

    rca = {"success": 1, "entity_correct": 1, "type_correct": 1, "submitted": 1}
    raw = write_cell(
        tmp_path,
        "full_context",
        "qwen3_7_plus",
        "rca100",
        [episode("c", f"t{i}", rca, {"agent": 1000}) for i in range(2)],
    )
    m = json.loads((raw / "manifest.json").read_text())
    m["scripted"] = True
    (raw / "manifest.json").write_text(json.dumps(m))
    write_cell(
        tmp_path,
        "pos",
        "qwen3_7_plus",
        "rca100",
        [episode("c", f"t{i}", {}, {"agent": 500}, status="error", error="boom") for i in range(2)],
    )
    art = build_cost(layout("pos_table2"), Cells(collect(tmp_path)))
    pos = next(r for r in art.table.rows if r.kind == "ours" and r.label.startswith("PoS"))
    assert pos.cells == ["RCA-100", "–", "–", "–", "–"]  # not 0.0 | -100.0 | 0.00×
    raw_row = next(r for r in art.table.rows if r.kind == "ours" and r.label.startswith("Raw Trajectory"))
    assert raw_row.label.startswith("Raw Trajectory [scripted]") and raw_row.cells[1] == "1.0"
    assert art.status == "not produced" and art.missing  # nothing comparable was measured


# ---------------------------------------------------------------- layout as printed
def test_table3_prints_travel_first_and_table1_spans_formal_reasoning_over_math_and_physics(tmp_path):
    from runners.analysis.paper import build_table, table_md, table_tex

    from tests.runners.test_paper import formal_cell

    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1]})
    cells = Cells(collect(tmp_path))
    t3 = build_table(layout("flowstate_table3"), cells, resamples=0).table
    assert t3.header[2:4] == ["Travel SR", "Travel PS"] and t3.header.index("Travel SR") < t3.header.index(
        "Web Shopping SR"
    )  # the paper prints Group Travel first
    t1 = build_table(layout("flowstate_table1"), cells, resamples=0).table
    # 4 + 5 + 4 + 4 value columns: SR, PS, (sPS,) #Tok, Tok/task per domain
    assert t1.spans == [
        [("Web Shopping", 4), ("Travel", 5), ("Formal Reasoning", 8)],
        [("", 9), ("Math", 4), ("Physics", 4)],
    ]
    assert t1.short[2:6] == ["SR", "PS", "#Tok (k)", "Tok/task (k)"]
    tex = table_tex(t1, "t")
    assert r"\multicolumn{8}{c}{Formal Reasoning}" in tex and r"\cmidrule(lr){12-19}" in tex
    assert r"\multicolumn{4}{c}{Math} & \multicolumn{4}{c}{Physics}" in tex
    md = table_md(t1, "t")
    assert "| Formal Reasoning: Math SR |" in md and "| Web Shopping SR |" in md


def test_bold_ranks_performance_per_backbone_group_and_the_papers_rows_apart(tmp_path):
    from runners.analysis.paper import build_table

    from tests.runners.test_paper import formal_cell

    # Qwen: FlowState 100 > Full Context 0; DeepSeek: Full Context 100 > FlowState 0 (Math SR)
    for bb, fs, fc in (("qwen3_5_397b", [1], [0]), (DS, [0], [1])):
        formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": fs}, backbone=bb, tokens=100)
        formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": fc}, backbone=bb, tokens=900)
    t = build_table(layout("flowstate_table5"), Cells(collect(tmp_path)), resamples=0).table
    sr, tok = t.header.index("Math SR") - 2, t.header.index("Math #Tok (k)") - 2

    def style(label, backbone):
        return next(r for r in t.rows if r.label.startswith(label) and r.backbone == backbone).styles

    assert style("FlowState [", "Qwen3.5-397B-A17B")[sr] == "best"  # best within the Qwen group
    assert style("Full Context [", "DeepSeek-V4-Flash")[sr] == "best"  # and within the DeepSeek group
    assert style("FlowState [", "DeepSeek-V4-Flash")[sr] == "second"
    assert all(r.styles[tok] == "" for r in t.rows if r.kind in ("ours", "paper"))  # tokens are not ranked
    # the paper's rows are ranked among themselves: Table 5 Qwen Math SR, FlowState 37.50 > Full Context 30.00
    assert style("FlowState (paper)", "Qwen3.5-397B-A17B")[sr] == "best"
    assert style("Full Context (paper)", "Qwen3.5-397B-A17B")[sr] == "second"


def test_the_reports_paper_tab_carries_the_claims_and_the_spanning_header(tmp_path):
    from runners.analysis.report import gather

    from tests.runners.test_paper import formal_cell

    formal_cell(tmp_path, "full_context", "memoryarena_math", {"a": [1, 0]})
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1, 1]})
    index, _ = gather(tmp_path)
    claims = index["paper"]["claims"]
    assert [c["id"] for c in claims][:2] == ["fs-leads-8-of-9", "fs-shopping-ps-over-memory"] and len(claims) == 14
    assert all(c["verdict"] == "not computable" for c in claims)  # one domain of one table: nothing complete
    lead = claims[0]
    assert lead["paper_recomputed"] == "8 of 9" and "[subset 1/40]" in lead["marks"]
    t1 = next(a for a in index["paper"]["artefacts"] if a["name"] == "flowstate_table1")["table"]
    assert list(t1["spans"][0][-1]) == ["Formal Reasoning", 8]


def test_the_pos_presets_run_every_method_at_the_releases_temperature_on_every_backbone():
    from tests.runners.test_roles import composed

    for bb, method in (("qwen3_7_plus", "full_context"), ("kimi_k3", "acon")):  # a baseline on two backbones
        _, (c,) = composed("experiment=pos_table1", f"backbone={bb}", "benchmark=alfworld", f"method={method}")
        assert c.backbone.name == bb and c.backbone.sampling["temperature"] == 0  # not the backbone config's 0.1
        assert c.backbone.sampling["top_p"] == 1.0  # the rest of the backbone's settings stay


# ---------------------------------------------------------------- (paper) rows: backbone, names, --strict
def test_a_paper_row_stands_only_beside_ours_of_the_same_backbone(tmp_path):
    from runners.analysis.paper import build_table

    from tests.runners.test_paper import formal_cell

    def shopping(bb: str) -> None:
        scores = {"steps": [{"match": True, "reward": 1.0}], "subtask_correct": [1]}
        write_cell(tmp_path, "flowstate", bb, "memoryarena_shopping", [episode("c", "s", scores, {"agent": 1})])

    def flowstate_rows() -> list[tuple[str, str]]:
        t = build_table(layout("flowstate_table3"), Cells(collect(tmp_path)), resamples=0).table
        return [
            (r.kind, r.backbone)
            for r in t.rows
            if r.kind != "group" and r.label.startswith("FlowState") and "w/o" not in r.label
        ]

    # Table 5's FlowState cells on GPT-5.6-terra and Qwen3.5 pooled into Table 3 (whose FlowState row is DeepSeek's)
    shopping("gpt_5_6_terra")
    shopping("qwen3_5_397b")
    assert flowstate_rows() == [
        ("paper", "DeepSeek-V4-Flash"),  # the paper's row alone, the paper's shape
        ("ours", "GPT-5.6-terra"),  # ours on other backbones: no (paper) row beside them
        ("ours", "Qwen3.5-397B-A17B"),
    ]
    # with DeepSeek run too, its (paper) row follows it directly
    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1]})  # not a Table 3 cell: no change
    shopping(DS)
    assert flowstate_rows() == [
        ("ours", "DeepSeek-V4-Flash"),
        ("paper", "DeepSeek-V4-Flash"),
        ("ours", "GPT-5.6-terra"),
        ("ours", "Qwen3.5-397B-A17B"),
    ]


def test_table4s_uncertain_names_are_marked_on_the_papers_rows(tmp_path):
    from runners.analysis.paper import build_table

    from tests.runners.test_paper import formal_cell

    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1]})
    formal_cell(tmp_path, "flowstate", "memoryarena_phys", {"a": [1]})
    t4 = build_table(layout("flowstate_table4"), Cells(collect(tmp_path)), resamples=0).table
    labels = [r.label for r in t4.rows if r.kind == "paper"]
    assert "BM25 (paper) [name uncertain]" in labels and "ReasoningBank (paper) [name uncertain]" in labels
    assert "Mem0 (paper)" in labels and "FlowState (paper)" in labels  # names the paper prints
    assert any(n.startswith("[name uncertain]") and "(BM25, ReasoningBank)" in n for n in t4.notes)
    t1 = build_table(layout("flowstate_table1"), Cells(collect(tmp_path)), resamples=0).table
    assert "BM25 (paper)" in [r.label for r in t1.rows]  # Table 1's names are restored from the prose, checked


def test_strict_drops_the_papers_delta_beside_a_delta_of_marked_rows(tmp_path):
    from runners.analysis.paper import build_table

    from tests.runners.test_paper import formal_cell

    for root, kw in ((tmp_path / "marked", {"data_dir": "fixtures"}), (tmp_path / "clean", {})):
        for m, corr in (("full_context", [1, 0]), ("flowstate", [1, 1])):
            formal_cell(root, m, "memoryarena_math", {f"t{i}": corr for i in range(40)}, **kw)
    for root, strict, want in (
        (tmp_path / "marked", False, True),
        (tmp_path / "marked", True, False),  # our Δ comes from [fixture] rows: no Δ (paper) beside it
        (tmp_path / "clean", True, True),
    ):
        t = build_table(layout("flowstate_table1"), Cells(collect(root)), strict=strict, resamples=0).table
        assert any(r.kind == "paper_delta" for r in t.rows) is want, (root.name, strict)
        assert any(r.kind == "delta" for r in t.rows)  # ours stays


def test_the_tables_print_the_interval_the_legend_describes_at_three_trials(tmp_path):
    from runners.analysis.tables import INTERVAL_NOTE, build_tables

    # 3 tasks × 3 trials, 6 of 9 episodes succeed (task a 3/3, b 2/3, c 1/3)
    eps = [
        episode("c", t, formal_scores([ok]), {"agent": 1}, trial=k)
        for t, oks in (("a", [1, 1, 1]), ("b", [1, 1, 0]), ("c", [1, 0, 0]))
        for k, ok in enumerate(oks)
    ]
    d = write_cell(tmp_path, "full_context", DS, "memoryarena_math", eps, roles=FAITHFUL_ROLES)
    patch_config(d, trials=3)
    header, rows, _ = build_tables(collect(tmp_path), "full_context", resamples=50)
    sr = header.index("memoryarena_math:SR")
    assert rows[0][sr] == "66.67 [20.77, 93.85]"  # Wilson(2, 3), not Wilson(6, 9) = [35.42, 87.94]
    assert "with several trials per task n = tasks" in INTERVAL_NOTE  # the legend under every table


def test_figure_csvs_and_claims_are_written_without_matplotlib(tmp_path, monkeypatch):
    from runners.analysis import paper

    from tests.runners.test_paper import formal_cell

    formal_cell(tmp_path, "flowstate", "memoryarena_math", {"a": [1, 0]})
    monkeypatch.setattr(paper_figures, "figures_available", lambda: False)
    paper.write_all(tmp_path, collect(tmp_path), resamples=0)
    out = tmp_path / "paper"
    assert not (out / "flowstate_fig4.png").exists()
    rows = read_csv((out / "flowstate_fig4.csv").read_text())
    formal = [r for r in rows if r["panel"] == "Formal Reasoning" and r["series"] == "FlowState"]
    assert [(r["k"], r["ours"]) for r in formal] == [("1", "100.0000"), ("2", "0.0000")]
    assert (out / "claims.md").is_file() and "[claims.md](claims.md)" in (out / "index.md").read_text()


# ---------------------------------------------------------------- every artefact completable from its presets
def _preset_cells(preset: str, backbone: str | None = None, methods: list[str] | None = None) -> list:
    """One full-split cell summary per (method, backbone, benchmark) a preset's grid runs (read from
    conf/experiment/<preset>.yaml: its grid and its backbone override; `backbone=` as on the command line)."""
    import itertools

    import yaml

    from runners.analysis.papers import REFERENCE_DIR

    raw = yaml.safe_load((REFERENCE_DIR.parents[1] / "conf" / "experiment" / f"{preset}.yaml").read_text())
    grid = raw["experiment"]["grid"]
    default = next((d["override /backbone"] for d in raw.get("defaults", []) if "override /backbone" in d), None)
    backbones = grid.get("backbone") or [backbone or default]
    return [
        summary(m, b, x, {}) for m, b, x in itertools.product(methods or grid["method"], backbones, grid["benchmark"])
    ]


@pytest.mark.parametrize(
    "artefact, runs",
    [
        (
            "flowstate_table1",
            [("flowstate_table1", None), ("flowstate_table5_backbones", None), ("flowstate_table1_backbones", None)],
        ),
        ("flowstate_table2", [("flowstate_table2_tau", None)]),
        ("flowstate_table3", [("flowstate_table3_ablation", None)]),
        ("flowstate_table4", [("flowstate_table1", None)]),
        ("flowstate_table5", [("flowstate_table5_backbones", None)]),
        ("pos_table1", [("pos_table1", b) for b in ("qwen3_7_plus", "kimi_k3", "glm_5_3")]),
    ],
)
def test_every_table_is_completed_by_the_presets_the_docs_name(artefact, runs):
    from runners.analysis.paper import build_table

    cells = [c for preset, bb in runs for c in _preset_cells(preset, bb)]
    art = build_table(layout(artefact), Cells(cells), resamples=0)
    assert art.status == "produced", art.missing
    doc = (REPO_DOCS / "reproducing.md").read_text()
    for preset, _ in runs:
        assert f"experiment={preset}" in doc


def test_table1_without_the_travel_preset_misses_exactly_the_cell_it_runs():
    from runners.analysis.paper import build_table

    cells = _preset_cells("flowstate_table1") + _preset_cells("flowstate_table5_backbones")
    art = build_table(layout("flowstate_table1"), Cells(cells), resamples=0)
    assert art.missing == ["Full Context / Qwen3.5-397B-A17B / Travel"]  # what flowstate_table1_backbones runs


def test_fig3_csv_keeps_the_papers_points_of_a_backbone_we_did_not_run(tmp_path):
    from tests.runners.test_paper import formal_cell

    for m in ("full_context", "flowstate"):
        for bench in ("memoryarena_math", "memoryarena_phys"):
            formal_cell(tmp_path, m, bench, {"a": [1]}, backbone="qwen3_5_397b")
    art = paper_figures.build(layout("flowstate_fig3"), Cells(collect(tmp_path)), draw=False)
    rows = read_csv(paper_figures.figure_csv(art))
    gpt = [r for r in rows if r["backbone"] == "GPT-5.6-terra" and r["panel"] == "SR"]
    assert [(r["series"], r["ours"], r["marks"]) for r in gpt] == [
        ("Full Context", "", "not run"),
        ("FlowState", "", "not run"),
    ]
    # the paper's GPT point from Table 5: SR means over Shopping, Math, Physics (FC 0.00, 42.50, 50.00)
    assert gpt[0]["paper"] == f"{(0.0 + 42.5 + 50.0) / 3:.4f}"
