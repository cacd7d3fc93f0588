"""Run the perf benchmarks in scripts/perf/ in turn (`make perf`). Not `inspect_compare` (it makes
its own inspect_ai venv, a download, and runs ~5 minutes), nor the whole-process ones that run
minutes each (`tail`, `processes`, `analysis`, `report_load`, `resume`): run those on their own."""

import importlib
import sys

for name in (
    "harness",
    "transport",
    "recorder",
    "concurrency",
    "methods",
    "flowstate_overhead",
    "memory_latency",
    "shopping_catalogue",
):
    try:
        mod = importlib.import_module(f"scripts.perf.{name}")
    except ImportError as e:
        print(f"== {name}: not available ({e})")
        continue
    print(f"== {name}")
    sys.argv = [name]
    mod.main()
