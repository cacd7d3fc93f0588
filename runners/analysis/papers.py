"""Paper-style tables: our numbers per (method, backbone) × benchmark, Δ rows against a
reference method, and the papers' reported numbers beside ours (runners/reference/*.csv, copied
from the papers as documented in that folder's README)."""
from __future__ import annotations

import csv
import functools
from pathlib import Path

from runners.api import MetricKind

REFERENCE_DIR = Path(__file__).resolve().parents[1] / "reference"

# Our config names → the papers' labels.
METHOD_LABELS = {
    "full_context": "Full Context", "flowstate": "FlowState", "flowstate_no_psa": "FlowState w/o PSA",
    "flowstate_no_isu": "FlowState w/o ISU", "bm25": "BM25", "mem0": "Mem0", "zipact": "ZipAct",
    "zipact_bm25": "ZipAct+BM25", "reasoningbank": "ReasoningBank", "pos": "PoS",
    "pos_no_consistency": "PoS w/o consistency validation", "pos_no_trapping": "PoS w/o trapping diagnosis",
    "pos_generic_recovery": "PoS with generic recovery", "raw": "Raw Trajectory", "acon": "ACON", "pace": "PACE",
    "hiagent": "HiAgent", "longhorizon_harness": "LongHorizon-Harness",
}
BENCHMARK_DOMAINS = {
    "memoryarena_shopping": "bundled_web_shopping", "memoryarena_travel": "group_travel_planning",
    "memoryarena_math": "math", "memoryarena_phys": "physics", "tau_airline": "airline", "tau_retail": "retail",
    "alfworld": "ALFWorld", "loca": "LOCA-Bench", "rca100": "RCA-100", "clindiag": "ClinDiag",
}
BACKBONE_LABELS = {
    "deepseek_v4_flash": "DeepSeek-V4-Flash", "gpt_5_6_terra": "GPT-5.6-terra", "qwen3_5_397b": "Qwen3.5-397B-A17B",
    "qwen3_7_plus": "Qwen3.7-Plus", "kimi_k3": "Kimi-K3", "glm_5_3": "GLM-5.3",
}
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


# PoS calls Full Context its "Raw Trajectory" baseline.
METHOD_ALIASES = {"full_context": ("Raw Trajectory",)}


def paper_value(method: str, backbone: str, benchmark: str, metric: str) -> str | None:
    """The papers' value of `metric` (the paper's own metric name: `MetricSpec.paper`, else ours)."""
    for label in (METHOD_LABELS.get(method, method), *METHOD_ALIASES.get(method, ())):
        v = paper_values().get((label, BACKBONE_LABELS.get(backbone, backbone), BENCHMARK_DOMAINS.get(benchmark, benchmark), metric))
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


def _tex_escape(s: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("Δ", r"$\Delta$"), ("–", "--")):
        s = s.replace(a, b)
    return s


def to_latex(header: list[str], rows: list[list[str]], caption: str) -> str:
    cols = "l" * 2 + "r" * (len(header) - 2)
    body = [" & ".join(_tex_escape(c) for c in header) + r" \\", r"\midrule"]
    body += [" & ".join(_tex_escape(c) for c in r) + r" \\" for r in rows]
    return "\n".join([r"\begin{table}[t]", r"\centering", f"\\caption{{{_tex_escape(caption)}}}", f"\\begin{{tabular}}{{{cols}}}",
                      r"\toprule", *body, r"\bottomrule", r"\end{tabular}", r"\end{table}"])
