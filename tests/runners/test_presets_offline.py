"""`experiment=<preset> backbone=scripted runner.limit=1` runs offline on every benchmark's
fixtures (in-process, one task per cell), and offline Hugging Face access fails in seconds with
the fix."""

import asyncio
import importlib.util
import socket
import time

import pytest
from hydra import compose, initialize_config_dir

from runners.config import CONF_DIR, available, validate
from runners.progress import Progress
from runners.pool import BackbonePool
from runners.prepare import prepare_cells
from runners.run import Scheduler
from runners.sweep import expand_cells, register_resolvers
from tests.conftest import SHARED_DATA

SLOW_METHODS = {"mem0", "reasoningbank"}  # load a local embedder (seconds); they run in test_matrix


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def no_network(monkeypatch):
    """Any Hugging Face access goes to a closed loopback port (tests reach only loopback)."""
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("MEMORYARENA_DATA_DIR", raising=False)
    from runners import netcheck

    netcheck._probe.cache_clear()


@pytest.mark.parametrize("preset", [p for p in available("experiment")])
def test_preset_runs_offline_with_the_scripted_backbone(preset, tmp_path, no_network, monkeypatch):
    if (SHARED_DATA / "memoryarena-travel-db").is_dir():
        monkeypatch.setenv("TRAVELPLANNER_DB_DIR", str(SHARED_DATA / "memoryarena-travel-db"))
    alfworld = (SHARED_DATA / "alfworld").is_dir() and importlib.util.find_spec("alfworld") is not None
    if alfworld:
        monkeypatch.setenv("ALFWORLD_DATA", str(SHARED_DATA / "alfworld"))
    register_resolvers()
    overrides = [
        f"experiment={preset}",
        "backbone=scripted",
        "runner.limit=1",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
    ]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        grid = compose(config_name="config", overrides=overrides).experiment.grid
        methods, benches = list(grid.get("method") or [None]), list(grid.get("benchmark") or [None])
        pairs = [(methods[i % len(methods)], benches[i % len(benches)]) for i in range(max(len(methods), len(benches)))]
        cells = []
        for m, b in pairs:  # every method and every benchmark of the preset at least once (test_matrix runs every pair)
            pins = ([f"method={m}"] if m else []) + ([f"benchmark={b}"] if b else [])
            cells += [
                validate(c)
                for c in expand_cells(compose(config_name="config", overrides=overrides + pins), overrides + pins)
            ]
    skipped = []
    run = []
    alf_done = False
    for c in cells:
        if c.method.name in SLOW_METHODS:
            skipped.append(c.cell_name)
        elif c.benchmark.name == "memoryarena_travel" and not (SHARED_DATA / "memoryarena-travel-db").is_dir():
            skipped.append(c.cell_name)  # the TravelPlanner database is not redistributable: no fixture
        elif c.benchmark.name == "alfworld" and (not alfworld or alf_done):
            skipped.append(c.cell_name)  # one ALFWorld cell per preset: its games take seconds to compile
        else:
            alf_done = alf_done or c.benchmark.name == "alfworld"
            run.append(c)
    if not run and not (alfworld and (SHARED_DATA / "memoryarena-travel-db").is_dir()):
        pytest.skip(
            f"{preset}: every cell needs data or an extra this machine lacks (ALFWorld games + the alfworld extra: "
            f"{'present' if alfworld else 'absent'}; the TravelPlanner database under {SHARED_DATA}): "
            f"{', '.join(skipped)}"
        )
    assert run, f"{preset}: nothing left to run offline"
    pool = BackbonePool(None)
    pool.prepare(run)  # a role pointing at a real endpoint would fail here (missing key / URL)

    async def go():
        try:
            return await Scheduler(tmp_path, pool, Progress("none"), 16).run(prepare_cells(run))
        finally:
            await pool.aclose()

    t0 = time.perf_counter()
    reports = asyncio.run(go())
    assert all(r.ok == r.total and r.total >= 1 for r in reports), [
        (r.cell, r.errors) for r in reports if r.ok != r.total
    ]
    assert all(c.scripted for c in run) and time.perf_counter() - t0 < 120


def test_offline_hugging_face_fails_fast_with_the_fix(no_network):
    from benchmarks.memoryarena.loader import DataError, resolve

    t0 = time.perf_counter()
    with pytest.raises(DataError) as ei:
        resolve("formal_reasoning_math", None)
    assert time.perf_counter() - t0 < 5
    msg = str(ei.value)
    assert (
        "unreachable" in msg
        and "benchmark.params.data_dir" in msg
        and "MEMORYARENA_DATA_DIR" in msg
        and "fixtures" in msg
    )
