"""The papers' tables (and the helpers the figures share): layouts read from
`runners/reference/layouts/*.yaml`, our rows beside the papers', marks, best/second, Δ rows,
PoS Table 2, the headlines. runners/analysis/paper.py builds the whole artefact set."""

from __future__ import annotations

import csv
import functools
import io
import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from runners.analysis.fidelity import footnotes, row_marks
from runners.analysis.papers import (
    tex_escape,
    BACKBONE_LABELS,
    BENCHMARK_DOMAINS,
    LAYOUT_DIR,
    METHOD_ALIASES,
    METHOD_LABELS,
    labels,
    paper_lookup,
    paper_task_count,
)
from runners.api import MetricSpec
from runners.analysis.stats import DEFAULT_RESAMPLES, SIGNIFICANCE_LEGEND, holm, paired_sign_test, significance_mark
from runners.analysis.units import PAPER_TOK_NOTE, TOK_PER_TASK, fmt_tok_per_task, paper_in_unit, paper_tok

ORDER = [
    "flowstate_table1",
    "flowstate_table2",
    "flowstate_table3",
    "flowstate_table4",
    "flowstate_table5",
    "pos_table1",
    "pos_table2",
    "flowstate_fig3",
    "flowstate_fig4",
    "pos_fig3",
    "pos_fig4",
    "pos_recovery",
]


@functools.lru_cache(maxsize=None)
def layout(name: str) -> dict[str, Any]:
    path = LAYOUT_DIR / f"{name}.yaml"
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def layouts() -> list[dict[str, Any]]:
    """Every artefact layout, the papers' order first, then any other layout file (a third paper)."""
    names = ORDER + sorted(
        p.stem for p in LAYOUT_DIR.glob("*.yaml") if p.stem not in ORDER and p.stem not in ("labels", "headlines")
    )
    return [layout(n) for n in names if (LAYOUT_DIR / f"{n}.yaml").exists()]


def method_label(m: str, lay: dict[str, Any] | None = None) -> str:
    """The paper's name for a method (the layout's own `method_labels` first: PoS calls Full Context
    "Raw Trajectory")."""
    base, _, variant = m.partition("[")
    own = (lay or {}).get("method_labels") or {}
    return own.get(base) or METHOD_LABELS.get(base, base) + (f"[{variant}" if variant else "")


def backbone_label(b: str | None) -> str:
    return BACKBONE_LABELS.get(b, b) if b else ""


def domain_title(d: str) -> str:
    return (labels().get("domain_titles") or {}).get(d, d)


def metric_label(m: str, lay: dict[str, Any] | None = None) -> str:
    own = (lay or {}).get("metric_labels") or {}
    return own.get(m) or (labels().get("metric_labels") or {}).get(m, m)


