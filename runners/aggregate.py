"""`python -m runners.aggregate results/<experiment> [--reference full_context]`

Reads every cell of an experiment, computes the benchmark's metrics per (method, backbone),
token totals (method-side roles; judge and user simulator apart), Δ rows against a reference
method (pp for rates, relative % for tokens), prints a markdown table laid out like FlowState
Table 1 with the papers' numbers beside ours, and writes `tables/summary.{md,csv,tex}` plus a
long-format `tables/metrics.csv`."""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.api import method_tokens
from runners.config import ConfigError, import_target
from runners.report import delta, fmt, fmt_delta, paper_value, to_latex, to_markdown
from runners.store import MANIFEST, StoreError, load_cell


@dataclass
class CellSummary:
    cell: str
    method: str
    backbone: str
    benchmark: str
    scripted: bool
    n_episodes: int
    n_tasks: int
    trials: int
    metrics: dict[str, float | None]
    table_metrics: list[str]
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    paraphrased: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """Fewer finished episodes than tasks × trials (infra errors, an interrupted sweep)."""
        return self.n_episodes < self.n_tasks * self.trials


TOK_NOTE = ("Tok = method-side roles (agent, tool, state, memory, sentinel; judge and user simulator apart); "
            "Tok_no_tool = the same without the `tool` role (MemoryArena's LLM `reasoning` tool, which upstream runs "
            "inside the environment on its own model): Tok_no_tool is the reading that matches the paper's #Tok "
            "(tokens the method spends on the evaluated backbone); both are shown where the tool was called")


def tok_without_tool(tokens: dict[str, int]) -> int:
    """#Tok without the `tool` role (see TOK_NOTE)."""
    return method_tokens({r: v for r, v in tokens.items() if r != "tool"})


def paraphrased_prompts(manifest: dict[str, Any]) -> list[str]:
    """Prompts of a cell that ran on the project's own wording instead of upstream's text (the
    `text_sources` the benchmark and the method record in the manifest)."""
    out = []
    for part in ("benchmark_notes", "method_notes"):
        ts = (manifest.get(part) or {}).get("text_sources") or {}
        out += [f"{part.split('_')[0]}:{k}" for k in ts.get("paraphrased", [])]
    return out


def summarize(cell_dir: Path) -> CellSummary:
    manifest, episodes = load_cell(cell_dir)
    try:
        cfg = manifest["config"]
        bench_cls = import_target(cfg["benchmark"]["_target_"], "benchmark")
        bench = bench_cls(name=cfg["benchmark"]["name"], **cfg["benchmark"].get("params", {}))
    except (KeyError, TypeError, ValueError, ConfigError) as e:  # an old or foreign manifest, a renamed adapter
        raise StoreError(f"{cell_dir}: cannot rebuild the benchmark from manifest.json ({type(e).__name__}: {e}); "
                         "re-run the sweep for this cell or move the directory out of the experiment") from None
    metrics = bench.metrics(episodes) if episodes else {}
    table = list(getattr(bench, "table_metrics", None) or [m for m in metrics if not m.startswith("Acc_") and m != "K"])
    tokens: dict[str, int] = {}
    for e in episodes:
        for role, u in e.get("usage_by_role", {}).items():
            tokens[role] = tokens.get(role, 0) + int(u.get("prompt_tokens", 0)) + int(u.get("completion_tokens", 0))
    metrics["Tok"] = (method_tokens(tokens) / 1e6) if episodes else None
    if tokens.get("tool"):  # the `tool` role (MemoryArena's LLM reasoning tool) is part of the environment upstream
        metrics["Tok_no_tool"] = tok_without_tool(tokens) / 1e6
    return CellSummary(cell=cell_dir.name, method=cfg["method"]["name"], backbone=cfg["backbone"]["name"],
                       benchmark=cfg["benchmark"]["name"], scripted=bool(manifest.get("scripted")), n_episodes=len(episodes),
                       n_tasks=int(manifest.get("n_tasks", 0)), trials=int(manifest.get("trials", 1)),
                       metrics=metrics, table_metrics=table + ["Tok"] + (["Tok_no_tool"] if "Tok_no_tool" in metrics else []), tokens_by_role=tokens,
                       paraphrased=paraphrased_prompts(manifest))


