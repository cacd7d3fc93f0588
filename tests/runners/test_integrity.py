"""Nothing lost, nothing mixed: aggregation counts exactly what the cell's manifest asks for,
cells are named by the config values that differ, every episode carries the code fingerprint,
every job leaves a table of the whole experiment, damaged manifests are handled loudly."""

import json
import shutil

import pytest

from runners.aggregate import main as aggregate_main
from runners.analysis.cells import collect, summarize
from runners.records.store import CellStore, code_fingerprint
from tests.runners.sweep_helpers import cell_records, decompact, record_files, run_sweep

ONE = (
    "method=full_context",
    "benchmark=toy",
    "runner.limit=3",
    "experiment.name=exp",
)  # the toy: the cheapest end-to-end run


@pytest.fixture(scope="module")
def two_trials(tmp_path_factory):
    """full_context on 3 toy tasks with trials=2 (6 episodes), then both methods' tables."""
    out = tmp_path_factory.mktemp("two")
    p = run_sweep(out, *ONE, "runner.trials=2")
    assert p.returncode == 0, p.stderr
    return out / "exp"


def cell_of(root):
    return next(d for d in root.iterdir() if d.name.startswith("full_context__"))


def copy_cell(src_root, tmp_path):
    """A copy of the finished experiment, its cell's records in the plain file (to edit lines)."""
    dst = tmp_path / "exp"
    shutil.copytree(src_root, dst)
    decompact(cell_of(dst))
    return dst, cell_of(dst)


def set_manifest(cell, **kw):
    m = json.loads((cell / "manifest.json").read_text())
    m.update(kw)
    (cell / "manifest.json").write_text(json.dumps(m))
    return m