# ---------------------------------------------------------------- values of our cells
class Cells:
    """The experiment's CellSummary objects by (method, backbone, benchmark), with pooled metrics."""

    def __init__(self, cells: list[Any]):
        self.all = cells
        self.by = {(c.method, c.backbone, c.benchmark): c for c in cells}
        self._pooled: dict[tuple, dict[str, Any]] = {}

    def get(self, method: str, backbone: str, benchmark: str) -> Any:
        return self.by.get((method, backbone, benchmark))

    def spec(self, benchmark: str, metric: str) -> MetricSpec:
        """How a metric is treated (kind, direction, the paper's name for it): the benchmark's own
        declaration (`Benchmark.metric_specs`, read from a cell of it) or the harness's (#Tok)."""
        from runners.analysis.cells import metric_spec

        if metric == TOK_PER_TASK:
            return MetricSpec(name=metric, kind="tokens", higher_is_better=False)
        c = next((c for c in self.all if c.benchmark == benchmark), None)
        return c.spec(metric) if c is not None else metric_spec((), metric)

    def paper_metric(self, col: dict[str, Any], metric: str) -> str:
        """The paper's name for a column's metric: the layout's `paper_metrics` (a column the run
        has no cell of), else the benchmark's declaration (`MetricSpec.paper`), else ours."""
        own = (col.get("paper_metrics") or {}).get(metric)
        return own or self.spec(col["benchmark"], metric).paper or metric

    def parts(self, method: str, backbone: str, col: dict[str, Any]) -> list[Any] | None:
        """The cells a column reads for one row (all of a pool), None if any is missing; with
        `partial_pool: true` in the column (figures) a pool is read from the parts that exist."""
        names = col.get("pool") or [col["benchmark"]]
        got = [self.get(method, backbone, b) for b in names]
        if col.get("partial_pool"):
            got = [g for g in got if g is not None]
            return got or None
        return None if any(g is None for g in got) else got

    def metrics(self, method: str, backbone: str, col: dict[str, Any]) -> dict[str, Any] | None:
        parts = self.parts(method, backbone, col)
        if parts is None:
            return None
        if len(parts) == 1:
            out = dict(parts[0].metrics, Tok=paper_tok(parts[0]))
        else:
            key = (method, backbone, tuple(p.benchmark for p in parts))
            if key not in self._pooled:
                eps = [e for p in parts for e in p.episodes]
                fn = parts[0].metric_fn
                pooled = dict(fn(eps)) if (fn is not None and eps) else {}
                toks = [paper_tok(p) for p in parts]
                pooled["Tok"] = sum(toks) if all(t is not None for t in toks) else None
                self._pooled[key] = pooled
            out = dict(self._pooled[key])
        n = sum(p.n_episodes for p in parts)
        out[TOK_PER_TASK] = out["Tok"] / n if out.get("Tok") is not None and n else None
        return out

    def episodes(self, method: str, backbone: str, col: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
        parts = self.parts(method, backbone, col) or []
        return [e for p in parts for e in p.episodes], (parts[0].metric_fn if parts else None)


def fmt_value(v: float | None, metric: str, tok_scale: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if metric == TOK_PER_TASK:
        return fmt_tok_per_task(v)
    if metric == "Tok":
        return f"{v * tok_scale:.1f}" if tok_scale != 1.0 else (f"{v:.4f}" if v < 1 else f"{v:.2f}")
    return f"{v + 0.0:.2f}"


def fmt_delta(d: float | None, metric: str) -> str:
    if d is None:
        return "–"
    if metric in ("Tok", TOK_PER_TASK):
        return f"{d:+.2f}%"
    return f"{d:+.2f}"


def paper_text(
    lay_row: dict[str, Any],
    col: dict[str, Any],
    metric: str,
    tok_scale: float,
    row_type: str = "result",
    cells: "Cells | None" = None,
) -> str | None:
    """The paper's value for a layout row and column, in our column's unit."""
    backbone = lay_row.get("paper_backbone")
    if not backbone:
        return None
    bench = col["benchmark"]
    domain = col.get("paper_domain") or BENCHMARK_DOMAINS.get(bench, bench)
    src_metric = "Tok" if metric == TOK_PER_TASK else metric
    src_metric = (
        cells.paper_metric(col, src_metric)
        if cells is not None
        else (col.get("paper_metrics") or {}).get(src_metric, src_metric)
    )
    method = lay_row["method"]
    v = None
    for lab in (METHOD_LABELS.get(method, method), *METHOD_ALIASES.get(method, ())):
        v = paper_lookup(lab, backbone, domain, src_metric, row_type)
        if v is not None:
            break
    if v is None or row_type != "result":
        return v
    pool = col.get("pool") or [bench]
    n = sum(paper_task_count(b) or 0 for b in pool) if metric == TOK_PER_TASK else None
    return paper_in_unit(v, metric, tok_scale, n)


# ---------------------------------------------------------------- table model and renderers
@dataclass
class TRow:
    kind: str  # group | ours | paper | delta | paper_delta
    label: str
    backbone: str = ""
    cells: list[str] = field(default_factory=list)
    styles: list[str] = field(default_factory=list)  # "" | best | second


@dataclass
class Table:
    header: list[str]
    rows: list[TRow]
    notes: list[str] = field(default_factory=list)
    # Header rows above the metric row, as printed: each a list of (title, columns spanned) over the
    # value columns (FlowState Table 1: the domains; "Formal Reasoning" over Math and Physics).
    spans: list[list[tuple[str, int]]] = field(default_factory=list)
    short: list[str] = field(default_factory=list)  # the metric row under `spans` (header without the domain)

    def groups_of_columns(self) -> list[str]:
        """The top spanning title of each value column ("" where there is none)."""
        if len(self.spans) < 2:
            return [""] * (len(self.header) - 2)
        top = [t for t, n in self.spans[0] for _ in range(n)]
        under = [t for t, n in self.spans[1] for _ in range(n)]
        return [t if u else "" for t, u in zip(top, under)]  # only where a title spans several domains


def _md_cell(text: str, style: str) -> str:
    return f"**{text}**" if style == "best" else (f"<u>{text}</u>" if style == "second" else text)


def table_md(t: Table, title: str) -> str:
    # markdown has one header row: a spanning title ("Formal Reasoning") prefixes the columns it spans
    header = t.header[:2] + [f"{g}: {h}" if g else h for g, h in zip(t.groups_of_columns(), t.header[2:])]
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in t.header) + "|"]
    for r in t.rows:
        if r.kind == "group":
            lines.append("| " + " | ".join([f"*{r.label}*"] + [""] * (len(t.header) - 1)) + " |")
            continue
        cells = [_md_cell(c, s) for c, s in zip(r.cells, r.styles or [""] * len(r.cells))]
        lines.append("| " + " | ".join([r.label, r.backbone] + cells) + " |")
    if t.notes:
        lines += [""] + [f"{n}" if n.startswith("- ") else f"- {n}" for n in t.notes]
    return "\n".join(lines) + "\n"


def table_csv(t: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["row_type", "group"] + t.header)
    group = ""
    for r in t.rows:
        if r.kind == "group":
            group = r.label
            continue
        w.writerow([r.kind, group, r.label, r.backbone] + r.cells)
    return buf.getvalue()


