"""The experiment's tables are read from `tables/.cache.json` when the records, the code and the
options are those they were built from, and rebuilt when any of them changes."""

from __future__ import annotations

import json

import pytest

from runners.analysis import table_cache, tables
from runners.analysis.tables import aggregate_dir

BENCH = {
    "name": "memoryarena_math",
    "_target_": "benchmarks.memoryarena.formal.FormalReasoning",
    "params": {"config": "formal_reasoning_math", "data_dir": "fixtures"},
}


def write_cell(root, name, method, outcomes, sweep="s1"):
    d = root / name
    d.mkdir(parents=True)
    cfg = {"method": {"name": method}, "backbone": {"name": "deepseek_v4_flash"}, "benchmark": BENCH}
    runs = [{"sweep": {"id": sweep, "started_at": f"2026-01-01T00:00:0{sweep[-1]}", "overrides": [f"run={sweep}"]}}]
    (d / "manifest.json").write_text(
        json.dumps({"config": cfg, "scripted": False, "n_tasks": len(outcomes), "trials": 1, "runs": runs})
    )
    with open(d / "episodes.jsonl", "w") as f:
        for i, ok in enumerate(outcomes):
            f.write(
                json.dumps(
                    {
                        "task_id": f"t{i}",
                        "trial": 0,
                        "status": "ok",
                        "scores": {"subtask_correct": [ok, 1], "success": ok},
                    }
                )
                + "\n"
            )
    return d


@pytest.fixture
def experiment(tmp_path):
    write_cell(tmp_path, "full_context__x__memoryarena_math__a", "full_context", [1, 0, 1, 0, 1, 0])
    write_cell(tmp_path, "flowstate__x__memoryarena_math__b", "flowstate", [1, 1, 1, 0, 1, 1])
    return tmp_path


def sr(root, method):
    rows = (root / "tables" / "metrics.csv").read_text().splitlines()
    return next(r for r in rows if r.startswith(f"{method},") and ",SR," in r)


def built(monkeypatch):
    """Counts how often the tables are computed from the records (collect runs)."""
    calls = []
    real = tables.collect

    def counting(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(tables, "collect", counting)
    return calls


def test_unchanged_experiment_reads_the_cache(experiment, monkeypatch, capsys):
    first = aggregate_dir(experiment, with_paper=False)
    printed = capsys.readouterr().out
    files = {f: (experiment / "tables" / f).read_text() for f in table_cache.TABLE_FILES}
    calls = built(monkeypatch)
    second = aggregate_dir(experiment, with_paper=False)
    assert calls == [] and second == first and capsys.readouterr().out == printed
    assert {f: (experiment / "tables" / f).read_text() for f in table_cache.TABLE_FILES} == files
    # the filters still print the matching cells from the records
    aggregate_dir(experiment, with_paper=False, methods={"flowstate"})
    assert len(calls) == 1 and "flowstate" in capsys.readouterr().out


def test_a_resume_that_only_adds_a_run_keeps_the_cache_and_lists_the_new_sweep(experiment, monkeypatch):
    aggregate_dir(experiment, with_paper=False)
    m = experiment / "flowstate__x__memoryarena_math__b" / "manifest.json"
    data = json.loads(m.read_text())
    data["runs"].append({"sweep": {"id": "s2", "started_at": "2026-01-01T00:00:02", "overrides": ["run=s2"]}})
    m.write_text(json.dumps(data))
    calls = built(monkeypatch)
    aggregate_dir(experiment, with_paper=False)
    md = (experiment / "tables" / "summary.md").read_text()
    assert calls == [] and "`run=s2`: flowstate__x__memoryarena_math__b" in md and "`run=s1`: full_context" in md


def test_changed_records_rebuild_the_tables(experiment, monkeypatch):
    aggregate_dir(experiment, with_paper=False)
    assert ",83.33" in sr(experiment, "flowstate").replace("83.33333333333333", "83.33")
    with open(experiment / "flowstate__x__memoryarena_math__b" / "episodes.jsonl", "r+") as f:
        lines = f.read().replace('"success": 1}', '"success": 0}')
        f.seek(0)
        f.write(lines)
    calls = built(monkeypatch)
    aggregate_dir(experiment, with_paper=False)
    assert calls and ",0.0," in sr(experiment, "flowstate")


def test_changed_code_or_options_rebuild_the_tables(experiment, monkeypatch):
    aggregate_dir(experiment, with_paper=False)
    calls = built(monkeypatch)
    monkeypatch.setattr(table_cache, "code_fingerprint", lambda: "another-revision")
    aggregate_dir(experiment, with_paper=False)
    assert len(calls) == 1
    aggregate_dir(experiment, with_paper=False)
    assert len(calls) == 1  # cached again under the new code
    aggregate_dir(experiment, with_paper=False, resamples=0)
    assert len(calls) == 2 and ",," in sr(experiment, "flowstate")  # no interval without resamples
    aggregate_dir(experiment, with_paper=False, reference="flowstate")
    assert len(calls) == 3


def test_a_missing_table_file_or_damaged_cache_rebuilds(experiment, monkeypatch):
    aggregate_dir(experiment, with_paper=False)
    calls = built(monkeypatch)
    (experiment / "tables" / "summary.tex").unlink()
    aggregate_dir(experiment, with_paper=False)
    assert len(calls) == 1 and (experiment / "tables" / "summary.tex").exists()
    (experiment / "tables" / ".cache.json").write_text("{")
    aggregate_dir(experiment, with_paper=False)
    assert len(calls) == 2
