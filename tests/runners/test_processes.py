"""`runner.processes=N` (runners/procs.py): the sweep as N worker processes, read as one cell.

Against one process: the same records (each episode once) and the same tables; a resume with
another number of processes runs nothing twice; the endpoint's in-flight bound holds over all
workers (a real HTTP server on 127.0.0.1 counts the requests it holds at once); SIGTERM to the
coordinator and SIGKILL of it leave no worker behind and lose nothing."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from runners.interrupts import default_sigint
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import (
    REPO,
    cell_records,
    metrics_csv,
    record_files,
    records_under,
    run_sweep,
    sweep_cmd,
)

ARGS = (
    "backbone.scripted.latency_s=0.02",
    "runner.trials=2",
    "runner.concurrency=4",
    "backbone.scripted.wrong_requests=[formal_reasoning_math-0/q2,formal_reasoning_phys-1/q1]",
)
N_EPISODES = 2 * (3 + 2) * 2  # 2 methods × (math 3 + phys 2 tasks) × 2 trials


def keys(root: Path) -> collections.Counter:
    return collections.Counter(
        (f.parent.name if not f.parent.name.startswith("shard-") else f.parent.parent.name, r["task_id"], r["trial"])
        for f in record_files(root)
        for r in cell_records(f.parent)
        if r["status"] == "ok"
    )


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    p = run_sweep(out, *ARGS, "runner.processes=1")
    assert p.returncode == 0, p.stderr
    return out


@pytest.mark.parametrize(
    "resume_with",
    # by default a resume with a number of processes whose task ranges differ from the stored shards';
    # the long profile adds one process (a sweep each)
    [pytest.param((3,), id="3"), pytest.param((1, 3), id="1_and_3", marks=pytest.mark.long)],
)
def test_two_processes_give_one_process_results_and_resume_with_any_number(one_process, tmp_path, resume_with):
    p = run_sweep(tmp_path, *ARGS, "runner.processes=2")
    assert p.returncode == 0, p.stderr + p.stdout
    assert "2 worker processes" in p.stdout
    assert f"{N_EPISODES}/{N_EPISODES} episodes done (0 from earlier runs, {N_EPISODES} now)" in p.stdout
    exp = tmp_path / "offline_demo"
    cells = [d for d in exp.iterdir() if d.is_dir() and "__" in d.name]
    assert len(cells) == 4 and all(
        sorted(x.name for x in c.glob("shard-*")) == ["shard-0-of-2", "shard-1-of-2"] for c in cells
    )
    assert keys(exp) == keys(one_process / "offline_demo")  # every episode once, the same ones
    assert metrics_csv(exp / "tables" / "metrics.csv") == metrics_csv(
        one_process / "offline_demo" / "tables" / "metrics.csv"
    )
    # read as one cell per cell, transcripts included (each call's from the store that holds it)
    from runners.records.results import open_experiment
    from tests.runners.test_resume import assert_transcripts_complete

    assert sorted(len(c.episodes()) for c in open_experiment(exp).cells) == [4, 4, 6, 6]
    assert_transcripts_complete(exp)
    from runners.analysis.report import main as report

    assert report([str(exp)]) == 0  # the report reads every worker's transcripts too
    assert (exp / "report.html").read_text().count('"transcripts":true') == 4
    # a warning the coordinator printed (an upstream file not downloaded) is not repeated per worker
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == len(set(warnings)), warnings
    # one completeness report and one row per cell, not per worker
    assert p.stdout.count("[cell done ") == 4 and "[shard" not in p.stdout
    for n in resume_with:  # another number of processes: nothing runs again
        again = run_sweep(tmp_path, *ARGS, f"runner.processes={n}")
        assert again.returncode == 0, again.stderr
        assert f"{N_EPISODES}/{N_EPISODES} episodes done ({N_EPISODES} from earlier runs, 0 now)" in again.stdout
        assert max(keys(exp).values()) == 1 and sum(keys(exp).values()) == N_EPISODES


def test_an_explicit_number_that_cannot_apply_is_refused(tmp_path):
    p = run_sweep(tmp_path, *ARGS, "runner.processes=2", "runner.executor=ray")
    assert p.returncode == 2
    assert "runner.processes=2 cannot be used with runner.executor=ray" in p.stderr and "Fix:" in p.stderr
    p = run_sweep(tmp_path, *ARGS, "runner.processes=0")
    assert p.returncode != 0 and "runner.processes" in p.stderr
    assert not record_files(tmp_path)


def test_auto_and_shares():
    from runners.config import ConfigError, validate
    from runners.procs import CORES_PER_PROCESS, PER_PROCESS, processes_for, worker_cells
    from runners.sweep import expand_cells, register_resolvers

    def cell(*extra, **runner):
        from hydra import compose, initialize_config_dir

        register_resolvers()
        overrides = [f"runner.{k}={v}" for k, v in runner.items()] + list(extra)
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose(config_name="config", overrides=overrides)
            return validate(expand_cells(cfg, overrides)[0])

    cores = os.cpu_count() or 1
    assert processes_for([cell(concurrency=8)]) == 1
    assert processes_for([cell(concurrency=4 * PER_PROCESS)]) == max(1, min(cores // CORES_PER_PROCESS, 4))
    assert processes_for([cell(concurrency=4 * PER_PROCESS, budget_usd=1)]) == 1  # auto steps aside
    c = cell(concurrency=10, processes=3)
    assert processes_for([c]) == 3
    shares = worker_cells([c], 0, 3) + worker_cells([c], 1, 3) + worker_cells([c], 2, 3)
    assert [s.runner.shard for s in shares] == ["0/3", "1/3", "2/3"]
    assert all(s.runner.concurrency == 4 and s.runner.processes == 1 for s in shares)
    assert sum(s.backbone.max_inflight for s in shares) <= c.backbone.max_inflight
    assert all(s.cell_name == c.cell_name for s in shares)  # the same cell, its stores side by side
    endpoint = ("backbone=openai_compatible", "backbone.base_url=http://127.0.0.1:9/v1", "backbone.max_inflight=2")
    auto = processes_for([cell(*endpoint, concurrency=8 * PER_PROCESS)])
    assert auto == max(1, min(cores // CORES_PER_PROCESS, 2))  # auto: ≤ the bound
    with pytest.raises(ConfigError, match="max_inflight=2 cannot be shared by 3 worker processes"):
        processes_for([cell(*endpoint, processes=3)])


def test_shard_jobs_with_worker_processes_are_one_mechanism(one_process, tmp_path):
    """Two array jobs (runner.shard=0/2, 1/2), each with 2 worker processes: 4 stores per cell
    whose ranges cover every task once; the experiment equals one process's."""
    for s in ("0/2", "1/2"):
        p = run_sweep(tmp_path, *ARGS, f"runner.shard={s}", "runner.processes=2")
        assert p.returncode == 0, p.stderr + p.stdout
        assert f"[shard {s}]" in p.stdout
    exp = tmp_path / "offline_demo"
    for c in (d for d in exp.iterdir() if d.is_dir() and "__" in d.name):
        assert sorted(x.name for x in c.glob("shard-*")) == [f"shard-{k}-of-4" for k in range(4)]
    assert keys(exp) == keys(one_process / "offline_demo")
    assert metrics_csv(exp / "tables" / "metrics.csv") == metrics_csv(
        one_process / "offline_demo" / "tables" / "metrics.csv"
    )


