"""End to end: `python -m runners.sweep benchmark=rca100` with the scripted backbone runs Full
Context and PoS on the synthetic fixture and scores 100 (the scripted agent investigates, then
submits the gold answer)."""

from __future__ import annotations

from tests.rca100.sweeping import episodes, run_sweep


def test_scripted_sweep_scores_100(tmp_path):
    values = run_sweep(tmp_path, "rca100")
    for method in ("full_context", "pos"):
        assert values[(method, "joint_entity_type_accuracy")] == 100.0
        eps = episodes(tmp_path, method)
        assert len(eps) == 3 and all(e["scripted"] and e["status"] == "ok" for e in eps)
        assert all(e["scores"]["tool_use_counter"] == 3 and e["scores"]["issues"] == {} for e in eps)
    assert {"state", "sentinel"} <= set(episodes(tmp_path, "pos")[0]["calls_by_role"])
