"""End to end: `python -m runners.sweep benchmark=loca` with the scripted backbone runs Full
Context and PoS on the StockAlertLite fixture through the LOCA adapter and scores 100."""

from __future__ import annotations

from tests.rca100.sweeping import episodes, run_sweep


def test_scripted_sweep_scores_100(tmp_path):
    values = run_sweep(tmp_path, "loca")
    for method in ("full_context", "pos"):
        assert values[(method, "task_success")] == 100.0
        assert values[(method, "success_8k")] == 100.0 and values[(method, "success_256k")] == 100.0
        eps = episodes(tmp_path, method)
        assert len(eps) == 7 and all(e["scripted"] and e["status"] == "ok" for e in eps)
        big = next(e for e in eps if e["scores"]["length"] == "256k")
        assert big["scores"]["artifacts"] == 1 and big["scores"]["issues"] == {}
