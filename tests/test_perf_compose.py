"""scripts/perf/compose.py measures both variants in fresh processes and prints their ratio."""

import re

from scripts.perf import compose


def test_compose_prints_both_medians_and_their_ratio(capsys):
    compose.main(["--rounds", "1", "--loops", "1", "--plan-runs", "0"])
    out = capsys.readouterr().out
    m = re.search(r"cached ([\d.]+) ms, uncached ([\d.]+) ms, ratio ([\d.]+)", out)
    assert m, out
    cached, uncached, ratio = map(float, m.groups())
    assert cached > 0 and uncached > 0 and abs(ratio - cached / uncached) < 0.01
    assert "compose, cached" in out and "compose, uncached" in out