def table_tex(t: Table, title: str) -> str:
    cols = "ll" + "r" * (len(t.header) - 2)
    body = []
    for level in t.spans:  # spanning header rows with a rule under each titled span, as the papers print them
        cells, rules, at = ["", ""], [], 3
        for text, n in level:
            cells.append(f"\\multicolumn{{{n}}}{{c}}{{{tex_escape(text)}}}" if text else " & ".join([""] * n))
            if text:
                rules.append(f"\\cmidrule(lr){{{at}-{at + n - 1}}}")
            at += n
        body += [" & ".join(cells) + r" \\", " ".join(rules)]
    head = t.short if t.spans and t.short else t.header
    body += [" & ".join(tex_escape(h) for h in head) + r" \\", r"\midrule"]
    for r in t.rows:
        if r.kind == "group":
            body.append(f"\\multicolumn{{{len(t.header)}}}{{l}}{{\\textit{{{tex_escape(r.label)}}}}} \\\\")
            continue
        cells = []
        for c, s in zip(r.cells, r.styles or [""] * len(r.cells)):
            c = tex_escape(c)
            cells.append(f"\\textbf{{{c}}}" if s == "best" else (f"\\underline{{{c}}}" if s == "second" else c))
        body.append(" & ".join([tex_escape(r.label), tex_escape(r.backbone)] + cells) + r" \\")
    notes = "\n".join(f"\\par\\footnotesize {tex_escape(n)}" for n in t.notes)
    return (
        "\n".join(
            [
                r"\begin{table}[t]",
                r"\centering",
                f"\\caption{{{tex_escape(title)}}}",
                f"\\begin{{tabular}}{{{cols}}}",
                r"\toprule",
                *body,
                r"\bottomrule",
                r"\end{tabular}",
                notes,
                r"\end{table}",
            ]
        )
        + "\n"
    )


# ---------------------------------------------------------------- artefacts
@dataclass
class Artefact:
    name: str
    title: str
    kind: str
    preset: str
    status: str = "not produced"  # produced | partial | not produced
    missing: list[str] = field(default_factory=list)
    table: Table | None = None
    figure: Any = None  # matplotlib Figure
    data: dict[str, Any] = field(default_factory=dict)  # what a figure shows (for tests, the report)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _columns(lay: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    out = []
    for col in lay["columns"]:
        for m in col["metrics"]:
            out.append((col, m))
            if m == "Tok":
                out.append((col, TOK_PER_TASK))
    return out


def _spans(lay: dict[str, Any], cols: list[tuple[dict[str, Any], str]]) -> list[list[tuple[str, int]]]:
    """The header rows above the metrics: the domain of each run of columns, and above it the
    layout's `column_groups` (a title over several domains, e.g. Formal Reasoning = Math + Physics)."""
    domains: list[tuple[str, int]] = []
    for col, _ in cols:
        title = domain_title(col["benchmark"])
        if domains and domains[-1][0] == title:
            domains[-1] = (title, domains[-1][1] + 1)
        else:
            domains.append((title, 1))
    groups = lay.get("column_groups") or []
    if not groups:
        return [domains]
    of = {b: g["title"] for g in groups for b in g["benchmarks"]}
    top: list[tuple[str, int]] = []
    second: list[tuple[str, int]] = []
    for col, _ in cols:
        g = of.get(col["benchmark"], "")
        title = g or domain_title(col["benchmark"])
        if top and top[-1][0] == title:
            top[-1] = (title, top[-1][1] + 1)
        else:
            top.append((title, 1))
        sub = domain_title(col["benchmark"]) if g else ""
        if second and second[-1][0] == sub:
            second[-1] = (sub, second[-1][1] + 1)
        else:
            second.append((sub, 1))
    return [top, second]


def _header(
    lay: dict[str, Any], cols: list[tuple[dict[str, Any], str]], tok_unit: str, domain: bool = True
) -> list[str]:
    """The column titles: `<domain> <metric> (<unit>)`, or the metric alone under spanning rows."""
    h = ["Method", "Backbone"]
    for col, m in cols:
        unit = f" ({tok_unit})" if m == "Tok" else (" (k)" if m == TOK_PER_TASK else "")
        h.append((f"{domain_title(col['benchmark'])} " if domain else "") + f"{metric_label(m, lay)}{unit}")
    return h


def _layout_rows(lay: dict[str, Any], cells: Cells) -> list[dict[str, Any]]:
    """The layout's rows expanded: `group_by_backbone` repeats the method rows per backbone (the
    paper's backbones in order, then any other backbone we ran these methods on)."""
    gb = lay.get("group_by_backbone")
    if not gb:
        return [dict(r, paper_backbone=r.get("backbone")) for r in lay["rows"]]
    methods = [r["method"] for r in lay["rows"]]
    benches = {b for col in lay["columns"] for b in (col.get("pool") or [col["benchmark"]])}
    others = list(
        dict.fromkeys(
            c.backbone for c in cells.all if c.method in methods and c.benchmark in benches and c.backbone not in gb
        )
    )
    out = []
    for b in list(gb) + others:
        for r in lay["rows"]:
            out.append(dict(r, group=backbone_label(b), backbone=b, paper_backbone=b if b in gb else None))
    return out