# ----------------------------------------------------------------------------- defect 1
def test_fewer_trials_counts_only_the_manifests_trials(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    set_manifest(cell, trials=1)
    s = summarize(cell)
    assert (s.n_episodes, s.n_tasks * s.trials) == (3, 3) and not s.partial
    assert s.extra_on_disk == 3
    aggregate_main([str(root)])
    md = (root / "tables" / "summary.md").read_text()
    assert "3/3 episodes" in md and "6/3" not in md and "3 more on disk" in md


def test_smaller_limit_counts_only_the_manifests_tasks(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    m = set_manifest(cell, n_tasks=1)
    m = set_manifest(cell, task_ids=m["task_ids"][:1])
    s = summarize(cell)
    assert (s.n_episodes, s.n_tasks * s.trials) == (2, 2) and s.extra_on_disk == 4
    # the summary keeps the manifest for the marks, without the ids it has counted (8 MB at 100,000 tasks)
    assert "task_ids" not in s.manifest and s.manifest["trials"] == m["trials"]


def test_a_smaller_limit_on_a_finished_experiment_keeps_its_tables_and_says_so(two_trials, tmp_path):
    # `runner.limit=1` after a finished run used to shrink the tables to the subset (the demo's signs flipped)
    root, cell = copy_cell(two_trials, tmp_path)
    before = (root / "tables" / "metrics.csv").read_text()
    p = run_sweep(tmp_path, *ONE, "runner.trials=2", "runner.limit=1")
    assert p.returncode == 0, p.stderr
    summary = (root / "tables" / "summary.md").read_text()
    assert "Nothing to run" in p.stdout and "6/6 episodes" in summary and "6/2" not in summary
    (note,) = [ln for ln in p.stdout.splitlines() if ln.startswith("Note: this run asked for a subset")]
    assert "(1 task(s) × 2 trial(s)) of 1 cell(s) that had asked for more (3 × 2)" in note
    assert "keep counting the larger set" in note
    assert (root / "tables" / "metrics.csv").read_text() == before  # the experiment's tables, unchanged
    assert len(json.loads((cell / "manifest.json").read_text())["task_ids"]) == 3
    q = run_sweep(tmp_path, *ONE, "runner.trials=1")  # fewer trials: the same
    assert q.returncode == 0 and "of 1 cell(s) that had asked for more (3 × 2)" in q.stdout
    assert (root / "tables" / "metrics.csv").read_text() == before


@pytest.mark.parametrize(
    "bad",
    [
        {"usage_by_role": {"agent": 5}},
        {"usage_by_role": []},
        {"scores": "high"},
        {"usage_by_role": {"agent": {"prompt_tokens": "many"}}},
        {"status": 3},
    ],
)
def test_wrong_field_types_are_set_aside_with_a_note(two_trials, tmp_path, bad, capsys):
    root, cell = copy_cell(two_trials, tmp_path)
    path = cell / "episodes.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first.update(bad)
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    s = summarize(cell)  # never a raw TypeError
    assert s.n_episodes == 5 and s.set_aside and "field types" in s.set_aside[0]
    assert aggregate_main([str(root)]) == 0
    assert "set aside" in (root / "tables" / "summary.md").read_text()


# ----------------------------------------------------------------------------- defect 2
def test_cells_are_named_by_the_values_that_differ(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    for n in (1, 2):
        other = root / cell.name.replace(cell.name.rsplit("__", 1)[1], f"{n:010d}")
        shutil.copytree(cell, other)
        m = json.loads((other / "manifest.json").read_text())
        m["config"]["method"]["params"]["max_resamples"] = n
        (other / "manifest.json").write_text(json.dumps(m))
    shutil.rmtree(cell)
    names = sorted(c.method for c in collect(root))
    assert names == ["full_context[max_resamples=1]", "full_context[max_resamples=2]"]


# ----------------------------------------------------------------------------- defect 3
def test_every_episode_records_the_code_fingerprint(two_trials):
    recs = cell_records(cell_of(two_trials))
    assert len(recs) == 6 and {r["code"] for r in recs} == {code_fingerprint()} and code_fingerprint()


def test_fingerprint_changes_with_an_uncommitted_edit(tmp_path):
    import subprocess

    repo = tmp_path / "r"
    (repo / "runners").mkdir(parents=True)
    (repo / "runners" / "m.py").write_text("x = 1\n")

    def git(*a):
        return subprocess.run(
            ["git", "-c", "user.email=a@b", "-c", "user.name=a", *a],
            cwd=repo,
            check=True,  # noqa: E731
            capture_output=True,
        )

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "c")
    clean = code_fingerprint(repo, fresh=True)
    (repo / "runners" / "m.py").write_text("x = 2\n")
    edited = code_fingerprint(repo, fresh=True)
    (repo / "runners" / "new.py").write_text("y = 1\n")
    untracked = code_fingerprint(repo, fresh=True)
    assert len({clean, edited, untracked}) == 3 and "+" not in clean and "+" in edited


def test_resume_under_other_code_says_so_and_table_marks_mixed(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    path = cell / "episodes.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["code"] = "0000000+deadbeef"
    path.write_text("\n".join([json.dumps(first)] + lines[1:-1]) + "\n")  # one episode left to run
    p = run_sweep(tmp_path, *ONE, "runner.trials=2")
    assert p.returncode == 0, p.stderr
    assert "different code" in p.stderr and "0000000+deadbeef" in p.stderr and "runner.fresh=true" in p.stderr
    assert "[mixed code]" in (root / "tables" / "summary.md").read_text()


def test_fresh_moves_old_results_aside(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    old = (cell / "episodes.jsonl").read_bytes()
    p = run_sweep(tmp_path, *ONE, "runner.trials=2", "runner.fresh=true")
    assert p.returncode == 0, p.stderr
    assert "0 already finished" in p.stdout and "moved aside" in p.stdout + p.stderr
    kept = list((root / ".superseded").rglob("episodes.jsonl"))
    assert len(kept) == 1 and kept[0].read_bytes() == old
    assert len(cell_records(cell)) == 6


# ----------------------------------------------------------------------------- defect 4
def test_every_job_leaves_a_table_of_the_whole_experiment_and_filters(two_trials, tmp_path, capsys):
    root, cell = copy_cell(two_trials, tmp_path)
    p = run_sweep(tmp_path, "method=flowstate", *ONE[1:], "runner.trials=2")
    assert p.returncode == 0, p.stderr
    md = (root / "tables" / "summary.md").read_text()
    assert "full_context [scripted]" in md and "flowstate [scripted]" in md
    assert not list((root / "tables").glob("*.tmp*"))  # written via temp file + rename
    assert aggregate_main([str(root), "--method", "flowstate"]) == 0
    out = capsys.readouterr().out
    assert "flowstate [scripted]" in out and "full_context [scripted]" not in out
    assert "Sweeps" in out and "method=flowstate" in out  # which sweep the cells came from
    assert aggregate_main([str(root), "--cells", cell.name]) == 0
    out = capsys.readouterr().out
    assert "full_context [scripted]" in out and "flowstate [scripted]" not in out
    assert aggregate_main([str(root), "--benchmark", "tau_airline"]) == 2
    assert "benchmarks toy" in capsys.readouterr().err  # names what there is


# ----------------------------------------------------------------------------- defect 5
def test_unknown_reference_fails_naming_the_choices(two_trials, capsys):
    assert aggregate_main([str(two_trials), "--reference", "fullcontext"]) == 2
    err = capsys.readouterr().err
    assert "fullcontext" in err and "full_context" in err and "flowstate" in err


def test_unknown_reference_in_the_sweep_fails_before_any_work(tmp_path):
    p = run_sweep(tmp_path, *ONE, "runner.reference_method=fullcontext")
    assert p.returncode == 2 and "full_context" in p.stderr
    assert not record_files(tmp_path)


def test_unknown_benchmark_param_fails_before_any_work(tmp_path):
    p = run_sweep(tmp_path, *ONE, "+benchmark.params.max_stepz=5")
    assert p.returncode == 2 and "max_stepz" in p.stderr
    assert not record_files(tmp_path)


# ----------------------------------------------------------------------------- defect 9
def test_missing_manifest_is_reported_not_skipped(two_trials, tmp_path, capsys):
    root, cell = copy_cell(two_trials, tmp_path)
    (cell / "manifest.json").unlink()
    aggregate_main([str(root)])
    cap = capsys.readouterr()
    assert cell.name in cap.err and "manifest.json" in cap.err and "re-run" in cap.err


def test_truncated_manifest_is_repaired_loudly_keeping_the_original(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    path = tmp_path / "c" / "manifest.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert any("manifest.json was damaged" in w for w in s.warnings)
    kept = list((tmp_path / "c").glob("manifest.damaged*"))
    assert len(kept) == 1 and kept[0].read_text() == text[: len(text) // 2]
    m = json.loads(path.read_text())
    assert m["runs"][0].get("history_lost") and len(m["runs"]) == 2


def test_manifest_and_done_are_written_atomically(tmp_path, monkeypatch):
    """A crash during the write leaves the previous manifest whole (never a truncated file)."""
    import runners.records.store as store

    s = CellStore(tmp_path, "c").open({"config": {"a": 1}})
    s.close()
    before = (tmp_path / "c" / "manifest.json").read_text()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store.os, "fsync", boom)
    with pytest.raises(OSError):
        CellStore(tmp_path, "c").open({"config": {"a": 2}})
    assert (tmp_path / "c" / "manifest.json").read_text() == before
    assert not list((tmp_path / "c").glob("*.tmp*"))


def test_tables_do_not_depend_on_the_order_episodes_finished(two_trials, tmp_path):
    root, cell = copy_cell(two_trials, tmp_path)
    path = cell / "episodes.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    import itertools

    for r, sc in zip(recs, ([1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 0], [1, 0, 1], [0, 0, 1])):  # c_i/n_i in thirds:
        r["scores"]["subtask_correct"] = sc  # their float sum depends on the order
    seen = set()
    for order in itertools.islice(itertools.permutations(range(6)), 0, 720, 37):
        path.write_text("\n".join(json.dumps(recs[i]) for i in order) + "\n")
        seen.add(json.dumps(summarize(cell).metrics, sort_keys=True))
    assert len(seen) == 1  # exactly the same numbers, not approximately


def test_the_subset_note_names_each_cells_larger_set(tmp_path):
    # the demo's cells hold 3 and 2 tasks: the note named the first cell's 3 for both
    from runners.sweep import keep_larger_asks

    before = {}
    for name, ids in (("math", ["m0", "m1", "m2"]), ("phys", ["p0", "p1"])):
        d = tmp_path / name
        d.mkdir()
        before[d] = {"task_ids": ids, "n_tasks": len(ids), "trials": 1}
        (d / "manifest.json").write_text(json.dumps({"task_ids": ids[:1], "n_tasks": 1, "trials": 1}))
    note = keep_larger_asks(before, tmp_path)
    assert note is not None and "(1 task(s) × 1 trial(s)) of 2 cell(s) that had asked for more (3 × 1, 2 × 1)" in note
    assert json.loads((tmp_path / "phys" / "manifest.json").read_text())["task_ids"] == ["p0", "p1"]
