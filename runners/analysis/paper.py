"""Both papers' tables and figures as printed, from whatever cells of an experiment fit them:
`python -m runners.paper results/<experiment> [--strict]` writes `results/<experiment>/paper/`.

Each artefact's layout (rows, groups, order, labels, which cells feed it, columns) is data:
`runners/reference/layouts/<artefact>.yaml`, with the papers' names for our config names in
`labels.yaml` beside it; a third paper adds its layouts there. This module only interprets them:

- tables (`kind: table`): the paper's rows in its order and groups, our row for each layout row
  we ran (on the paper's backbone, or on the researcher's own backbone: attached to the first
  layout row of that method), the paper's value in our unit below our row of the paper's backbone
  only (`(paper)` row; omitted with `strict` where our row carries a fidelity mark,
  runners.analysis.fidelity; `[name uncertain]` where the paper's name for the row was restored
  with low confidence), the paper's Δ row after ours (omitted with `strict` beside a Δ of marked
  rows), best **bold** and second underlined per performance column (among ours, and apart among
  the paper's; per backbone group where the table groups by backbone), header rows spanning their
  columns (`column_groups`), and every other method run on the same benchmarks as extra rows.
  Pooled columns (`pool:`) recompute the benchmark's metrics over the episodes of several cells
  (FlowState Table 4's Formal Reasoning = Math + Physics tasks).
  A `Tok/task` column (thousands per episode) sets our mean beside the paper's total / its tasks.
- `kind: cost` (PoS Table 2), and the figures (`fig_*`, runners/analysis/paper_figures.py), each
  with `<figure>.csv`: the numbers drawn, ours beside the paper's, with the marks of each point.
- `claims.md` / `claims.csv`: the papers' quantitative claims recomputed on their own tables and
  on ours, with a verdict and the marks of the cells each rests on (runners/analysis/paper_claims.py).

Every artefact gets a status for `index.md`: produced, partial (the layout cells missing) or not
produced (the preset that produces it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runners.analysis import paper_figures
from runners.analysis.paper_tables import (  # noqa: F401  (re-exported: the artefact set's building blocks)
    Artefact,
    Cells,
    DEFAULT_RESAMPLES,
    backbone_label,
    build_cost,
    build_table,
    domain_title,
    headlines,
    headlines_md,
    layout,
    layouts,
    method_label,
    paper_lookup,
    paper_tok,
    table_csv,
    table_md,
    table_tex,
)


# ---------------------------------------------------------------- the whole set
def build_all(
    cells_list: list[Any], strict: bool = False, resamples: int = DEFAULT_RESAMPLES, figures: bool = True
) -> list[Artefact]:
    from runners.analysis.stats import shared_evaluations

    cells = Cells(cells_list)
    out = []
    with shared_evaluations():  # the paired tests of every table read the same per-task numbers
        for lay in layouts():
            kind = lay["kind"]
            if kind == "table":
                out.append(build_table(lay, cells, strict, resamples))
            elif kind == "cost":
                out.append(build_cost(dict(lay, strict=strict), cells))
            elif kind.startswith("fig_"):
                out.append(paper_figures.build(lay, cells, draw=figures))
    return out


def write_all(
    root: Path,
    cells_list: list[Any],
    strict: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    out_dir: Path | None = None,
    roots: list[Path] | None = None,
) -> list[Artefact]:
    """Write `<root>/paper/` (or `out_dir`): every artefact's files and index.md. Without matplotlib
    the tables are still written and index.md says how to get the figures."""
    from runners.records.store import atomic_write

    out_dir = Path(out_dir) if out_dir else Path(root) / "paper"
    out_dir.mkdir(parents=True, exist_ok=True)
    can_draw = paper_figures.figures_available()
    arts = build_all(cells_list, strict, resamples, figures=can_draw)
    for a in arts:
        if a.status == "not produced":
            continue
        if a.table is not None:
            atomic_write(out_dir / f"{a.name}.md", table_md(a.table, a.title))
            atomic_write(out_dir / f"{a.name}.csv", table_csv(a.table))
            atomic_write(out_dir / f"{a.name}.tex", table_tex(a.table, a.title))
            a.files = [f"{a.name}.md", f"{a.name}.csv", f"{a.name}.tex"]
        elif a.kind.startswith("fig_"):  # the numbers behind the picture, drawn or not (no matplotlib)
            atomic_write(out_dir / f"{a.name}.csv", paper_figures.figure_csv(a))
            drawn = [p.name for p in paper_figures.save(a.figure, out_dir, a.name)] if a.figure is not None else []
            a.files = drawn + [f"{a.name}.csv"]
    hs = headlines(Cells(cells_list))
    from runners.analysis import paper_claims
    from runners.analysis.cells import skipped_note

    claims = paper_claims.check(Cells(cells_list))
    atomic_write(out_dir / "claims.md", paper_claims.claims_md(claims, Path(root).name))
    atomic_write(out_dir / "claims.csv", paper_claims.claims_csv(claims))

    skipped = [t for r in (roots or [root]) if (t := skipped_note(Path(r), cells_list))]
    atomic_write(out_dir / "index.md", index_md(Path(root).name, arts, hs, can_draw, strict, skipped, claims))
    return arts


def index_md(
    experiment: str,
    arts: list[Artefact],
    hs: list[dict[str, Any]],
    can_draw: bool,
    strict: bool,
    skipped: list[str] | None = None,
    claims: list[Any] | None = None,
) -> str:
    from runners.analysis.plots import EXTRA_HINT

    lines = [
        f"# Paper artefacts: {experiment}",
        "",
        "Each artefact of the FlowState and PoS papers, built from the cells of this experiment that fit it "
        "(layouts: runners/reference/layouts/*.yaml)."
        + (" `--strict`: no `(paper)` row beside a marked row." if strict else ""),
        "",
    ]
    if claims is not None:
        from runners.analysis.paper_claims import HOLDS, FAILS, UNKNOWN

        n = {v: sum(c.verdict == v for c in claims) for v in (HOLDS, FAILS, UNKNOWN)}
        lines += [
            f"**The papers' claims, checked: [claims.md](claims.md)** ([claims.csv](claims.csv)): {n[HOLDS]} hold, "
            f"{n[FAILS]} do not hold, {n[UNKNOWN]} not computable from these cells.",
            "",
        ]
    if not can_draw:
        lines += [
            f"**Figures not drawn:** matplotlib is not installed. Install the 'analysis' extra ({EXTRA_HINT}) and run "
            f"`python -m runners.paper results/{experiment}` again; the tables below are complete without it.",
            "",
        ]
    lines += ["| Artefact | Status | Files | What is missing / how to produce it |", "|---|---|---|---|"]
    for a in arts:
        files = ", ".join(f"[{f}]({f})" for f in a.files) or "–"
        if a.status == "produced":
            what = ""
        elif a.status == "partial":
            what = (
                "missing: "
                + "; ".join(a.missing[:12])
                + (f"; … ({len(a.missing)} in all)" if len(a.missing) > 12 else "")
            )
        else:
            what = f"produce with `{a.preset}`" + (f" (missing: {'; '.join(a.missing[:6])})" if a.missing else "")
        if a.kind.startswith("fig_") and a.status != "not produced" and not a.files and not can_draw:
            what = (what + "; " if what else "") + f"figure not drawn: needs matplotlib ({EXTRA_HINT})"
        lines.append(f"| `{a.name}`: {a.title} | {a.status} | {files} | {what} |")
    if skipped:  # cells a sweep left out (runner.skip_unavailable=true): the partial artefacts above miss them
        lines += ["", "## Skipped cells", "", *skipped]
    lines += ["", "## Headlines (computed the papers' way, beside the papers')", "", headlines_md(hs, strict)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    from runners.analysis.cells import collect, reader_warnings
    from runners.config import ConfigError
    from runners.records.store import StoreError

    ap = argparse.ArgumentParser(
        prog="python -m runners.paper",
        description="Write both papers' tables and figures as printed "
        "(results/<experiment>/paper/, with index.md) from the cells of an experiment.",
    )
    ap.add_argument(
        "results",
        type=Path,
        nargs="+",
        help="results/<experiment> directory; several pool their cells (Table 1's "
        "Full Context rows of the other backbones come from the Table 5 preset's experiment)",
    )
    ap.add_argument("--out", type=Path, default=None, help="where to write (default: <first experiment>/paper)")
    ap.add_argument(
        "--strict",
        action="store_true",
        help="omit the (paper) row wherever our row differs from the paper's setting "
        "([fixture], [subset n/N], [roles≠paper], [paraphrased], [mixed], [sampling≠paper], [setting≠paper]), "
        "the Δ (paper) row beside a Δ of marked rows and the paper's value beside a marked headline",
    )
    ap.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help="0 = no significance tests on the Δ rows (faster)",
    )
    a = ap.parse_args(argv)
    try:
        cells, seen = [], set()
        for root in a.results:
            found = collect(root)
            for w in reader_warnings(root, found):  # a damaged records file, a foreign folder: said, not hidden
                print(w, file=sys.stderr)
            for c in found:
                if c.cell not in seen:  # the same cell in two experiments counts once
                    seen.add(c.cell)
                    cells.append(c)
        out = a.out or Path(a.results[0]) / "paper"
        arts = write_all(
            a.results[0], cells, strict=a.strict, resamples=a.bootstrap, out_dir=out, roots=list(a.results)
        )
    except (StoreError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for art in arts:
        print(
            f"{art.name:18s} {art.status}" + (f" ({len(art.missing)} cells missing)" if art.status == "partial" else "")
        )
    print(f"\nWritten to {out}/ (index.md lists every artefact and what is missing)")
    return 0