def _best_styles(
    rows: list[TRow], values: list[list[float | None]], cols: list[tuple[dict[str, Any], str]], cells: Cells
) -> None:
    for j, (col, m) in enumerate(cols):
        vals = sorted(
            {x for v in values if (x := v[j]) is not None}, reverse=cells.spec(col["benchmark"], m).higher_is_better
        )
        if len(vals) < 2:  # one row, or every row ties: nothing to single out
            continue
        best, second = vals[0], (vals[1] if len(vals) > 1 else None)
        for r, v in zip(rows, values):
            if v[j] is None:
                continue
            r.styles[j] = "best" if v[j] == best else ("second" if v[j] == second else "")


NAME_UNCERTAIN = "[name uncertain]"
NAME_UNCERTAIN_NOTE = (
    "[name uncertain]: the paper's method name for this (paper) row was lost in text extraction and is restored "
    "with low confidence (FlowState Table 4's two unnamed Memory System rows, labelled BM25 and ReasoningBank, may "
    "be swapped); treat the comparison as unverified (runners/reference/README.md)"
)


def uncertain_name(paper_method: str, lay: dict[str, Any]) -> bool:
    """Whether the reference rows of this layout's table name `paper_method` with low confidence
    (`name_status: restored_uncertain`)."""
    from runners.analysis.papers import reference_rows

    table = str(lay.get("title", "")).split(":")[0]
    return any(
        r.get("name_status") == "restored_uncertain" and r["method"] == paper_method and r.get("table") == table
        for r in reference_rows()
        if r.get("paper") == lay.get("paper")
    )


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "–", or a text that is no value
        return None


def _style(rows: list[TRow], cols: list[tuple[dict[str, Any], str]], cells: Cells, by_group: bool) -> None:
    """Bold the best and underline the second of each performance column, as the papers do: among
    our rows and, apart, among the `(paper)` rows; per backbone group where the table groups by
    backbone (Table 5, PoS Table 1), else over the whole table. Token columns are not ranked."""
    ranked = [j for j, (col, m) in enumerate(cols) if cells.spec(col["benchmark"], m).kind not in ("tokens", "cost")]
    blocks: dict[tuple[str, str], list[TRow]] = {}
    group = ""
    for r in rows:
        if r.kind == "group":
            group = r.label
        elif r.kind in ("ours", "paper"):
            blocks.setdefault((group if by_group else "", r.kind), []).append(r)
    for block in blocks.values():
        vals = [[_number(c) if j in ranked else None for j, c in enumerate(r.cells)] for r in block]
        _best_styles(block, vals, cols, cells)


def _pair_test(
    ours_eps: list[dict[str, Any]], ref_eps: list[dict[str, Any]], fn: Any, spec: MetricSpec, resamples: int
) -> float | None:
    if fn is None or not resamples or spec.kind != "rate":
        return None
    got = paired_sign_test(ours_eps, ref_eps, fn, spec.name, higher_is_better=spec.higher_is_better)
    return got[3] if got else None