def test_the_endpoint_bound_holds_over_every_worker(tmp_path):
    args = (
        "backbone=openai_compatible",
        "backbone.model=fake-model",
        "method=full_context",
        "benchmark.params.data_dir=fixtures",
        "backbone.max_inflight=4",
        "runner.concurrency=16",
        "runner.processes=2",
        "runner.cache=false",
        "roles.judge=agent",
        "roles.tool=agent",
    )
    with FakeOpenAI(responder=react_responder, latency_s=0.05) as srv:
        p = run_sweep(tmp_path, *args, env={"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "sk-test"})
        assert p.returncode == 0, p.stderr + p.stdout
        assert 2 <= srv.max_concurrent <= 4, srv.max_concurrent
    recs = records_under(tmp_path)
    assert recs and all(r["status"] == "ok" for r in recs)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_stopping_the_coordinator_leaves_no_worker_and_loses_nothing(one_process, tmp_path, sig):
    args = ("backbone.scripted.latency_s=0.15", *ARGS[1:], "runner.processes=2")
    log = tmp_path / "log.txt"
    with open(log, "w") as fh:
        p = subprocess.Popen(
            sweep_cmd(tmp_path, *args), cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, preexec_fn=default_sigint
        )
        try:
            deadline = time.monotonic() + 120
            while p.poll() is None and time.monotonic() < deadline:
                if sum(keys(tmp_path).values()) >= 2:
                    break
                time.sleep(0.05)
            assert p.poll() is None, log.read_text()[-2000:]
            workers = [c for c in _children(p.pid) if _is_worker(c)]
            assert len(workers) == 2, (workers, log.read_text()[-2000:])
            p.send_signal(sig)
            rc = p.wait(timeout=120)
            deadline = time.monotonic() + 10
            while any(_alive(w) for w in workers) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not any(_alive(w) for w in workers), "a worker outlived its coordinator"
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    if sig == signal.SIGTERM:
        text = log.read_text()
        assert rc == 143 and "terminated (SIGTERM) while running" in text, text[-2000:]
    done = sum(keys(tmp_path).values())
    assert 2 <= done < N_EPISODES
    # the slow scripted latency only gave time to stop the coordinator; it is no part of a cell, so the
    # resume runs with the fast one (~4 s less)
    again = run_sweep(tmp_path, *ARGS, "runner.processes=2")
    assert again.returncode == 0, again.stderr + again.stdout
    assert max(keys(tmp_path).values()) == 1 and sum(keys(tmp_path).values()) == N_EPISODES
    assert metrics_csv(tmp_path / "offline_demo" / "tables" / "metrics.csv") == metrics_csv(
        one_process / "offline_demo" / "tables" / "metrics.csv"
    )


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _is_worker(pid: int) -> bool:
    """A spawned worker: `python -c 'from multiprocessing.spawn import spawn_main; …'`."""
    return "multiprocessing.spawn" in _cmdline(pid) and "resource_tracker" not in _cmdline(pid)


def test_few_collections_while_episodes_run_and_restored_after():
    import gc

    from runners.run import YOUNG, few_collections

    gc.unfreeze()  # whatever an earlier test froze in this process
    before = gc.get_threshold()
    with few_collections():
        assert gc.get_threshold()[0] == YOUNG == 100_000 and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
