"""Every method runs on every benchmark the harness has (one task each, scripted backbone,
through the sweep CLI) and aggregates into one table."""
import importlib.util
import os

from runners.config import available, method_aliases
from tests.conftest import SHARED_DATA
from tests.runners.sweep_helpers import metrics_csv, run_sweep


def test_every_method_on_every_benchmark(tmp_path):
    env = {}
    benches = ["memoryarena_math", "memoryarena_phys", "memoryarena_shopping", "tau_airline", "tau_retail", "rca100", "clindiag", "loca"]
    if (SHARED_DATA / "memoryarena-travel-db").is_dir():
        benches.append("memoryarena_travel")
        env["TRAVELPLANNER_DB_DIR"] = str(SHARED_DATA / "memoryarena-travel-db")
    if (SHARED_DATA / "alfworld").is_dir() and importlib.util.find_spec("alfworld"):
        benches.append("alfworld")
        env["ALFWORLD_DATA"] = str(SHARED_DATA / "alfworld")
    methods = [m for m in available("method") if m not in method_aliases()]  # an alias is the same cell as its method
    if not importlib.util.find_spec("mem0"):
        methods.remove("mem0")
    if not importlib.util.find_spec("sentence_transformers"):
        methods.remove("reasoningbank")  # its local MiniLM embedder ships with the mem0 extra
    p = run_sweep(tmp_path, "runner.limit=1", "experiment.name=matrix", f"experiment.grid.method=[{','.join(methods)}]",
                  f"experiment.grid.benchmark=[{','.join(benches)}]", env={**os.environ, **env}, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"{len(methods) * len(benches)}/{len(methods) * len(benches)} episodes done" in p.stdout
    m = metrics_csv(tmp_path / "matrix" / "tables" / "metrics.csv")
    headline = {"memoryarena_math": "SR", "memoryarena_phys": "SR", "memoryarena_shopping": "SR", "memoryarena_travel": "SR",
                "tau_airline": "Pass1", "tau_retail": "Pass1", "alfworld": "SR", "rca100": "joint_entity_type_accuracy",
                "clindiag": "diagnosis_accuracy", "loca": "task_success"}
    for method in methods:
        for b in benches:
            assert m[(method, b, headline[b])] == 100.0, (method, b)
            assert m[(method, b, "Tok")] > 0
