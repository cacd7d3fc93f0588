"""`python -m runners.aggregate results/<experiment> [--reference full_context] [--method a,b] [--benchmark x] \
[--cells c1,c2]`

The command line of runners/analysis/tables.py, which builds the tables (its docstring documents them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runners.analysis.stats import DEFAULT_RESAMPLES
from runners.analysis.cells import collect
from runners.analysis.tables import aggregate_dir
from runners.config import ConfigError
from runners.records.store import StoreError, short_process_gc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("results", type=Path, help="results/<experiment> directory")
    ap.add_argument(
        "--reference",
        default=None,
        help="method the Δ rows compare against (default full_context; one the "
        "experiment does not have is an error listing its methods)",
    )
    ap.add_argument("--no-paper", action="store_true", help="do not print the papers' reported numbers")
    ap.add_argument("--cells", help="comma-separated cell directory names to print")
    ap.add_argument("--method", help="comma-separated method names to print (a base name matches its variants)")
    ap.add_argument("--benchmark", help="comma-separated benchmark names to print")
    ap.add_argument(
        "--bootstrap",
        type=int,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=(
            f"bootstrap resamples for the 95%% intervals and the paired Δ tests (default {DEFAULT_RESAMPLES}; 0 = none)"
        ),
    )
    ap.add_argument(
        "--strict",
        action="store_true",
        help="omit the (paper) row of every row that differs from the paper's setting "
        "([fixture], [subset n/N], [roles≠paper], [paraphrased], [mixed])",
    )
    ap.add_argument(
        "--plots",
        action="store_true",
        help="also write tables/*.svg and *.png plots (runners/analysis/plots.py; the 'analysis' extra)",
    )
    a = ap.parse_args(argv)
    if a.plots:
        from runners.analysis.plots import PlotsUnavailable, _matplotlib

        try:
            _matplotlib()  # before any work: a missing extra is named up front
        except PlotsUnavailable as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    split = lambda v: set(x.strip() for x in v.split(",") if x.strip()) if v else None  # noqa: E731
    try:
        aggregate_dir(
            a.results,
            a.reference or "full_context",
            cell_names=split(a.cells),
            with_paper=not a.no_paper,
            methods=split(a.method),
            benchmarks=split(a.benchmark),
            resamples=a.bootstrap,
            strict=a.strict,
            strict_reference=a.reference is not None,
        )
        if a.plots:
            from runners.analysis.plots import write_plots

            files = write_plots(a.results, collect(a.results, split(a.cells), split(a.method), split(a.benchmark)))
            print(f"Plots written: {', '.join(sorted({f.stem for f in files}))} (tables/*.svg, *.png)")
    except (StoreError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def cli(argv: list[str] | None = None) -> int:
    """`main` with Ctrl-C ending it in one line (exit 130)."""
    from runners.interrupts import reader_cli

    with short_process_gc():  # the records live to the end of this process: no collector pass over them
        return reader_cli(
            lambda: main(argv), "the tables were not changed (they are written whole or not at all); run it again"
        )


if __name__ == "__main__":
    sys.exit(cli())
