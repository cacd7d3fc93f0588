"""`python -m runners.paper results/<experiment> [--strict]`: both papers' tables and figures as
printed, in `results/<experiment>/paper/` with an index.md (the command line of
runners/analysis/paper.py, which builds them and documents the layouts)."""

from __future__ import annotations

import sys

from runners.analysis.paper import main

if __name__ == "__main__":
    sys.exit(main())
