"""Paper-style tables: our numbers per (method, backbone) × benchmark, Δ rows against a
reference method, and the papers' reported numbers beside ours (runners/reference/*.csv, copied
from the papers as documented in that folder's README)."""

from __future__ import annotations

import csv
import functools
from pathlib import Path
from typing import Any

import yaml

from runners.api import MetricKind

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"
LAYOUT_DIR = REFERENCE_DIR / "layouts"


@functools.lru_cache(maxsize=1)
def labels() -> dict[str, Any]:
    """runners/reference/layouts/labels.yaml: the papers' names for our config names."""
    with open(LAYOUT_DIR / "labels.yaml", encoding="utf-8") as f:
        return yaml.safe_load(f)


# Our config names → the papers' labels (data: runners/reference/layouts/labels.yaml).
METHOD_LABELS: dict[str, str] = labels()["methods"]
BENCHMARK_DOMAINS: dict[str, str] = labels()["benchmarks"]
BACKBONE_LABELS: dict[str, str] = labels()["backbones"]


@functools.lru_cache(maxsize=1)
def task_counts() -> dict[str, tuple[int, str]]:
    """benchmark config name → (tasks of the paper's full split, where the number comes from):
    `runners/reference/layouts/task_counts.csv`."""
    with open(LAYOUT_DIR / "task_counts.csv", newline="", encoding="utf-8") as f:
        return {
            r["benchmark"]: (int(r["n_tasks"]), f"{r['n_tasks']} {r['unit']}: {r['source']}") for r in csv.DictReader(f)
        }


def paper_task_count(benchmark: str) -> int | None:
    """How many tasks the paper ran on this benchmark, if known (`task_counts`)."""
    n = task_counts().get(benchmark)
    return n[0] if n else None


@functools.lru_cache(maxsize=1)
def paper_values() -> dict[tuple[str, str, str, str], str]:
    """(method label, backbone label, domain, metric) → value as printed (first table wins)."""
    out: dict[tuple[str, str, str, str], str] = {}
    for path in sorted(REFERENCE_DIR.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row.get("row_type", "result") != "result" or not row.get("value"):
                    continue
                domain = row.get("domain") or row.get("benchmark", "")
                key = (row["method"], row["backbone"], domain, row["metric"])
                out.setdefault(key, row["value"])
    return out


@functools.lru_cache(maxsize=1)
def reference_rows() -> list[dict[str, str]]:
    """Every row of the reference CSVs (results, Δ rows, costs), as printed."""
    out: list[dict[str, str]] = []
    for path in sorted(REFERENCE_DIR.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            out += [dict(r, file=path.name) for r in csv.DictReader(f)]
    return out


def paper_lookup(
    method_label: str, backbone: str, domain: str, metric: str, row_type: str = "result", table: str | None = None
) -> str | None:
    """A reference value by the paper's method label, our backbone name and the CSV's domain /
    benchmark column (`formal_reasoning` for Table 4's pooled column); `row_type` picks result or
    Δ rows; `table` narrows to one table of the paper ("Table 4")."""
    bl = BACKBONE_LABELS.get(backbone, backbone)
    for r in reference_rows():
        if (
            r.get("row_type", "result") == row_type
            and r["method"] == method_label
            and r["backbone"] == bl
            and r["metric"] == metric
            and (r.get("domain") or r.get("benchmark")) == domain
            and (table is None or r.get("table") == table)
            and r.get("value")
        ):
            return r["value"]
    return None


# PoS calls Full Context its "Raw Trajectory" baseline (labels.yaml `aliases`).
METHOD_ALIASES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (labels().get("aliases") or {}).items()}


def paper_value(method: str, backbone: str, benchmark: str, metric: str) -> str | None:
    """The papers' value of `metric` (the paper's own metric name: `MetricSpec.paper`, else ours)."""
    for label in (METHOD_LABELS.get(method, method), *METHOD_ALIASES.get(method, ())):
        v = paper_values().get(
            (label, BACKBONE_LABELS.get(backbone, backbone), BENCHMARK_DOMAINS.get(benchmark, benchmark), metric)
        )
        if v is not None:
            return v
    return None


def fmt(v: float | None, kind: MetricKind) -> str:
    """A value as the tables print it, by the metric's declared kind."""
    if v is None:
        return "–"
    if kind == "tokens":
        return f"{v:.4f}" if v < 1 else f"{v:.2f}"
    if kind == "cost":
        return f"${v:.4f}" if v < 1 else f"${v:,.2f}"
    if kind == "count":
        return f"{v:.0f}"
    return f"{v + 0.0:.2f}" if round(v, 2) != 0 else "0.00"


RELATIVE_KINDS = ("tokens", "cost")  # totals: their Δ is relative %


def delta(kind: MetricKind, ours: float | None, ref: float | None) -> float | None:
    """ours − ref: in pp for rates, absolute for counts and others, relative % for totals."""
    if ours is None or ref is None:
        return None
    if kind in RELATIVE_KINDS:
        return 100.0 * (ours / ref - 1) if ref else None
    return ours - ref


def fmt_delta(kind: MetricKind, d: float | None) -> str:
    if d is None:
        return "–"
    unit = "%" if kind in RELATIVE_KINDS else ("pp" if kind == "rate" else "")
    return f"{d:+.2f}{unit}"


def to_markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def tex_escape(s: str) -> str:
    """`s` safe in a LaTeX table cell: TeX's special characters and the symbols the tables use escaped,
    markdown markup dropped (the .md and .tex tables share their cell texts)."""
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("^", r"\^{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("_", r"\_"),
        ("#", r"\#"),
        ("Δ", r"$\Delta$"),
        ("–", "--"),
        ("≠", r"$\neq$"),
        ("τ", r"$\tau$"),
        ("³", r"$^3$"),
        ("×", r"$\times$"),
        ("−", "$-$"),
        ("≥", r"$\geq$"),
        ("…", r"\ldots{}"),
        ("·", r"$\cdot$"),
        ("Σ", r"$\Sigma$"),
        ("~", r"\textasciitilde{}"),
        ("`", ""),  # markdown markup carried by cell text (code, bold, underline) has no place in TeX
        ("**", ""),
        ("<u>", ""),
        ("</u>", ""),
    ):
        s = s.replace(a, b)
    return s


def to_latex(header: list[str], rows: list[list[str]], caption: str) -> str:
    cols = "l" * 2 + "r" * (len(header) - 2)
    body = [" & ".join(tex_escape(c) for c in header) + r" \\", r"\midrule"]
    body += [" & ".join(tex_escape(c) for c in r) + r" \\" for r in rows]
    return "\n".join(
        [
            r"\begin{table}[t]",
            r"\centering",
            f"\\caption{{{tex_escape(caption)}}}",
            f"\\begin{{tabular}}{{{cols}}}",
            r"\toprule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
        ]
    )