def build_table(
    lay: dict[str, Any], cells: Cells, strict: bool = False, resamples: int = DEFAULT_RESAMPLES
) -> Artefact:
    art = Artefact(lay["name"], f"{lay['paper']} {lay['title']}", lay["kind"], lay.get("preset", ""))
    cols = _columns(lay)
    benches = {b for col in lay["columns"] for b in (col.get("pool") or [col["benchmark"]])}
    relevant = [c for c in cells.all if c.benchmark in benches]
    toks = [t for c in relevant if (t := paper_tok(c)) is not None]
    scale, unit = (1000.0, "k") if toks and max(toks) < 0.1 else (1.0, "M")
    lay_rows = _layout_rows(lay, cells)
    layout_backbones = {r.get("backbone") for r in lay_rows}
    used: set[tuple[str, str]] = set()
    attach: dict[int, list[str]] = {}  # layout row index -> our backbones shown in it
    for i, r in enumerate(lay_rows):
        bbs = []
        if any(c.method == r["method"] and c.backbone == r.get("backbone") for c in relevant):
            bbs.append(r["backbone"])
        attach[i] = bbs
    for c in relevant:  # the researcher's own backbone: the first layout row of that method
        if c.backbone in layout_backbones or (c.method, c.backbone) in used:
            continue
        first = next((i for i, r in enumerate(lay_rows) if r["method"] == c.method), None)
        if first is not None:
            attach[first].append(c.backbone)
            used.add((c.method, c.backbone))
    for i, r in enumerate(lay_rows):
        used.update((r["method"], b) for b in attach[i])
    extra = list(dict.fromkeys((c.method, c.backbone) for c in relevant if (c.method, c.backbone) not in used))
    delta = lay.get("delta") or {}
    rows: list[TRow] = []
    our_rows: list[TRow] = []
    our_vals: list[list[float | None]] = []
    all_marks: list = []
    tests: list[tuple[TRow, int, float | None]] = []
    uncertain: set[str] = set()  # the paper's method names restored with low confidence, shown
    group = None

    def our_row(method: str, backbone: str) -> tuple[TRow, list]:
        vals = []
        for col, m in cols:
            mets = cells.metrics(method, backbone, col)
            vals.append(mets.get(m) if mets else None)
        mine = [c for c in relevant if c.method == method and c.backbone == backbone]
        labs, marks = cell_labels(mine)
        row = TRow(
            "ours",
            method_label(lay=lay, m=method) + "".join(" " + x for x in labs),
            backbone_label(backbone),
            [fmt_value(v, m, scale) for v, (_, m) in zip(vals, cols)],
            [""] * len(cols),
        )
        our_rows.append(row)
        our_vals.append(vals)
        return row, marks

    def paper_row(r: dict[str, Any], marks: list[Any]) -> list[TRow]:
        """The `(paper)` row of layout row `r` in our columns' units: none where the paper reports
        nothing here, nor (`strict`) beside a row of ours that carries fidelity `marks`."""
        paper = [paper_text(r, col, m, scale, cells=cells) or "–" for col, m in cols]
        if all(p == "–" for p in paper) or (strict and marks):
            return []
        label = f"{method_label(lay=lay, m=r['method'])} (paper)"
        if uncertain_name(METHOD_LABELS.get(r["method"], r["method"]), lay):
            label += f" {NAME_UNCERTAIN}"
            uncertain.add(METHOD_LABELS.get(r["method"], r["method"]))
        return [TRow("paper", label, backbone_label(r.get("paper_backbone")), paper, [""] * len(cols))]

    def delta_row(method: str, backbone: str) -> TRow | None:
        ref: str = delta.get("against", "")  # "" (no such method) draws no Δ row, as a missing one did
        if not any(cells.parts(ref, backbone, col) for col, _ in cols):
            return None
        texts = []
        row = TRow("delta", f"Δ vs {method_label(lay=lay, m=ref)}", backbone_label(backbone))
        for j, (col, m) in enumerate(cols):
            a, b = cells.metrics(method, backbone, col), cells.metrics(ref, backbone, col)
            va, vb = (a or {}).get(m), (b or {}).get(m)
            if va is None or vb is None:
                texts.append("–")
                continue
            if m in ("Tok", TOK_PER_TASK):
                texts.append(fmt_delta(100.0 * (va / vb - 1) if vb else None, m))
                continue
            texts.append(fmt_delta(va - vb, m))
            ea, fn = cells.episodes(method, backbone, col)
            eb, _ = cells.episodes(ref, backbone, col)
            p = _pair_test(ea, eb, fn, cells.spec(col["benchmark"], m), resamples)
            if p is not None:
                tests.append((row, j, p))
        row.cells, row.styles = texts, [""] * len(cols)
        return row

    for i, r in enumerate(lay_rows):
        if r.get("group") and r.get("group") != group:
            group = r["group"]
            rows.append(TRow("group", group))
        # the (paper) row stands only beside our row of the paper's backbone; our rows on other backbones
        # follow it without one (the table keeps the paper's shape where we did not run its backbone)
        mine = [b for b in attach[i] if b == r.get("paper_backbone")]
        for b in mine:
            row, marks = our_row(r["method"], b)
            rows.append(row)
            all_marks += marks
            rows += paper_row(r, marks)
        if not mine:
            rows += paper_row(r, [])
        for b in attach[i]:
            if b not in mine:
                row, marks = our_row(r["method"], b)
                rows.append(row)
                all_marks += marks
        if delta and r["method"] == delta.get("method"):
            for b in attach[i]:
                d = delta_row(r["method"], b)
                if d:
                    rows.append(d)
            pb = r.get("paper_backbone")
            feeding = [c for c in relevant if c.method in (r["method"], delta.get("against")) and c.backbone == pb]
            marked = bool(cell_labels(feeding)[0])
            # the paper's Δ is relative for #Tok, so Tok/task reads the same Δ as Tok (it alone opens no row)
            pd = [paper_text(r, col, m, scale, "delta_vs_full_context", cells) for col, m in cols]
            if any(v for v, (_, m) in zip(pd, cols) if m != TOK_PER_TASK) and not (strict and marked):
                # --strict: no Δ (paper) beside a Δ of marked rows
                texts = [fmt_delta(float(v), m) if v not in (None, "") else "–" for v, (_, m) in zip(pd, cols)]
                rows.append(
                    TRow("paper_delta", "Δ (paper)", backbone_label(r.get("paper_backbone")), texts, [""] * len(cols))
                )
    if extra:
        rows.append(TRow("group", "Other methods (not in the paper)"))
        for method, b in extra:
            row, marks = our_row(method, b)
            rows.append(row)
            all_marks += marks
    _style(rows, cols, cells, by_group=bool(lay.get("group_by_backbone")))
    for (row, j, _), adj in zip(tests, holm([t[2] for t in tests])):
        row.cells[j] += f" (p={adj:.2g}){significance_mark(adj)}"
    has_tok = any(m == "Tok" for _, m in cols)
    notes = [
        "Rates in %"
        + (
            f"; #Tok = method-side tokens, total over the tasks run, in {'millions' if unit == 'M' else 'thousands'} "
            "(the paper's totals in the same unit); Tok/task = mean per episode in thousands (the paper's: its total "
            "/ its task count)"
            if has_tok
            else ""
        )
        + ". **Best** and <u>second</u> per performance column (not #Tok)"
        + (", per backbone group" if lay.get("group_by_backbone") else "")
        + ": among our rows, and apart among the (paper) rows as the paper marks them."
    ]
    if any("Tok_no_tool" in c.metrics for c in relevant):
        notes.append(PAPER_TOK_NOTE)
    if tests:
        notes.append(SIGNIFICANCE_LEGEND)
    notes += footnotes(all_marks)
    if uncertain:
        notes.append(NAME_UNCERTAIN_NOTE + " (" + ", ".join(sorted(uncertain)) + ")")
    art.table = Table(_header(lay, cols, unit), rows, notes, _spans(lay, cols), _header(lay, cols, unit, False))
    # status: every layout row the paper reports × every column with a paper value needs a cell of ours
    missing, covered = [], 0
    for i, r in enumerate(lay_rows):
        if not r.get("paper_backbone"):
            continue
        for col in lay["columns"]:
            if not any(paper_text(r, col, m, scale, cells=cells) for m in col["metrics"]):
                continue
            if any(cells.parts(r["method"], b, col) for b in attach[i]):
                covered += 1
            else:
                missing.append(
                    f"{method_label(lay=lay, m=r['method'])} / {backbone_label(r['paper_backbone'])} / "
                    f"{domain_title(col['benchmark'])}"
                )
    art.missing = missing
    art.status = "not produced" if not our_rows else ("produced" if not missing else "partial")
    return art


