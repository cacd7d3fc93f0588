"""`python -m runners.view results/<experiment> [--out PATH] [--serve]`: the self-contained HTML
report (the command line of runners/analysis/report.py, which builds it and documents the options)."""

from __future__ import annotations

import sys

from runners.analysis.report import main
from runners.records.store import short_process_gc

if __name__ == "__main__":
    with short_process_gc():  # the records live until the page is written: no collector pass over them
        sys.exit(main())
