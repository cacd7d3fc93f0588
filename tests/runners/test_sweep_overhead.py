"""What a sweep spends outside its episodes. numpy is loaded by the first interval that needs it
(runners/analysis/stats.py), not by the sweep's start: a sweep whose tables bootstrap nothing runs,
and writes its tables, with numpy unimportable; a table that does bootstrap gets numpy through the
stand-in. What the sweep loaded before its episodes stays frozen out of the collector, so the
collection before the tables walks only what the run made."""

import re
import subprocess
import sys

from tests.runners.sweep_helpers import REPO, run_sweep


def test_a_sweep_whose_tables_bootstrap_nothing_never_imports_numpy(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['numpy'] = None\n")  # `import numpy` raises
    p = run_sweep(
        tmp_path / "out",
        "benchmark=toy",
        "method=full_context",
        "runner.limit=1",
        env={"PYTHONPATH": f"{site}:{REPO}"},
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ImportError" not in p.stderr and "numpy" not in p.stderr
    metrics = list((tmp_path / "out").glob("*/tables/metrics.csv"))
    assert len(metrics) == 1 and "full_context" in metrics[0].read_text()


def test_the_first_interval_imports_numpy_and_the_stand_in_gives_way():
    code = (
        "import sys\n"
        "from runners.analysis import stats\n"
        "assert 'numpy' not in sys.modules, 'imported with the module'\n"
        "eps = [{'task_id': f't{i}', 'trial': 0, 'x': float(i % 3)} for i in range(12)]\n"
        "ci = stats.bootstrap_ci(eps, lambda e: {'x': sum(r['x'] for r in e) / len(e)}, resamples=200)\n"
        "import numpy\n"
        "assert stats.np is numpy, type(stats.np)\n"
        "print(*(float(v) for v in ci['x']))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    lo, hi = map(float, p.stdout.split())  # the mean of twelve tasks' 0, 1, 2, 0, 1, 2, ...: 1.0
    assert 0.3 < lo < 1.0 < hi < 1.7


def test_the_collection_before_the_tables_walks_only_what_the_run_made(tmp_path):
    """What the sweep loaded before its episodes (modules, configs: ~60,000 objects) is frozen out of
    the collector for the rest of the process: as the tables start, the collector tracks only what
    the run made (the sweep's own census, HARNESS_MEMORY_CENSUS; ~1,000 objects in a toy run)."""
    census = tmp_path / "census.txt"
    p = run_sweep(tmp_path / "out", "benchmark=toy", "runner.limit=2", env={"HARNESS_MEMORY_CENSUS": str(census)})
    assert p.returncode == 0, p.stderr[-3000:]
    m = re.search(r"^== tables start: .*?([\d,]+) tracked objects", census.read_text(), re.M)
    assert m, census.read_text()[:2000]
    assert int(m.group(1).replace(",", "")) < 10_000, m.group(0)