def build_cost(lay: dict[str, Any], cells: Cells) -> Artefact:
    """PoS Table 2: mean tokens per episode, total and task agent, relative to Raw Trajectory."""
    art = Artefact(lay["name"], f"{lay['paper']} {lay['title']}", lay["kind"], lay.get("preset", ""))
    ref = lay["reference_method"]
    agent_roles = set(lay.get("task_agent_roles") or ["agent"])
    header = [
        "Method",
        "Backbone",
        "Benchmark",
        "Task-agent tokens / episode (k)",
        "Task-agent Δ (%)",
        "Total tokens / episode (k)",
        "Total (× Raw Trajectory)",
    ]
    rows: list[TRow] = []
    found: dict[tuple[str, str, str], dict[str, float | None]] = {}
    all_marks: list = []
    from runners.api import method_tokens

    def per_ep(c: Any) -> dict[str, float | None]:
        """Mean tokens per counted episode; None for a cell with none (every episode errored): "–", not 0."""
        n = c.n_episodes
        return {
            "agent": sum(v for r, v in c.tokens_by_role.items() if r in agent_roles) / n if n else None,
            "total": method_tokens(c.tokens_by_role) / n if n else None,
        }

    def k(v: float | None) -> str:
        return f"{v / 1000:.1f}" if v is not None else "–"

    methods = [m for m in lay["methods"]] + sorted(
        {c.method for c in cells.all if c.benchmark in lay["benchmarks"]} - set(lay["methods"]) - {ref}
    )
    for bench in lay["benchmarks"]:
        for b in list(dict.fromkeys(c.backbone for c in cells.all if c.benchmark == bench)):
            r = cells.get(ref, b, bench)
            if r is None:
                continue
            pr = per_ep(r)
            labs, marks = cell_labels([r])
            all_marks += marks
            rows.append(
                TRow(
                    "ours",
                    method_label(lay=lay, m=ref) + "".join(" " + x for x in labs),
                    backbone_label(b),
                    [domain_title(bench), k(pr["agent"]), "", k(pr["total"]), "1.00×" if pr["total"] else "–"],
                )
            )
            for m in methods:
                c = cells.get(m, b, bench)
                if c is None:
                    continue
                pc = per_ep(c)
                labs, marks = cell_labels([c])
                all_marks += marks
                ch = 100.0 * (pc["agent"] / pr["agent"] - 1) if pr["agent"] and pc["agent"] is not None else None
                ratio = pc["total"] / pr["total"] if pr["total"] and pc["total"] is not None else None
                if ch is not None or ratio is not None:  # a cell with no counted episode produces nothing
                    found[(m, b, bench)] = {"agent_change_pct": ch, "total_ratio": ratio}
                rows.append(
                    TRow(
                        "ours",
                        method_label(lay=lay, m=m) + "".join(" " + x for x in labs),
                        backbone_label(b),
                        [
                            domain_title(bench),
                            k(pc["agent"]),
                            f"{ch:+.1f}" if ch is not None else "–",
                            k(pc["total"]),
                            f"{ratio:.2f}×" if ratio is not None else "–",
                        ],
                    )
                )
                dom = BENCHMARK_DOMAINS.get(bench, bench)
                pr_ratio = paper_lookup(METHOD_LABELS.get(m, m), b, dom, "total_tokens_ratio")
                pr_ch = paper_lookup(METHOD_LABELS.get(m, m), b, dom, "task_agent_tokens_change")
                if (pr_ratio or pr_ch) and not (lay.get("strict") and marks):
                    rows.append(
                        TRow(
                            "paper",
                            f"{method_label(lay=lay, m=m)} (paper)",
                            backbone_label(b),
                            [
                                domain_title(bench),
                                "–",
                                f"{float(pr_ch):+.1f}" if pr_ch else "–",
                                "–",
                                f"{float(pr_ratio):.2f}×" if pr_ratio else "–",
                            ],
                        )
                    )
    for r in rows:
        r.styles = [""] * len(r.cells)
    notes = [
        "Mean tokens per episode (prompt + completion). Task agent = the `agent` role (the policy's own calls); "
        "total = every method-side role (for PoS: agent, belief updater / state, sentinel). The page reports "
        "RCA-100 / Qwen3.7-Plus: total 5.06× Raw Trajectory's, task-agent tokens −20.9 %."
    ] + footnotes(all_marks)
    art.table = Table(header, rows, notes)
    art.data = {"ratios": found}
    paper_cells = [
        (r["method"], BACKBONE_KEYS.get(r["backbone"], r["backbone"]), BENCH_KEYS.get(r["benchmark"], r["benchmark"]))
        for r in _pos_cost_rows()
    ]
    art.missing = [
        f"{method_label(lay=lay, m=m)} and Raw Trajectory / {backbone_label(b)} / {domain_title(x)}"
        for m, b, x in dict.fromkeys(paper_cells)
        if (m, b, x) not in found
    ]
    art.status = "not produced" if not found else ("produced" if not art.missing else "partial")
    return art


