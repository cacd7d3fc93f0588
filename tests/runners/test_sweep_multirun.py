"""Hydra's `-m` runs the whole sweep as one grid in one scheduler (the project's launcher,
hydra_plugins/harness_grid_launcher, the default for `-m`): one process, one completeness
report, one table; a custom grid without `experiment.name` gets its own experiment folder."""

import json
import subprocess
import sys

from tests.runners.sweep_helpers import REPO, records_under


def _sweep(tmp_path, *args):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "runners.sweep",
            *args,
            f"runner.output_dir={tmp_path}",
            "runner.display=plain",
            "runner.limit=1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_multirun_two_methods_by_two_benchmarks_is_one_scheduler(tmp_path):
    p = _sweep(tmp_path, "-m", "method=full_context,flowstate", "benchmark=memoryarena_math,memoryarena_phys")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert p.stdout.count("Completeness") == 1 and p.stdout.count("Experiment '") == 1  # one sweep, one report
    assert "4/4 episodes done" in p.stdout and "[cell done 4/4]" in p.stdout
    assert sorted(d.name for d in tmp_path.iterdir()) == ["full_context+flowstate__memoryarena_math+memoryarena_phys"]
    exp = tmp_path / "full_context+flowstate__memoryarena_math+memoryarena_phys"
    cells = sorted(d for d in exp.iterdir() if d.is_dir() and "__" in d.name and not d.name.startswith("."))
    assert sorted((d.name.split("__")[0], d.name.split("__")[2]) for d in cells) == [
        ("flowstate", "memoryarena_math"),
        ("flowstate", "memoryarena_phys"),
        ("full_context", "memoryarena_math"),
        ("full_context", "memoryarena_phys"),
    ]
    sweeps = {json.loads((d / "manifest.json").read_text())["runs"][-1]["sweep"]["id"] for d in cells}
    assert len(sweeps) == 1  # one process (the sweep id carries the pid) ran every cell
    assert len(records_under(exp)) == 4
    assert (exp / ".multirun" / "multirun.yaml").exists()  # Hydra's sweep file moved into the experiment
    assert not (tmp_path / "offline_demo").exists()
    summary = (exp / "tables" / "summary.md").read_text()
    assert (
        "method=full_context,flowstate benchmark=memoryarena_math,memoryarena_phys" in summary
    )  # the command as typed
    # the same command again resumes: nothing to run
    q = _sweep(tmp_path, "-m", "method=full_context,flowstate", "benchmark=memoryarena_math,memoryarena_phys")
    assert q.returncode == 0 and "Nothing to run" in q.stdout and q.stdout.count("Completeness") == 1


def test_multirun_with_a_named_experiment_keeps_the_name_and_a_bad_job_is_a_config_error(tmp_path):
    p = _sweep(tmp_path, "-m", "method=full_context,flowstate", "benchmark=memoryarena_phys", "experiment.name=mine")
    assert p.returncode == 0, p.stderr
    assert sorted(d.name for d in tmp_path.iterdir()) == ["mine"] and p.stdout.count("Completeness") == 1
    q = _sweep(tmp_path, "-m", "method=full_context,flowstate", "runner.concurrency=0")
    assert q.returncode == 2 and "runner.concurrency" in q.stderr and q.stderr.count("error:") == 1


def test_multirun_over_a_runner_key_is_refused_before_work_with_one_command_per_value(tmp_path):
    # runner.trials is not in the cell key: the two jobs name the same cells, and one value used to be dropped
    p = _sweep(tmp_path, "-m", "method=full_context,flowstate", "runner.trials=1,3")
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert "runner.trials=1,3" in p.stderr and "would run the same cells" in p.stderr
    assert "runner.trials=1 experiment.name=offline_demo_trials1" in p.stderr
    assert "runner.trials=3 experiment.name=offline_demo_trials3" in p.stderr
    assert "Completeness" not in p.stdout and records_under(tmp_path) == []  # nothing ran
    q = _sweep(tmp_path, "-m", "benchmark.params.limit=1,2", "method=full_context")  # a runtime benchmark param too
    assert q.returncode == 2 and "benchmark.params.limit=1,2" in q.stderr and records_under(tmp_path) == []


def test_multirun_over_a_benchmark_param_runs_every_value_as_its_own_cell(tmp_path):
    p = _sweep(
        tmp_path,
        "-m",
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.max_tool_iterations=2,3",
        "experiment.name=iters",
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert p.stdout.count("Completeness") == 1 and "2/2 episodes done" in p.stdout
    cells = [json.loads((d / "manifest.json").read_text()) for d in (tmp_path / "iters").iterdir() if "__" in d.name]
    assert sorted(c["config"]["benchmark"]["params"]["max_tool_iterations"] for c in cells) == [2, 3]
    summary = (tmp_path / "iters" / "tables" / "summary.md").read_text()
    assert "max_tool_iterations=2" in summary and "max_tool_iterations=3" in summary  # the table names both cells


def test_without_the_reference_method_the_delta_is_against_the_grids_first_method(tmp_path):
    p = _sweep(tmp_path, "-m", "method=flowstate,bm25", "benchmark=memoryarena_math", "experiment.name=two")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    summary = (tmp_path / "two" / "tables" / "summary.md").read_text()
    title = summary.splitlines()[0]
    assert title.startswith("### ") and "Δ vs flowstate, the grid's first method (full_context" in title
    assert "|   Δ vs flowstate | scripted |" in summary  # the Δ row against it
