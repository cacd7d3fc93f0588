"""`python -m runners.aggregate results/<experiment> [--reference full_context] [--method a,b] [--benchmark x] \
[--cells c1,c2]`

Renders an experiment's cells (runners.analysis.cells: which episodes a cell counts, how cells
that share method, backbone and benchmark are named) as tables: the benchmark's metrics per
(method, backbone), token totals (method-side roles; judge and user simulator apart; the unit rule
in runners.analysis.units), Δ rows against a reference method (pp for rates, relative % for
tokens), a markdown table laid out like FlowState Table 1 with the papers' numbers beside ours,
written as `tables/summary.{md,csv,tex}` plus a long-format `tables/metrics.csv` (always of the
whole experiment, written atomically, cached by runners.analysis.table_cache; the filters only
narrow what is printed). Cells whose episodes come from more than one code fingerprint are marked
[mixed code]; the sweeps the cells came from are listed."""

from __future__ import annotations

import csv
import fcntl
import io
import os
import sys
from pathlib import Path
from typing import Any, Sequence, TextIO

from runners.api import MetricSpec
from runners.analysis.cells import (
    CellSummary,
    cell_ci,
    check_reference,
    check_targets,
    collect,
    metric_spec,
    orphan_cells,
    reader_warnings,
    skipped_note,
)
from runners.analysis.fidelity import footnotes, row_marks
from runners.analysis.papers import delta, fmt, fmt_delta, paper_task_count, paper_value, to_latex, to_markdown
from runners.analysis.stats import (
    DEFAULT_RESAMPLES,
    INTERVAL_LEGEND,
    SIGNIFICANCE_LEGEND,
    holm,
    paired_bootstrap,
    paired_sign_test,
    shared_evaluations,
    significance_mark,
)
from runners.analysis.table_cache import read_cache, store_cache, sweep_cells, tables_key
from runners.analysis.units import TOK_NOTE, TOK_PER_TASK, fmt_tok_per_task, paper_in_unit, tok_per_task
from runners.records.store import StoreError, atomic_write, paused_gc


def fmt_ci(value: float | None, spec: MetricSpec, ci: dict[str, tuple[float, float]]) -> str:
    """A rate with its 95% interval: `66.67 [33.33, 100.00]`."""
    metric = spec.name
    text = fmt(value, spec.kind)
    if value is not None and metric in ci:
        lo, hi = ci[metric]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def paired_delta(
    c: CellSummary | None, r: CellSummary | None, metric: str, d: float | None, resamples: int = DEFAULT_RESAMPLES
) -> tuple[str, dict[str, Any]]:
    """The Δ cell for a rate: `+10.00pp [-5.0, +25.0] p=0.31` (paired bootstrap interval of the
    difference over the tasks both cells ran; exact sign-test p on per-task wins/losses) and the numbers."""
    spec = cr.spec(metric) if (cr := c or r) else metric_spec((), metric)
    text = fmt_delta(spec.kind, d)
    extra: dict[str, Any] = {}
    if d is None or c is None or r is None or spec.kind != "rate" or c.metric_fn is None or not resamples:
        return text, extra
    ci = paired_bootstrap(c.episodes, r.episodes, c.metric_fn, resamples=resamples, metrics=[metric]).get(metric)
    sign = paired_sign_test(c.episodes, r.episodes, c.metric_fn, metric, higher_is_better=spec.higher_is_better)
    if ci:
        text += f" [{ci[0]:+.1f}, {ci[1]:+.1f}]"
        extra.update(ci_low=ci[0], ci_high=ci[1])
    if sign:
        wins, losses, ties, p = sign
        extra.update(p_value=p, wins=wins, losses=losses, ties=ties)
    return text, extra


def token_unit(cells: list[CellSummary]) -> tuple[float, str]:
    """Tok is in millions; when every value is below 0.1M the table shows thousands instead
    (0.0061 reads worse than 6.1)."""
    vals = [v for c in cells if (v := c.metrics.get("Tok")) is not None]
    return (1000.0, "k") if vals and max(vals) < 0.1 else (1.0, "M")


