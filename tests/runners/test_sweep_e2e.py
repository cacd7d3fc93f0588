"""The default offline sweep end to end, then aggregation, against values computed by hand
from the fixture (benchmarks/memoryarena/fixtures) and the scripted backbone's fault plan."""

import json

import pytest

from runners.aggregate import main as aggregate_main
from tests.runners.sweep_helpers import cell_records, metrics_csv, record_files, run_sweep

WRONG = "[formal_reasoning_math-0/q2,formal_reasoning_math-2/q4,formal_reasoning_phys-1/q1]"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("res")
    p = run_sweep(out, f"backbone.scripted.wrong_requests={WRONG}")
    assert p.returncode == 0, p.stderr
    return out, p


def test_default_sweep_table_matches_hand_computed(demo):
    out, p = demo
    m = metrics_csv(out / "offline_demo" / "tables" / "metrics.csv")
    methods = {k[0] for k in m}
    assert "full_context" in methods
    for method in methods:
        # math: [1,0,1] [1,1] [1,1,1,0] → SR 2/3, PS mean(2/3, 1, 3/4)
        assert m[(method, "memoryarena_math", "SR")] == pytest.approx(200 / 3)
        assert m[(method, "memoryarena_math", "PS")] == pytest.approx(100 * (2 / 3 + 1 + 3 / 4) / 3)
        # phys: [1,1] [0,1,1] → SR 1, PS mean(1, 2/3)
        assert m[(method, "memoryarena_phys", "SR")] == pytest.approx(100.0)
        assert m[(method, "memoryarena_phys", "PS")] == pytest.approx(100 * (1 + 2 / 3) / 2)
        assert m[(method, "memoryarena_math", "Tok")] > 0
    md = (out / "offline_demo" / "tables" / "summary.md").read_text()
    assert "SCRIPTED" in md and "full_context [scripted]" in md
    # depth table: Acc_k = 100, 66.7, 100, 0 → nAUC = (83.33 + 83.33 + 50) / 3
    assert "72.22" in md
    assert (out / "offline_demo" / "tables" / "summary.tex").read_text().startswith("\\begin{table}")
    assert "Completeness" in p.stdout and "0 infra errors" in p.stdout


def test_records_log_tokens_by_role_and_manifest_is_labelled(demo):
    out, _ = demo
    cell = next((out / "offline_demo").glob("full_context__scripted__memoryarena_math__*"))
    recs = cell_records(cell)
    assert len(recs) == 3 and all(r["status"] == "ok" and r["scripted"] for r in recs)
    assert all(set(r["usage_by_role"]) == {"agent", "judge"} for r in recs)
    assert all(r["usage_by_role"]["agent"]["source"] == "estimated" for r in recs)
    manifest = json.loads((cell / "manifest.json").read_text())
    assert manifest["scripted"] and "SCRIPTED" in manifest["label"]
    assert manifest["config"]["benchmark"]["params"]["data_dir"] == "fixtures"
    assert manifest["runs"][0]["versions"]["python"]
    assert (cell / "DONE").exists()


def test_rerun_makes_zero_calls_and_says_so(demo):
    out, _ = demo
    p = run_sweep(out, f"backbone.scripted.wrong_requests={WRONG}")
    assert p.returncode == 0
    assert "0 model calls made" in p.stdout and "10 from earlier runs" in p.stdout  # 2 methods × 5 tasks


def test_changed_config_is_a_new_cell(demo, tmp_path):
    out, _ = demo
    before = {d.name for d in (out / "offline_demo").iterdir()}
    p = run_sweep(
        out,
        f"backbone.scripted.wrong_requests={WRONG}",
        "method=full_context",
        "method.params.max_resamples=0",
        "benchmark=memoryarena_phys",
    )
    assert p.returncode == 0, p.stderr
    after = {d.name for d in (out / "offline_demo").iterdir()}
    assert len(after - before) == 1


def test_aggregate_cli_with_reference(demo, capsys):
    out, _ = demo
    assert aggregate_main([str(out / "offline_demo"), "--reference", "full_context"]) == 0
    assert "memoryarena_math:SR" in capsys.readouterr().out
    assert aggregate_main([str(out / "missing")]) == 2


def test_bad_config_fails_before_any_work(tmp_path):
    p = run_sweep(tmp_path, "method=flowstat")
    assert p.returncode != 0 and "full_context" in p.stderr + p.stdout  # names the valid choices
    p = run_sweep(tmp_path, "runner.concurrency=0")
    assert p.returncode == 2 and "runner.concurrency" in p.stderr
    p = run_sweep(tmp_path, "+backbone.temprature=0.1")
    assert p.returncode == 2 and "temprature" in p.stderr
    assert not record_files(tmp_path)


def test_multirun_with_the_basic_launcher_is_refused_and_names_the_grid_that_runs_it(tmp_path):
    """`-m` runs as one grid by default (test_sweep_multirun.py); Hydra's basic launcher, chosen
    explicitly, would run each job as its own sweep one after another: nothing runs, and the
    command printed instead runs the same cells in one sweep."""
    import shlex
    import subprocess
    import sys

    from tests.runners.sweep_helpers import REPO

    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "runners.sweep",
            "-m",
            "hydra/launcher=basic",
            f"runner.output_dir={tmp_path}",
            "runner.display=plain",
            "method=full_context,flowstate",
            "benchmark=memoryarena_phys",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and not record_files(tmp_path)
    assert p.stderr.count("error:") == 1 and "hydra/launcher=slurm" in p.stderr  # once, not once per job
    command = next(line for line in p.stderr.splitlines() if line.startswith("  python -m runners.sweep "))
    args = shlex.split(command)[3:]
    assert "++experiment.grid.method=[full_context,flowstate]" in args and "-m" not in args
    q = subprocess.run(
        [sys.executable, "-m", "runners.sweep", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert q.returncode == 0, q.stderr
    exp = tmp_path / "full_context+flowstate"  # a custom grid without experiment.name: its own folder, not the demo's
    assert not (tmp_path / "offline_demo" / "tables").exists()
    dirs = [d for d in exp.iterdir() if d.name != "tables" and not d.name.startswith(".")]
    assert (
        sorted(d.name.split("__")[0] for d in dirs) == ["flowstate", "full_context"]
        and q.stdout.count("Completeness") == 1
    )  # one sweep, one report
    assert all("memoryarena_phys" in d.name for d in dirs)
    assert aggregate_main([str(exp)]) == 0


def test_a_multirun_command_line_as_one_grid_sweep():
    from runners.sweep import as_grid

    args, other = as_grid(
        [
            "-m",
            "method=full_context,flowstate",
            "benchmark=choice(memoryarena_math,memoryarena_phys)",
            "backbone=scripted",
            "++experiment.grid.backbone=[scripted]",
            "method.params.max_resamples=0,1",
            "runner.trials=2",
        ]
    )
    assert args == [
        "++experiment.grid.method=[full_context,flowstate]",
        "++experiment.grid.benchmark=[memoryarena_math,memoryarena_phys]",
        "backbone=scripted",
        "++experiment.grid.backbone=[scripted]",
        "method.params.max_resamples=<one of 0,1>",
        "runner.trials=2",
    ]
    assert other == ["method.params.max_resamples"]
