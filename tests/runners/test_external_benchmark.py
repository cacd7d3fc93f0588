"""A benchmark added from outside the project (its package on PYTHONPATH, its YAML under Hydra's
--config-dir) gets the tables' treatment of its declared metrics with no edit to the harness: a
95% interval for its rate, a Δ row in pp with the paired interval and the sign test, its display
name in the header, its count without an interval."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap

from tests.runners.sweep_helpers import REPO

PACKAGE = '''
from runners.api import (Benchmark, Decision, Environment, EpisodeContext, MetricSpec, Reply, Request, RequestOutcome,
                         TaskSpec, TaskView)


class QuizEnv(Environment):
    """One question per task: "say <word>". The oracle is right on even tasks only, so the rate varies."""

    def __init__(self, task):
        self.task, self.served, self.answer = task, False, None

    def view(self):
        return TaskView(task_id=self.task.task_id, benchmark="quiz", policy="Answer with one word.")

    async def next_request(self):
        if self.served:
            return None
        self.served = True
        self.request = Request(index=0, request_id=self.task.task_id + "/q1", text="Say " + self.task.payload["word"])
        return self.request

    async def act(self, decision):
        self.answer = decision.message
        return Reply(request_done=decision.message is not None)

    async def end_request(self, *, truncated, steps):
        return RequestOutcome(request=self.request, final_response=self.answer, steps=steps, truncated=truncated)

    async def score_task(self):
        return {"right": self.answer == self.task.payload["word"]}

    def reference(self, role, messages):
        return Decision(message=self.task.payload["word"] if self.task.payload["i"] % 2 == 0 else "wrong")


class Quiz(Benchmark):
    metric_specs = (MetricSpec(name="accuracy", kind="rate", label="quiz accuracy", table=True),
                    MetricSpec(name="answered", kind="count", table=True))
    outcome = "right"

    def load_tasks(self):
        return [
            TaskSpec(task_id=f"quiz-{i}", payload={"word": w, "i": i})
            for i, w in enumerate(["red", "blue", "green", "gold", "grey", "pink"])
        ]

    def make_env(self, task, ctx):
        return QuizEnv(task)

    def metrics(self, episodes):
        right = [bool(e["scores"]["right"]) for e in episodes]
        return {"accuracy": 100.0 * sum(right) / len(right) if right else None, "answered": float(len(right))}
'''


def quiz_sweep(tmp_path, methods="[full_context,bm25]"):
    """The quiz benchmark's package under tmp_path/src (on PYTHONPATH), its YAML under --config-dir, swept
    into tmp_path/results/ext; (the finished process, results dir, the environment with the package)."""
    pkg = tmp_path / "src" / "quizbench"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(PACKAGE))
    conf = tmp_path / "conf" / "benchmark"
    conf.mkdir(parents=True)
    (conf / "quiz.yaml").write_text("name: quiz\n_target_: quizbench.Quiz\nparams:\n  limit: null\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "src"), str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    out = tmp_path / "results"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "runners.sweep",
            f"--config-dir={tmp_path / 'conf'}",
            f"runner.output_dir={out}",
            "runner.display=plain",
            "benchmark=quiz",
            "experiment.name=ext",
            f"experiment.grid.method={methods}",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return p, out, env


def test_outside_benchmark_gets_intervals_and_deltas(tmp_path):
    p, out, _ = quiz_sweep(tmp_path)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    md = (out / "ext" / "tables" / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Method"))
    assert "quiz:quiz accuracy" in header and "quiz:answered" in header  # the declared display name
    row = next(line for line in md.splitlines() if line.startswith("| bm25"))
    assert "| 50.00 [" in row  # the rate's 95% task-bootstrap interval
    assert "| 6 |" in row  # a count: no interval
    delta = next(line for line in md.splitlines() if line.startswith("|   Δ vs full_context"))
    assert "+0.00pp [+0.0, +0.0] p=1" in delta  # pp, the paired interval, the exact sign test
    with open(out / "ext" / "tables" / "metrics.csv", newline="") as f:
        rows = {(r["method"], r["metric"]): r for r in csv.DictReader(f)}
    acc = rows[("bm25", "accuracy")]
    assert float(acc["value"]) == 50.0 and float(acc["ci_low"]) < 50.0 < float(acc["ci_high"])
    assert rows[("bm25", "delta_accuracy")]["p_value"] == "1.0"
    assert rows[("bm25", "answered")]["ci_low"] == ""


def test_aggregate_without_the_outside_package_names_it_and_serves_no_cached_table(tmp_path):
    """`runners.aggregate` where the benchmark's package is not on the path: the error names the module and
    says to put its package on PYTHONPATH (re-running the sweep would not help), with the sweep's cached
    tables present and without them; with the package on the path the same command works."""
    p, out, env = quiz_sweep(tmp_path, "[full_context]")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    tables = out / "ext" / "tables"
    assert (tables / ".cache.json").is_file()  # the sweep's end cached the tables
    bare = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}

    def aggregate(environ):
        return subprocess.run(
            [sys.executable, "-m", "runners.aggregate", str(out / "ext")],
            cwd=REPO,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )

    cached = aggregate(bare)
    assert cached.returncode == 2 and "| full_context" not in cached.stdout  # no table served from the cache
    assert "module 'quizbench' is not on the path" in cached.stderr and "PYTHONPATH" in cached.stderr
    assert "not served from the cache" in cached.stderr and "re-run the sweep for this cell" not in cached.stderr
    (tables / ".cache.json").unlink()
    rebuilt = aggregate(bare)
    assert rebuilt.returncode == 2 and "module 'quizbench' is not on the path" in rebuilt.stderr
    assert "PYTHONPATH" in rebuilt.stderr and "re-run the sweep for this cell" not in rebuilt.stderr
    ok = aggregate(env)
    assert ok.returncode == 0 and "| full_context" in ok.stdout, ok.stderr[-2000:]