def _paper_text(
    c: CellSummary | None, method: str, backbone: str, benchmark: str, m: str, tok_scale: float
) -> str | None:
    """The paper's value for one column, in the unit our column shows (`units.paper_in_unit`):
    Tok also under Tok_no_tool (the reading the paper's #Tok matches); Tok/task from the paper's
    #Tok total and its task count."""
    if m == TOK_PER_TASK:
        return paper_in_unit(paper_value(method, backbone, benchmark, "Tok"), m, tok_scale, paper_task_count(benchmark))
    return paper_in_unit(_paper(c, method, backbone, benchmark, "Tok" if m == "Tok_no_tool" else m), m, tok_scale, None)


def _cell_text(c: CellSummary | None, m: str, tok_scale: float, resamples: int) -> str:
    if c is None:
        return fmt(None, "other")
    if m == TOK_PER_TASK:
        return fmt_tok_per_task(tok_per_task(c))
    v, spec = c.metrics.get(m), c.spec(m)
    if spec.kind == "tokens" and v is not None and tok_scale != 1.0:
        return f"{v * tok_scale:.1f}"
    return fmt_ci(v, spec, cell_ci(c, resamples))


def build_tables(
    cells: list[CellSummary],
    reference: str,
    with_paper: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    marks_out: list[Any] | None = None,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Wide table rows (one per method × backbone, plus paper and Δ rows) and the long rows.
    Rates carry their 95% interval (runners.analysis.stats.rate_interval); Δ rows of rates carry
    the paired interval and the exact sign-test p, Holm-adjusted across the table's comparisons
    (`*` = significant); Tok is shown in thousands when millions would read as 0.00xx, and the
    `(paper)` row is printed in the same unit. Where the paper reports #Tok, a Tok/task column (k)
    sets our mean per episode beside the paper's total / its task count. A row that beside a
    `(paper)` row differs from the paper's setting carries its fidelity marks
    (runners.analysis.fidelity); `strict` drops those rows' `(paper)` rows. `marks_out` collects
    the marks for the footnotes. The metric function's per-task and per-episode numbers are
    computed once for all the intervals and tests (`stats.shared_evaluations`)."""
    with shared_evaluations():
        return _build_tables(cells, reference, with_paper, resamples, strict, marks_out)


def _build_tables(
    cells: list[CellSummary],
    reference: str,
    with_paper: bool,
    resamples: int,
    strict: bool,
    marks_out: list[Any] | None,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    scale, unit = token_unit(cells)
    benchmarks = list(dict.fromkeys(c.benchmark for c in cells))
    cols: list[tuple[str, str]] = []
    for b in benchmarks:
        ms = list(
            dict.fromkeys(m for c in cells if c.benchmark == b for m in c.table_metrics)
        )  # Tok_no_tool where any cell has it
        if (
            with_paper
            and "Tok" in ms
            and any(
                paper_value(c.method, c.backbone, b, "Tok") and paper_task_count(b) for c in cells if c.benchmark == b
            )
        ):
            ms.insert(ms.index("Tok") + 1, TOK_PER_TASK)
        cols += [(b, m) for m in ms]
    by = {(c.method, c.backbone, c.benchmark): c for c in cells}
    c: CellSummary | None  # one cell in the loops below (None where a Δ has no such cell)
    rows_keys = list(dict.fromkeys((c.method, c.backbone) for c in cells))
    rows_keys.sort(key=lambda mb: mb[0] != reference)  # the reference method first, as in the papers
    spec_of = {(c.benchmark, m): c.spec(m) for c in cells for m in c.table_metrics}
    spec_of.update(
        {(b, m): MetricSpec(name=m, kind="tokens", higher_is_better=False) for b, m in cols if m == TOK_PER_TASK}
    )

    def head(b: str, m: str) -> str:
        if m == TOK_PER_TASK:
            return f"{b}:{m}(k)"
        sp = spec_of[b, m]
        return f"{b}:{sp.display if sp.name == m else m}" + (f"({unit})" if sp.kind == "tokens" and unit != "M" else "")

    header = ["Method", "Backbone"] + [head(b, m) for b, m in cols]
    rows: list[list[str]] = []
    long: list[dict[str, Any]] = []
    tests: list[
        tuple[int, int, str, float | None, dict[str, Any] | None]
    ] = []  # (row, col, text, p, long row) of Δ rates
    for method, backbone in rows_keys:
        vals = [by.get((method, backbone, b)) for b, _ in cols]
        mine = [c for c in cells if (c.method, c.backbone) == (method, backbone)]
        scripted = any(c.scripted for c in mine)
        partial = any(c.partial for c in mine)
        para = any(c.paraphrased for c in mine)
        mixed = any(c.mixed_code for c in mine)
        mixed_texts = any(c.mixed_texts for c in mine)  # counted episodes ran on different texts (docs/texts.md)
        paper = (
            [
                _paper_text(
                    by.get((method, backbone, b)) or by.get((reference, backbone, b)), method, backbone, b, m, scale
                )
                for b, m in cols
            ]
            if with_paper
            else []
        )
        labels, marks = row_marks(mine) if any(paper) else ([], [])
        labels = [x for x in labels if x != "[paraphrased]"]  # printed below for every row, paper or not
        if marks_out is not None:
            marks_out.extend(marks)
        rows.append(
            [
                method
                + (" [scripted]" if scripted else "")
                + (" [partial]" if partial else "")
                + (" [mixed code]" if mixed else "")
                + (" [paraphrased]" if para else "")
                + (" [mixed]" if mixed_texts and "[mixed]" not in labels else "")
                + "".join(" " + x for x in labels),
                backbone,
            ]
            + [_cell_text(c, m, scale, resamples) for c, (_, m) in zip(vals, cols)]
        )
        for c in mine:
            ci = cell_ci(c, resamples)
            for m, v in c.metrics.items():  # every metric, not only the table's columns
                lo_hi = ci.get(m)
                long.append(
                    {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": c.benchmark,
                        "metric": m,
                        "value": v,
                        "paper": _paper(c, method, backbone, c.benchmark, m),
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                        "ci_low": lo_hi[0] if lo_hi else None,
                        "ci_high": lo_hi[1] if lo_hi else None,
                    }
                )
            for role, n in sorted(c.tokens_by_role.items()):
                long.append(
                    {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": c.benchmark,
                        "metric": f"tokens_{role}",
                        "value": n,
                        "paper": None,
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                    }
                )
        if with_paper and any(paper) and not (strict and marks):
            rows.append([f"  {method} (paper)", backbone] + [p or "–" for p in paper])
        if method != reference and any((reference, backbone, b) in by for b, _ in cols):
            ds = []
            for j, (b, m) in enumerate(cols):
                c, r = by.get((method, backbone, b)), by.get((reference, backbone, b))
                if m == TOK_PER_TASK:
                    ds.append(
                        fmt_delta(
                            "tokens", delta("tokens", tok_per_task(c) if c else None, tok_per_task(r) if r else None)
                        )
                    )
                    continue
                d = delta(spec_of[b, m].kind, c.metrics.get(m) if c else None, r.metrics.get(m) if r else None)
                text, extra = paired_delta(c, r, m, d, resamples)
                ds.append(text)
                lrow = None
                if d is not None and c is not None:  # d is None without c
                    lrow = {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": b,
                        "metric": f"delta_{m}",
                        "value": d,
                        "paper": None,
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                        "ci_low": extra.get("ci_low"),
                        "ci_high": extra.get("ci_high"),
                        "p_value": extra.get("p_value"),
                    }
                    long.append(lrow)
                if "p_value" in extra:
                    tests.append((len(rows), 2 + j, text, extra["p_value"], lrow))
            rows.append([f"  Δ vs {reference}", backbone] + ds)
    for (i, j, text, _, lrow), adj in zip(tests, holm([t[3] for t in tests])):
        rows[i][j] = f"{text} p={adj:.2g}{significance_mark(adj)}"
        if lrow is not None:
            lrow["p_holm"] = adj
    return header, rows, long


def _paper(c: CellSummary | None, method: str, backbone: str, benchmark: str, metric: str) -> str | None:
    """The papers' value of `metric` under the paper's name for it (`MetricSpec.paper`)."""
    spec = c.spec(metric) if c else metric_spec((), metric)
    return paper_value(method, backbone, benchmark, spec.paper or metric)


def depth_table(cells: list[CellSummary]) -> tuple[list[str], list[list[str]]] | None:
    with_depth = [c for c in cells if c.metrics.get("nAUC") is not None or c.metrics.get("K")]
    if not with_depth:
        return None
    header = ["Method", "Backbone", "Benchmark", "K", "nAUC", "DR", "Acc_k (k=1..K)"]
    rows = []
    for c in with_depth:
        accs = [c.metrics[k] for k in sorted((k for k in c.metrics if k.startswith("Acc_")), key=lambda s: int(s[4:]))]
        rows.append(
            [
                c.method,
                c.backbone,
                c.benchmark,
                fmt(c.metrics.get("K"), c.spec("K").kind),
                fmt(c.metrics.get("nAUC"), c.spec("nAUC").kind),
                fmt(c.metrics.get("DR"), c.spec("DR").kind),
                " ".join(f"{a:.0f}" for a in accs),
            ]
        )
    return header, rows


def _sweeps(cells: list[CellSummary]) -> list[str]:
    """One line per sweep that last ran some of these cells: when, the command line, which cells."""
    by: dict[str, list[CellSummary]] = {}
    for c in cells:
        by.setdefault(str(c.sweep.get("id") or "unrecorded"), []).append(c)
    lines = []
    for sid, cs in sorted(by.items(), key=lambda kv: str(kv[1][0].sweep.get("started_at") or "")):
        sw = cs[0].sweep
        what = (
            f"{sw.get('started_at', '?')} `{' '.join(sw.get('overrides') or []) or '(no overrides)'}`"
            if sw
            else "unrecorded sweep"
        )
        lines.append(f"- {what}: {', '.join(c.cell for c in cs)}")
    return lines


def _notes(root: Path, cells: list[CellSummary], orphans: list[str]) -> list[str]:
    out = []
    for c in cells:
        if c.extra_on_disk:
            out.append(
                f"{c.cell}: {c.extra_on_disk} more on disk outside this manifest's {c.n_tasks} tasks × "
                f"{c.trials} trials (an earlier run with more trials or a larger limit); kept, not counted"
            )
        out += [f"{c.cell}: {n}" for n in c.set_aside]
        if c.mixed_texts:
            out.append(
                f"{c.cell}: [mixed] counted episodes ran on {len(c.text_sets)} different sets of model-facing texts "
                f"({', '.join(f'{n} on {k}' for k, n in sorted(c.text_sets.items()))}: compare the episodes' `texts`); "
                "runner.fresh=true re-runs the cell on one"
            )
        if c.mixed_code:
            out.append(
                f"{c.cell}: [mixed code] episodes from {len(c.codes)} code fingerprints "
                f"({', '.join(f'{n} by {k}' for k, n in sorted(c.codes.items()))}); runner.fresh=true re-runs the cell"
            )
    return out + orphans


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def aggregate_dir(
    root: Path,
    reference: str = "full_context",
    cell_names: set[str] | None = None,
    out: TextIO | None = None,
    with_paper: bool = True,
    methods: set[str] | None = None,
    benchmarks: set[str] | None = None,
    err: TextIO | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    strict_reference: bool = False,
    folded: dict[str, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Write the tables of the whole experiment to `tables/` (atomically, under a lock so parallel
    jobs do not race: each reads every cell inside the lock) and print them, or, with filters,
    print the table of the matching cells only. `strict_reference` (a reference named on the
    command line): a reference method the experiment does not have is an error listing its methods.
    The garbage collector pauses meanwhile: the records stay alive to the end, and its passes over
    them cost more than the tables.

    The whole experiment's tables are cached in `tables/.cache.json` under `tables_key` (the
    records' files, the manifests without their run history, the code fingerprint, the options):
    when nothing of it changed (a resume with nothing to run) they are read from there; only the
    list of sweeps, which every run updates, is rebuilt from the manifests. `folded`: cell name →
    its finished records' compact form, kept by the sweep that just wrote them (runners.run.TableFold),
    used instead of reading those cells back."""
    with paused_gc():
        return _aggregate_dir(
            root,
            reference,
            cell_names,
            out,
            with_paper,
            methods,
            benchmarks,
            err,
            resamples,
            strict,
            strict_reference,
            folded,
        )


def _aggregate_dir(
    root: Path,
    reference: str = "full_context",
    cell_names: set[str] | None = None,
    out: Any = None,
    with_paper: bool = True,
    methods: set[str] | None = None,
    benchmarks: set[str] | None = None,
    err: Any = None,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    strict_reference: bool = False,
    folded: dict[str, list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    from runners.config import canonical_method

    out = out or sys.stdout
    err = err or sys.stderr
    root = Path(root)
    check_reference(reference)  # before any work; names of readable cells are checked after collecting
    reference = canonical_method(reference)  # raw_trajectory (PoS's name) is full_context
    if strict_reference and root.is_dir():
        found = collect(root)
        if found:
            check_reference(reference, found, root)
    if not root.is_dir():
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    tdir = root / "tables"
    tdir.mkdir(exist_ok=True)
    lock = os.open(tdir / ".lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        key = tables_key(root, reference, with_paper, resamples, strict)
        hit = read_cache(tdir, key)
        if hit is not None:  # the records, the code and the options are those the tables were built from
            try:
                check_targets(root)  # an external benchmark not on the path: the error a rebuild would give
            except StoreError as e:
                raise StoreError(
                    f"{e}. The tables last built stay in {tdir}, not served from the cache: they could not be "
                    "rebuilt or filtered here"
                ) from None
            everything, long = None, hit["long"]
            for w in hit["warnings"]:
                print(w, file=err)
            atomic_write(tdir / "summary.md", hit["md"] + _live_section(root, sweep_cells(root)) + "\n")
        else:
            everything = collect(root, folded=folded)
            from runners.prune import hidden_notes

            orphans = orphan_cells(root) + hidden_notes(root)  # failed tries are listed under the table
            warnings = reader_warnings(root, everything, orphans)
            for w in warnings:
                print(w, file=err)
            long = (
                _write_tables(root, everything, reference, with_paper, orphans, resamples, strict) if everything else []
            )
            if everything:
                store_cache(tdir, key, long, warnings)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    filtered = cell_names is not None or methods is not None or benchmarks is not None
    cells = collect(root, cell_names, methods, benchmarks) if filtered else (everything or [])
    if filtered and not cells:
        everything = everything if everything is not None else collect(root)
        raise StoreError(
            f"no cell of {root} matches the filters; the experiment has methods "
            f"{', '.join(sorted({c.method for c in everything})) or '-'}, benchmarks "
            f"{', '.join(sorted({c.benchmark for c in everything})) or '-'}, cells "
            f"{', '.join(sorted(c.cell for c in everything)) or '-'}"
        )
    if everything is not None and not everything:
        print(f"no finished cells under {root}", file=out)
        return []
    if filtered:
        marks: list = []
        header, rows, long = build_tables(
            cells, reference_for(cells, reference)[0], with_paper, resamples, strict, marks
        )
        md = _markdown(root, cells, header, rows, reference, [], marks)
    else:
        md = (tdir / "summary.md").read_text().rstrip("\n")
    print(md, file=out)
    print(
        f"\nTables of the whole experiment written to {tdir}/summary.{{md,csv,tex}} and metrics.csv"
        + (" (the filters narrowed only what is printed here)" if filtered else ""),
        file=out,
    )
    return long


def _markdown(
    root: Path,
    cells: list[CellSummary],
    header: list[str],
    rows: list[list[str]],
    reference: str,
    orphans: list[str],
    marks: list[Any] | None = None,
) -> str:
    title = _title(root, cells)
    why = reference_for(cells, reference)[1]
    md = f"### {title}" + (f" — {why}" if why else "") + "\n\n" + to_markdown(header, rows)
    md += "\n\n" + INTERVAL_NOTE
    if any(" p=" in x for row in rows for x in row):
        md += "\n\n" + SIGNIFICANCE_LEGEND + "."
    if any(h.endswith(f"{TOK_PER_TASK}(k)") for h in header):
        md += (
            "\n\nTok/task = our mean method-side tokens per episode (thousands; without the `tool` role where it ran, "
            "as the paper counts #Tok); its `(paper)` value is the paper's #Tok total divided by the paper's task "
            "count, so a subset compares per task (a total does not)."
        )
    for note in footnotes([m for m in (marks or []) if m.code != "paraphrased"]):
        md += "\n\n" + note
    if any("Tok_no_tool" in c.metrics for c in cells):
        md += f"\n\n{TOK_NOTE}."
    depth = depth_table(cells)
    if depth:
        md += (
            "\n\n### Depth retention (FlowState §4.2: Acc_k, nAUC, DR)\n\n" + to_markdown(*depth) + "\n\n" + DEPTH_NOTE
        )
    if any(c.partial for c in cells):
        md += (
            "\n\n[partial]: some episodes are missing (infra errors, an interrupted sweep or a damaged records file: "
            "see the notes; re-run the sweep to finish them). Rates cover the finished episodes only and Tok is a "
            "total, so its Δ is not comparable until the cell is complete."
        )
    if any(c.paraphrased for c in cells):
        md += (
            "\n\n[paraphrased]: some prompts ran on the project's own wording because the pinned upstream text was "
            "unavailable (see each cell's manifest `text_sources`): "
            + "; ".join(f"{c.cell}: {', '.join(c.paraphrased)}" for c in cells if c.paraphrased)
        )
    counts = "\n\n" + "\n".join(
        f"- {c.cell}: {c.n_episodes}/{c.n_tasks * c.trials} episodes; tokens by role {c.tokens_by_role}" for c in cells
    )
    notes = _notes(root, cells, orphans)
    if notes:
        counts += "\n\nNotes:\n" + "\n".join(f"- {n}" for n in notes)
    return md + counts + _live_section(root, cells)


def _live_section(root: Path, cells: list[Any]) -> str:
    """The end of summary.md that changes without the records changing (rebuilt on a cache hit):
    the sweeps the cells came from, the cells a sweep skipped."""
    text = "\n\nSweeps the cells came from (latest run of each cell):\n" + "\n".join(_sweeps(cells))
    skipped = skipped_note(root, cells)
    return text + ("\n\n" + skipped if skipped else "")


DEPTH_NOTE = (
    "nAUC: the area under the retention curve R_k = Acc_k / Acc_1 (trapezoids over k = 1..K, divided by K − 1), "
    "in %: 100 = every later depth as accurate as the first, below 100 = accuracy lost with depth, above 100 = "
    "later depths more accurate than the first (e.g. Acc_k 33, 33, 100, 0 gives R_k 1, 1, 3, 0 and nAUC 150). "
    "DR: minus the least-squares slope of R_k, in % (positive = accuracy falls with depth)."
)


def reference_for(cells: Sequence[CellSummary], reference: str) -> tuple[str, str | None]:
    """The Δ rows' reference: `reference` when these cells have it, else the grid's first method (the
    cells are in grid order), with the words the table's title says it in (None: the reference as asked)."""
    if not cells or any(c.method.split("[", 1)[0] == reference for c in cells):
        return reference, None
    first = cells[0].method
    if all(c.method == first for c in cells):
        return reference, None  # one method: nothing to compare
    return first, f"Δ vs {first}, the grid's first method ({reference}, the reference method, is not in these cells)"


def _title(root: Path, cells: list[CellSummary]) -> str:
    _, unit = token_unit(cells)
    title = (
        f"Results: {root.name} (rates in % [95% interval], Tok = method-side tokens in "
        f"{'thousands' if unit == 'k' else 'millions'}"
        + (", USD = list-price cost" if any("USD" in c.metrics for c in cells) else "")
        + "; Δ: pp for rates [paired bootstrap interval] p = exact sign test over tasks, Holm-adjusted; "
        "relative % for Tok/USD)"
    )
    if any(c.scripted for c in cells):
        title += " — SCRIPTED backbone rows are a deterministic offline demo, not model results"
    notes = [n for n in dict.fromkeys(str((c.config.get("experiment") or {}).get("note") or "") for c in cells) if n]
    if notes:
        title += " — " + "; ".join(notes)
    return title


METRICS_FIELDS = [
    "method",
    "backbone",
    "benchmark",
    "metric",
    "value",
    "paper",
    "n_episodes",
    "scripted",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
]
INTERVAL_NOTE = INTERVAL_LEGEND  # which n each interval uses, trials > 1 included (runners.analysis.stats)


def _write_tables(
    root: Path,
    cells: list[CellSummary],
    reference: str,
    with_paper: bool,
    orphans: list[str],
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
) -> list[dict[str, Any]]:
    marks: list = []
    header, rows, long = build_tables(cells, reference_for(cells, reference)[0], with_paper, resamples, strict, marks)
    tdir = root / "tables"
    tdir.mkdir(exist_ok=True)
    md = _markdown(root, cells, header, rows, reference, orphans, marks)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=METRICS_FIELDS)
    w.writeheader()
    w.writerows(long)
    atomic_write(tdir / "summary.md", md + "\n")
    atomic_write(tdir / "summary.csv", _csv([header] + rows))
    atomic_write(tdir / "summary.tex", to_latex(header, rows, _title(root, cells)) + "\n")
    atomic_write(tdir / "metrics.csv", buf.getvalue())
    return long
