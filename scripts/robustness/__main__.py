"""Robustness of every method to real models' output habits, measured with the noisy scripted
backbone (`backbone.scripted.perturb`, catalogue `runners.backbones.habits`).

    python -m scripts.robustness                       # full table (6 methods × 3 fixtures × 13 habits × 2 rates)
    python -m scripts.robustness --methods pos --benchmarks memoryarena_math --habits trailing_commas --rates 1.0

For each method × benchmark the oracle (no habit) is run once; then each habit is applied to
every call (rate 1.0) and to a 30 % share of calls (rate 0.3, seeded), plus `mixed` (a habit
drawn per call). Printed per cell: score kept = habit score / oracle score (the benchmark's first
table metric), call ratio = the method's own calls (agent, tool, state, memory, sentinel) / the
oracle's, and the reader's repairs. `--check` exits 1 when a rate-1.0 cell keeps < 97 % of the
oracle's score or spends > 1.10× its calls. `--markdown FILE` writes the table.

The MemoryArena math fixture is the project's (benchmarks/memoryarena/fixtures) plus two tasks
with LaTeX answers (scripts/robustness/latex_math.jsonl, upstream schema), so the LaTeX habit has
something to act on.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from runners.api import METHOD_ROLES, Benchmark, TaskSpec
from runners.backbones.habits import HABITS
from runners.backbones.scripted import ScriptedBackbone
from runners.config import CONF_DIR, import_target
from runners.episode import Episode

HERE = Path(__file__).parent
METHODS = ("full_context", "flowstate", "pos", "bm25", "zipact", "hiagent")
BENCHMARKS = ("memoryarena_math", "tau_airline", "rca100")
THRESHOLD_SCORE, THRESHOLD_CALLS = 0.97, 1.10


def _conf(group: str, name: str) -> dict[str, Any]:
    return yaml.safe_load((CONF_DIR / group / f"{name}.yaml").read_text())


def math_fixture_dir() -> str:
    """The project's math fixture rows plus the LaTeX tasks, in a temporary data folder."""
    from benchmarks.memoryarena.loader import FIXTURES

    root = Path(tempfile.mkdtemp(prefix="robustness-math-"))
    (root / "formal_reasoning_math").mkdir()
    rows = (
        (FIXTURES / "formal_reasoning_math" / "data.jsonl").read_text().rstrip("\n")
        + "\n"
        + (HERE / "latex_math.jsonl").read_text()
    )
    (root / "formal_reasoning_math" / "data.jsonl").write_text(rows)
    return str(root)


def load_benchmark(name: str, math_dir: str) -> tuple[Benchmark, list[TaskSpec]]:
    b = _conf("benchmark", name)
    params = {**b["params"], "data_dir": math_dir if name.startswith("memoryarena") else "fixtures"}
    bench = import_target(b["_target_"], "benchmark")(name=b["name"], **params)
    return bench, bench.load_tasks()


async def run_cell(
    method: str, bench: Benchmark, tasks: list[TaskSpec], perturb: str | None, rate: float
) -> dict[str, Any]:
    m = _conf("method", method)
    backbone = ScriptedBackbone(perturb=perturb, perturb_rate=rate)
    records: list[Any] = []
    for t in tasks:
        ep = Episode(backbone, cell=f"{method}/{perturb}/{rate}", task_id=t.task_id)
        env = ep.make_env(bench, t)
        meth = import_target(m["_target_"], "method")(backbone=ep.agent, **(m.get("params") or {}))
        records.append((await ep.run(env, meth)).model_dump(mode="json"))
    ok = [r for r in records if r["status"] == "ok"]
    metric = (
        next((sp.name for sp in bench.metric_specs if sp.table and "*" not in sp.name), None)
        or list(bench.metrics(ok))[0]
    )
    score = (
        (bench.metrics(ok).get(metric) or 0.0) * len(ok) / len(records) if ok else 0.0
    )  # errors count as failures here
    calls = sum(n for r in records for role, n in r["calls_by_role"].items() if role in METHOD_ROLES)
    repairs = sum(count_repairs(s["method"]) for r in records for q in r["requests"] for s in q["steps"])
    return {"metric": metric, "score": score, "calls": calls, "repairs": repairs, "errors": len(records) - len(ok)}


