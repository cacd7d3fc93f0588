"""Run every perf benchmark in scripts/perf/ in turn (`make perf`). Not `inspect_compare`: it makes
its own inspect_ai venv (a download) and runs ~4 minutes; run it on its own."""

import importlib
import sys

for name in (
    "harness",
    "transport",
    "recorder",
    "concurrency",
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
