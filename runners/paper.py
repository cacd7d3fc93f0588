"""`python -m runners.paper results/<experiment> [--strict]`: both papers' tables and figures as
printed, in `results/<experiment>/paper/` with an index.md (the command line of
runners/analysis/paper.py, which builds them and documents the layouts)."""

from __future__ import annotations

import sys

from runners.analysis.paper import main


def cli(argv: list[str] | None = None) -> int:
    """`main` with Ctrl-C ending it in one line (exit 130)."""
    from runners.interrupts import reader_cli

    return reader_cli(lambda: main(argv), "not every artefact was written; run the same command again")


if __name__ == "__main__":
    sys.exit(cli())