def count_repairs(log: Any) -> int:
    """Repairs recorded anywhere in a step's method log (every `repairs` list, kit.reader)."""
    if isinstance(log, dict):
        return sum(len(v) if k == "repairs" and isinstance(v, list) else count_repairs(v) for k, v in log.items())
    if isinstance(log, list):
        return sum(count_repairs(v) for v in log)
    return 0


def ratio(a: float, b: float) -> float:
    return a / b if b else (1.0 if a == b else float("inf"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.robustness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    ap.add_argument(
        "--habits", default=",".join([*HABITS, "mixed"]), help="names in runners.backbones.habits (or module:function)"
    )
    ap.add_argument("--rates", default="1.0,0.3")
    ap.add_argument("--markdown", help="write the table to this file")
    ap.add_argument("--check", action="store_true", help="exit 1 when a rate-1.0 cell misses the thresholds")
    a = ap.parse_args(argv)
    os.environ.setdefault("HARNESS_UPSTREAM_OFFLINE", "1")
    habits = [h if ":" in h else f"runners.backbones.habits:{h}" for h in a.habits.split(",") if h]
    rates = [float(r) for r in a.rates.split(",")]
    math_dir = math_fixture_dir()
    rows, failures = [], []
    t0 = time.perf_counter()
    for bname in a.benchmarks.split(","):
        bench, tasks = load_benchmark(bname, math_dir)
        for method in a.methods.split(","):
            oracle = asyncio.run(run_cell(method, bench, tasks, None, 0.0))
            for habit in habits:
                row: dict[Any, Any] = {
                    "method": method,
                    "benchmark": bname,
                    "habit": habit.split(":")[-1],
                    "metric": oracle["metric"],
                    "oracle": oracle["score"],
                    "oracle_calls": oracle["calls"],
                }
                for rate in rates:
                    r = asyncio.run(run_cell(method, bench, tasks, habit, rate))
                    kept, calls = ratio(r["score"], oracle["score"]), ratio(r["calls"], oracle["calls"])
                    row[rate] = {"kept": kept, "calls": calls, "repairs": r["repairs"], "errors": r["errors"]}
                    if rate == 1.0 and (kept < THRESHOLD_SCORE or calls > THRESHOLD_CALLS):
                        failures.append(f"{method} × {bname} × {row['habit']}: kept {kept:.0%}, calls ×{calls:.2f}")
                rows.append(row)
                cells = "  ".join(
                    f"@{k:g}: kept {v['kept']:>4.0%} calls ×{v['calls']:.2f} repairs {v['repairs']:>3}"
                    for k, v in row.items()
                    if isinstance(k, float)
                )
                print(f"{method:13s} {bname:17s} {row['habit']:18s} {cells}", flush=True)
    print(
        f"\n{len(rows)} rows in {time.perf_counter() - t0:.0f}s; {len(failures)} below the thresholds "
        f"(rate 1.0: score kept ≥ {THRESHOLD_SCORE:.0%}, method-side calls ≤ ×{THRESHOLD_CALLS:.2f})"
    )
    for f in failures:
        print("  BELOW:", f)
    if a.markdown:
        Path(a.markdown).write_text(markdown(rows, rates))
    return 1 if (a.check and failures) else 0


def markdown(rows: list[dict[Any, Any]], rates: list[float]) -> str:
    head = (
        "| method | benchmark | habit | "
        + " | ".join(f"kept @{r:g} | calls @{r:g}" for r in rates)
        + " | repairs @1 |\n"
    )
    head += "|---|---|---|" + "---|---|" * len(rates) + "---|\n"
    lines = []
    for row in rows:
        cells = " | ".join(f"{row[r]['kept']:.0%} | ×{row[r]['calls']:.2f}" for r in rates)
        lines.append(
            f"| {row['method']} | {row['benchmark']} | {row['habit']} | {cells} | "
            f"{row.get(1.0, {}).get('repairs', '')} |"
        )
    return head + "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
