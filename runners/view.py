"""`python -m runners.view results/<experiment> [--out PATH] [--serve]`: the self-contained HTML
report (the command line of runners/analysis/report.py, which builds it and documents the options)."""

from __future__ import annotations

import sys

from runners.analysis.report import main

if __name__ == "__main__":
    sys.exit(main())
