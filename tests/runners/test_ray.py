"""runner.executor=ray on a local Ray instance started by the test (ray.init(num_cpus=2)): every
cell runs as a Ray task in a worker process and the tables equal a local run's."""

import os

import pytest

ray = pytest.importorskip("ray", reason="Ray missing: install the `ray` extra (CI installs it)")


def test_cells_as_ray_tasks_match_a_local_run(tmp_path):
    from runners.analysis.cells import collect
    from runners.ray_exec import run_cells
    from tests.runners.test_scheduler import cells, run

    local = cells(tmp_path / "local", latency_s=0.0, trials=2)
    run(tmp_path / "local", local)
    remote = cells(tmp_path / "ray", latency_s=0.0, trials=2, executor="ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": str(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))}},
    )
    try:
        reports = run_cells(remote, tmp_path / "ray")
        pids = ray.get([ray.remote(lambda: os.getpid()).remote() for _ in range(2)])
    finally:
        ray.shutdown()
    assert [(r.ok, r.total) for r in reports] == [(6, 6), (4, 4)]
    assert os.getpid() not in pids  # tasks ran in worker processes
    summary = lambda root: {c.cell: (c.n_episodes, c.metrics) for c in collect(root)}  # noqa: E731
    assert summary(tmp_path / "ray") == summary(tmp_path / "local")
