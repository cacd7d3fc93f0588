"""What a cell's numbers are counted over, through `python -m runners.aggregate` on records in the
real format: the episodes the manifest asks for (its task ids × trials 0..trials-1), and per-task
token figures divided by those episodes (not by tasks, which differ as soon as trials > 1)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from runners import aggregate
from tests.runners.paper_helpers import episode, formal_scores, write_cell
from tests.runners.sweep_helpers import metrics_csv

CELL = ("flowstate", "deepseek_v4_flash", "memoryarena_math")  # names the paper reports (a Tok/task column)


def cell_of(root: Path, episodes: list[dict], trials: int) -> Path:
    d = write_cell(root, *CELL, episodes, n_tasks=2)
    m = json.loads((d / "manifest.json").read_text())
    m.update(trials=trials, task_ids=["t0", "t1"])
    (d / "manifest.json").write_text(json.dumps(m))
    return d


def summary_row(root: Path) -> dict[str, str]:
    with open(root / "tables" / "summary.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["Method"].startswith("flowstate ["))


def test_tok_per_task_is_per_episode_when_tasks_ran_several_trials(tmp_path):
    # 2 tasks × 3 trials, 10k agent tokens each: Tok 60k, Tok/task 60k / 6 episodes = 10k (not 60k / 2 tasks)
    eps = [episode("c", t, formal_scores([1]), {"agent": 10_000}, trial=k) for t in ("t0", "t1") for k in range(3)]
    cell_of(tmp_path, eps, trials=3)
    assert aggregate.main([str(tmp_path)]) == 0
    row = summary_row(tmp_path)
    assert row["memoryarena_math:Tok(k)"] == "60.0"
    assert row["memoryarena_math:Tok/task(k)"] == "10.0"


def test_records_outside_the_manifests_tasks_and_trials_are_not_counted(tmp_path):
    wanted = [episode("c", t, formal_scores([1]), {"agent": 1_000}, trial=k) for t in ("t0", "t1") for k in range(2)]
    other_task = episode("c", "t9", formal_scores([0]), {"agent": 1_000_000}, trial=0)  # e.g. an earlier, larger run
    later_trial = episode("c", "t0", formal_scores([0]), {"agent": 1_000_000}, trial=2)  # trials was 3 before
    cell_of(tmp_path, [*wanted, other_task, later_trial], trials=2)
    assert aggregate.main([str(tmp_path)]) == 0
    m = metrics_csv(tmp_path / "tables" / "metrics.csv")
    assert m[(*CELL[::2], "SR")] == 100.0  # the two failed extra records are not in it
    assert m[(*CELL[::2], "tokens_agent")] == 4_000
    with open(tmp_path / "tables" / "metrics.csv", newline="") as f:
        assert {r["n_episodes"] for r in csv.DictReader(f)} == {"4"}
