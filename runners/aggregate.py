"""`python -m runners.aggregate results/<experiment> …`: the experiment's tables (the command line of
runners/analysis/tables.py, which holds the logic and documents the options)."""
from __future__ import annotations

import sys

from runners.analysis.tables import main

if __name__ == "__main__":
    sys.exit(main())