BACKBONE_KEYS = {v: k for k, v in BACKBONE_LABELS.items()}
BENCH_KEYS = {v: k for k, v in BENCHMARK_DOMAINS.items()}


def _pos_cost_rows() -> list[dict[str, str]]:
    from runners.analysis.papers import reference_rows

    out = []
    for r in reference_rows():
        if r.get("table") == "Table 2" and r.get("paper") == "PoS":
            key = {v: k for k, v in METHOD_LABELS.items()}.get(r["method"], r["method"])
            out.append({"method": key, "backbone": r["backbone"], "benchmark": r["benchmark"]})
    return out


# ---------------------------------------------------------------- headlines
def headlines(cells: Cells) -> list[dict[str, Any]]:
    """The papers' headline figures recomputed from the run, beside the papers' own."""
    with open(LAYOUT_DIR / "headlines.yaml", encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    out: list[dict[str, Any]] = []
    for h in spec.get("flowstate") or []:
        for b in dict.fromkeys(
            c.backbone for c in cells.all if c.method == h["method"] and c.benchmark in h["benchmarks"]
        ):
            pairs = [(cells.get(h["method"], b, x), cells.get(h["baseline"], b, x)) for x in h["benchmarks"]]
            pairs = [(a, r) for a, r in pairs if a is not None and r is not None]
            if not pairs:
                continue
            ds = [
                a.metrics.get(h["metric"]) - r.metrics.get(h["metric"])
                for a, r in pairs
                if a.metrics.get(h["metric"]) is not None and r.metrics.get(h["metric"]) is not None
            ]
            ta = [paper_tok(a) for a, _ in pairs]
            tr = [paper_tok(r) for _, r in pairs]
            tok = (100.0 * (sum(ta) / sum(tr) - 1)) if all(t is not None for t in ta + tr) and sum(tr) else None  # type: ignore[arg-type]  # no None: checked by all()
            labs, marks = cell_labels([c for pair in pairs for c in pair])
            if len(pairs) < len(h["benchmarks"]):  # the paper's figure is over every domain it names
                labs.append(f"[{len(pairs)} of {len(h['benchmarks'])} domains]")
            own = b == h["paper"].get("backbone", b)  # the paper reports its headline on this backbone only
            out.append(
                {
                    "paper": "FlowState",
                    "name": h["name"],
                    "backbone": b,
                    "n_domains": len(pairs),
                    "of": len(h["benchmarks"]),
                    "delta_pp": sum(ds) / len(ds) if ds else None,
                    "tokens_pct": tok,
                    "paper_delta_pp": h["paper"]["delta_pp"] if own else None,
                    "paper_tokens_pct": h["paper"]["tokens_pct"] if own else None,
                    "paper_backbone": h["paper"].get("backbone"),
                    "metric": h["metric"],
                    "how": h["how"],
                    "marks": labs,
                    "mark_objects": marks,
                }
            )
    p = spec.get("pos") or {}
    for bench, metric in (p.get("benchmarks") or {}).items():
        for b in dict.fromkeys(c.backbone for c in cells.all if c.method == p["method"] and c.benchmark == bench):
            ours = cells.get(p["method"], b, bench)
            base = [(m, cells.get(m, b, bench)) for m in p["baselines"]]
            base = [(m, c) for m, c in base if c is not None and c.metrics.get(metric) is not None]
            if ours is None or ours.metrics.get(metric) is None or not base:
                continue
            best_m, best = max(base, key=lambda mc: mc[1].metrics[metric])
            labs, marks = cell_labels([ours] + [c for _, c in base])  # "strongest" reads every baseline
            dom = BENCHMARK_DOMAINS.get(bench, bench)
            pm = cells.spec(bench, metric).paper or metric
            paper_pos = paper_lookup("PoS", b, dom, pm)
            paper_base: list[tuple[str, Any]] = [
                (
                    m,
                    paper_lookup(METHOD_LABELS.get(m, m), b, dom, pm)
                    or next(
                        (paper_lookup(a, b, dom, pm) for a in METHOD_ALIASES.get(m, ()) if paper_lookup(a, b, dom, pm)),
                        None,
                    ),
                )
                for m in p["baselines"]
            ]
            paper_base = [(m, float(v)) for m, v in paper_base if v]
            pb = max(paper_base, key=lambda mv: mv[1]) if paper_base else None
            out.append(
                {
                    "paper": "PoS",
                    "name": domain_title(bench),
                    "backbone": b,
                    "metric": metric,
                    "ours": ours.metrics[metric],
                    "strongest": best_m,
                    "strongest_value": best.metrics[metric],
                    "delta_pp": ours.metrics[metric] - best.metrics[metric],
                    "paper_delta_pp": float(paper_pos) - pb[1] if paper_pos and pb else None,
                    "paper_strongest": pb[0] if pb else None,
                    "marks": labs,
                    "mark_objects": marks,
                }
            )
    return out


def cell_labels(cs: list[Any]) -> tuple[list[str], list[Any]]:
    """The labels printed on a row, Δ or headline made of these cells (`[scripted]` first, then
    `fidelity.row_marks`), and their Mark objects for the footnotes."""
    labs, marks = row_marks(cs)
    return (["[scripted]"] if any(c.scripted for c in cs) else []) + labs, marks


def headlines_md(hs: list[dict[str, Any]], strict: bool = False) -> str:
    """The headlines table: ours with the marks of every cell it is computed from, the paper's value
    only beside the backbone the paper reports it for (with `strict`, not beside a marked one)."""
    if not hs:
        return (
            "No headline can be computed from these cells (FlowState: FlowState and Full Context on the same backbone; "
            "PoS: PoS and a baseline).\n"
        )
    lines = ["| Paper | Headline | Backbone | Ours | Marks | Paper | How |", "|---|---|---|---|---|---|---|"]
    for h in hs:
        marks = " ".join(h.get("marks") or []) or "–"
        hide = strict and bool(h.get("marks"))
        if h["paper"] == "FlowState":
            ours = (f"{h['delta_pp']:+.2f} pp {h['metric']}" if h["delta_pp"] is not None else "–") + (
                f", {h['tokens_pct']:+.1f} % tokens" if h["tokens_pct"] is not None else ""
            )
            if h["paper_delta_pp"] is None:
                paper = f"– (reported on {backbone_label(h.get('paper_backbone'))} only)"
            elif hide:
                paper = "– (--strict: our row is marked)"
            else:
                paper = f"{h['paper_delta_pp']:+.2f} pp, {h['paper_tokens_pct']:+.1f} % tokens"
            lines.append(
                f"| FlowState | {h['name']} | {backbone_label(h['backbone'])} | {ours} | {marks} | {paper} | "
                f"{h['how']} |"
            )
        else:
            pos_names = {"method_labels": {"full_context": "Raw Trajectory"}}
            ours = (
                f"{h['ours']:.2f} vs {method_label(h['strongest'], pos_names)} {h['strongest_value']:.2f} "
                f"({h['delta_pp']:+.2f} pp)"
            )
            paper = (
                "– (--strict: our row is marked)"
                if hide and h["paper_delta_pp"] is not None
                else (
                    f"{h['paper_delta_pp']:+.2f} pp vs {method_label(h['paper_strongest'], pos_names)}"
                    if h["paper_delta_pp"] is not None
                    else "–"
                )
            )
            lines.append(
                f"| PoS | {h['name']}: PoS vs strongest baseline | {backbone_label(h['backbone'])} | {ours} | "
                f"{marks} | {paper} | "
                "PoS minus the best of the baselines run on the same backbone |"
            )
    notes = footnotes([m for h in hs for m in h.get("mark_objects") or []])
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"