def collect(root: Path, cell_names: set[str] | None = None) -> list[CellSummary]:
    if not root.is_dir():
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    cells = []
    for d in sorted(p for p in root.iterdir() if (p / MANIFEST).exists()):
        if cell_names is None or d.name in cell_names:
            cells.append(summarize(d))
    # Cells that differ only in config details (same method/backbone/benchmark) stay apart.
    seen: dict[tuple[str, str, str], int] = {}
    for c in cells:
        seen[(c.method, c.backbone, c.benchmark)] = seen.get((c.method, c.backbone, c.benchmark), 0) + 1
    for c in cells:
        if seen[(c.method, c.backbone, c.benchmark)] > 1:
            c.method = f"{c.method}[{c.cell.rsplit('__', 1)[-1]}]"
    return cells


def build_tables(cells: list[CellSummary], reference: str, with_paper: bool = True):
    """Wide table rows (one per method × backbone, plus paper and Δ rows) and the long rows."""
    benchmarks = list(dict.fromkeys(c.benchmark for c in cells))
    cols: list[tuple[str, str]] = []
    for b in benchmarks:
        ms = list(dict.fromkeys(m for c in cells if c.benchmark == b for m in c.table_metrics))  # Tok_no_tool where any cell has it
        cols += [(b, m) for m in ms]
    by = {(c.method, c.backbone, c.benchmark): c for c in cells}
    rows_keys = list(dict.fromkeys((c.method, c.backbone) for c in cells))
    rows_keys.sort(key=lambda mb: mb[0] != reference)  # the reference method first, as in the papers
    header = ["Method", "Backbone"] + [f"{b}:{m}" for b, m in cols]
    rows: list[list[str]] = []
    long: list[dict[str, Any]] = []
    for method, backbone in rows_keys:
        vals = [by.get((method, backbone, b)) for b, _ in cols]
        scripted = any(c.scripted for c in cells if (c.method, c.backbone) == (method, backbone))
        partial = any(c.partial for c in cells if (c.method, c.backbone) == (method, backbone))
        para = any(c.paraphrased for c in cells if (c.method, c.backbone) == (method, backbone))
        rows.append([method + (" [scripted]" if scripted else "") + (" [partial]" if partial else "")
                     + (" [paraphrased]" if para else ""), backbone] + [fmt(c.metrics.get(m) if c else None, m) for c, (_, m) in zip(vals, cols)])
        for c in (c for c in cells if (c.method, c.backbone) == (method, backbone)):
            for m, v in c.metrics.items():  # every metric, not only the table's columns
                long.append({"method": method, "backbone": backbone, "benchmark": c.benchmark, "metric": m, "value": v,
                             "paper": paper_value(method, backbone, c.benchmark, m), "n_episodes": c.n_episodes, "scripted": c.scripted})
            for role, n in sorted(c.tokens_by_role.items()):
                long.append({"method": method, "backbone": backbone, "benchmark": c.benchmark, "metric": f"tokens_{role}", "value": n,
                             "paper": None, "n_episodes": c.n_episodes, "scripted": c.scripted})
        if with_paper:
            paper = [paper_value(method, backbone, b, m) for b, m in cols]
            if any(paper):
                rows.append([f"  {method} (paper)", backbone] + [p or "–" for p in paper])
        if method != reference and any((reference, backbone, b) in by for b, _ in cols):
            ds = []
            for b, m in cols:
                c, r = by.get((method, backbone, b)), by.get((reference, backbone, b))
                d = delta(m, c.metrics.get(m) if c else None, r.metrics.get(m) if r else None)
                ds.append(fmt_delta(m, d))
                if d is not None:
                    long.append({"method": method, "backbone": backbone, "benchmark": b, "metric": f"delta_{m}", "value": d,
                                 "paper": None, "n_episodes": c.n_episodes, "scripted": c.scripted})
            rows.append([f"  Δ vs {reference}", backbone] + ds)
    return header, rows, long


