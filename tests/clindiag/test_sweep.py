"""End to end: `python -m runners.sweep benchmark=clindiag` with the scripted backbone runs Full
Context and PoS on the fictional fixture and scores 100; provider and judge calls are made
through the benchmark roles (user_sim, judge)."""

from __future__ import annotations

from tests.rca100.sweeping import episodes, run_sweep


def test_scripted_sweep_scores_100(tmp_path):
    values = run_sweep(tmp_path, "clindiag")
    for method in ("full_context", "pos"):
        assert values[(method, "diagnosis_accuracy")] == 100.0
        eps = episodes(tmp_path, method)
        assert len(eps) == 3 and all(e["scripted"] and e["status"] == "ok" for e in eps)
        assert all(e["calls_by_role"]["user_sim"] == 2 and e["calls_by_role"]["judge"] == 1 for e in eps)
        assert all(e["scores"]["submitted"] and e["scores"]["issues"] == {} for e in eps)
