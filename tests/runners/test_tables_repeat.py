"""The tables are a function of the records alone: byte-identical across aggregations of the same
experiment and whatever order the episodes finished in (the bootstrap in blocks included)."""

from __future__ import annotations

import json
import random

from runners.analysis.table_cache import CACHE, TABLE_FILES
from runners.analysis.tables import aggregate_dir

BENCH = {
    "name": "memoryarena_math",
    "_target_": "benchmarks.memoryarena.formal.FormalReasoning",
    "params": {"config": "formal_reasoning_math", "data_dir": "fixtures"},
}


def experiment(root, order_seed):
    rng = random.Random(7)
    for method in ("full_context", "flowstate"):
        d = root / f"{method}__x__memoryarena_math__{method[:2]}"
        d.mkdir(parents=True)
        cfg = {"method": {"name": method}, "backbone": {"name": "deepseek_v4_flash"}, "benchmark": BENCH}
        (d / "manifest.json").write_text(
            json.dumps({"config": cfg, "scripted": False, "n_tasks": 300, "trials": 2, "runs": []})
        )
        lines = []
        for i in range(300):
            for trial in range(2):
                sub = [int(rng.random() < 0.6) for _ in range(rng.randrange(1, 5))]
                scores = {"subtask_correct": sub, "success": int(all(sub)), "progress": sum(sub) / len(sub)}
                lines.append(json.dumps({"task_id": f"t{i}", "trial": trial, "status": "ok", "scores": scores}))
        random.Random(order_seed).shuffle(lines)  # the order episodes finished in
        (d / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return root


def tables_of(root):
    aggregate_dir(root, "full_context", with_paper=False, resamples=200)
    return {f: (root / "tables" / f).read_bytes() for f in TABLE_FILES}


def test_tables_repeat_byte_for_byte_whatever_the_finishing_order(tmp_path):
    a = experiment(tmp_path / "a" / "exp", order_seed=1)
    first = tables_of(a)
    (a / "tables" / CACHE).unlink()  # built again from the records, not read from the cache
    assert tables_of(a) == first
    b = experiment(tmp_path / "b" / "exp", order_seed=2)
    assert tables_of(b) == first
    rows = [r.split(",") for r in first["metrics.csv"].decode().splitlines()]
    ps = [r for r in rows if r[3] == "PS"]
    assert len(ps) == 2 and all(r[8] and r[9] for r in ps)  # PS: task-bootstrap intervals were computed
    assert b"pp [" in first["summary.md"]  # and the paired bootstrap's interval of the Δ