def depth_table(cells: list[CellSummary]) -> tuple[list[str], list[list[str]]] | None:
    with_depth = [c for c in cells if c.metrics.get("nAUC") is not None or c.metrics.get("K")]
    if not with_depth:
        return None
    header = ["Method", "Backbone", "Benchmark", "K", "nAUC", "DR", "Acc_k (k=1..K)"]
    rows = []
    for c in with_depth:
        accs = [c.metrics[k] for k in sorted((k for k in c.metrics if k.startswith("Acc_")), key=lambda s: int(s[4:]))]
        rows.append([c.method, c.backbone, c.benchmark, fmt(c.metrics.get("K"), "K"), fmt(c.metrics.get("nAUC"), "nAUC"),
                     fmt(c.metrics.get("DR"), "DR"), " ".join(f"{a:.0f}" for a in accs)])
    return header, rows


def aggregate_dir(root: Path, reference: str = "full_context", cell_names: set[str] | None = None, out=None, with_paper: bool = True) -> list[dict[str, Any]]:
    out = out or sys.stdout
    root = Path(root)
    cells = collect(root, cell_names)
    if not cells:
        print(f"no finished cells under {root}", file=out)
        return []
    header, rows, long = build_tables(cells, reference, with_paper)
    tdir = root / "tables"
    tdir.mkdir(exist_ok=True)
    title = f"Results: {root.name} (rates in %, Tok = method-side tokens in millions; Δ: pp for rates, relative % for Tok)"
    if any(c.scripted for c in cells):
        title += " — SCRIPTED backbone rows are a deterministic offline demo, not model results"
    md = f"### {title}\n\n" + to_markdown(header, rows)
    if any("Tok_no_tool" in c.metrics for c in cells):
        md += f"\n\n{TOK_NOTE}."
    depth = depth_table(cells)
    if depth:
        md += "\n\n### Depth retention (FlowState §4.2: Acc_k, nAUC, DR)\n\n" + to_markdown(*depth)
    if any(c.partial for c in cells):
        md += ("\n\n[partial]: some episodes are missing (infra errors or an interrupted sweep; re-run the sweep to finish them). "
               "Rates cover the finished episodes only and Tok is a total, so its Δ is not comparable until the cell is complete.")
    if any(c.paraphrased for c in cells):
        md += ("\n\n[paraphrased]: some prompts ran on the project's own wording because the pinned upstream text was "
               "unavailable (see each cell's manifest `text_sources`): " +
               "; ".join(f"{c.cell}: {', '.join(c.paraphrased)}" for c in cells if c.paraphrased))
    counts = "\n\n" + "\n".join(f"- {c.cell}: {c.n_episodes}/{c.n_tasks * c.trials} episodes; tokens by role {c.tokens_by_role}" for c in cells)
    (tdir / "summary.md").write_text(md + counts + "\n")
    with open(tdir / "summary.csv", "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)
    (tdir / "summary.tex").write_text(to_latex(header, rows, title) + "\n")
    with open(tdir / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["method", "backbone", "benchmark", "metric", "value", "paper", "n_episodes", "scripted"])
        w.writeheader()
        w.writerows(long)
    print(md + counts, file=out)
    print(f"\nTables written to {tdir}/summary.{{md,csv,tex}} and metrics.csv", file=out)
    return long


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="results/<experiment> directory")
    ap.add_argument("--reference", default="full_context", help="method the Δ rows compare against (default full_context)")
    ap.add_argument("--no-paper", action="store_true", help="do not print the papers' reported numbers")
    a = ap.parse_args(argv)
    try:
        aggregate_dir(a.results, a.reference, with_paper=not a.no_paper)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
