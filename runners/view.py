"""`python -m runners.view results/<experiment> [--out PATH] [--serve]`: the self-contained HTML
report (the command line of runners/analysis/report.py, which builds it and documents the options)."""

from __future__ import annotations

import sys

from runners.analysis.report import main
from runners.records.store import short_process_gc


def cli(argv: list[str] | None = None) -> int:
    """`main` with Ctrl-C ending it in one line (exit 130)."""
    from runners.interrupts import reader_cli

    with short_process_gc():  # the records live until the page is written: no collector pass over them
        return reader_cli(lambda: main(argv), "the report was not written (a former one is left as it was)")


if __name__ == "__main__":
    sys.exit(cli())
