"""A summary keeps each record in its compact form (runners.analysis.cells.compact_record). The
safety net: on every benchmark the offline sweep can run here (scripted backbone, the project's
fixtures; two methods, two trials, so the Δ rows, paired tests, pass^k and the bootstrap all run),
the tables, the papers' tables and claims built from the compact form are byte-identical to those
built from the fuller form (`slim_record`); a field the compact form leaves out is never a silent
absence."""

from __future__ import annotations

import asyncio
import importlib.util
import json

import numpy as np
import orjson
import pytest
from hydra import compose, initialize_config_dir

from runners.analysis import cells as cells_mod
from runners.analysis.cells import DroppedField, UsageByRole, collect, compact_record, reader_warnings, slim_record
from runners.analysis.stats import _resample
from runners.analysis.table_cache import TABLE_FILES
from runners.analysis.tables import aggregate_dir
from runners.config import CONF_DIR, validate
from runners.pool import BackbonePool
from runners.prepare import prepare_cells
from runners.progress import Progress
from runners.run import Scheduler
from runners.sweep import expand_cells, register_resolvers
from tests.conftest import SHARED_DATA

BENCHMARKS = [
    "toy",
    "memoryarena_math",
    "memoryarena_shopping",
    "tau_airline",
    "clindiag",
    "rca100",
    "loca",
    "memoryarena_travel",
    "alfworld",
]


POS_ON = ("memoryarena_math", "alfworld")  # PoS's step logs: its tables and the trapping figure's data


def _runnable(bench: str) -> bool:
    if bench == "memoryarena_travel":
        return (SHARED_DATA / "memoryarena-travel-db").is_dir()  # not redistributable: no fixture
    if bench == "alfworld":
        return (SHARED_DATA / "alfworld").is_dir() and importlib.util.find_spec("alfworld") is not None
    return True


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """One offline sweep: full_context and flowstate × every runnable benchmark (and PoS on `POS_ON`),
    3 tasks × 2 trials."""
    out = tmp_path_factory.mktemp("compact")
    mp = pytest.MonkeyPatch()
    mp.setenv("TRAVELPLANNER_DB_DIR", str(SHARED_DATA / "memoryarena-travel-db"))
    mp.setenv("ALFWORLD_DATA", str(SHARED_DATA / "alfworld"))
    register_resolvers()
    base = ["backbone=scripted", "runner.trials=2", f"runner.output_dir={out}", "runner.display=none"]
    run = []
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for b in filter(_runnable, BENCHMARKS):
            for m in ("full_context", "flowstate", *(("pos",) if b in POS_ON else ())):
                limit = 1 if b == "alfworld" else 3  # ALFWorld's games take seconds each
                pins = [*base, f"method={m}", f"benchmark={b}", f"runner.limit={limit}"]
                run += [validate(c) for c in expand_cells(compose(config_name="config", overrides=pins), pins)]
    pool = BackbonePool(None)
    pool.prepare(run)

    async def go():
        try:
            return await Scheduler(out, pool, Progress("none"), 16).run(prepare_cells(run))
        finally:
            await pool.aclose()

    reports = asyncio.run(go())
    mp.undo()
    assert all(r.ok == r.total and r.total >= 1 for r in reports), [(r.cell, r.errors) for r in reports]
    assert len(list(out.glob("*/manifest.json"))) == len(run)
    return out, {c.benchmark.name for c in run}


def _outputs(root, tmp, tag):
    """Every file the tables and `runners.paper` write, from a copy of the experiment."""
    import shutil

    from runners.paper import main as paper_main

    copy = tmp / tag / root.name
    shutil.copytree(root, copy)
    aggregate_dir(copy, "full_context", resamples=200)
    got = {f"tables/{f}": (copy / "tables" / f).read_bytes() for f in TABLE_FILES}
    assert paper_main([str(copy), "--out", str(tmp / tag / "paper"), "--bootstrap", "200"]) == 0
    got.update(  # the papers' tables, claims and figures' data (images carry random ids and dates)
        {
            str(p.relative_to(tmp / tag)): p.read_bytes()
            for p in sorted((tmp / tag / "paper").rglob("*"))
            if p.is_file() and p.suffix not in (".svg", ".png", ".pdf")
        }
    )
    return got


def test_tables_papers_tables_and_claims_are_the_same_from_the_compact_form(experiment, tmp_path, monkeypatch):
    root, benches = experiment
    assert {"toy", "memoryarena_math", "memoryarena_shopping", "tau_airline", "clindiag", "rca100"} <= benches
    compact = _outputs(root, tmp_path, "compact")
    cells = collect(root)
    assert cells and all(not c.kept_whole for c in cells)  # every benchmark here reads only what is kept
    assert all(type(e).__name__ == "Compact" for c in cells for e in c.episodes)
    monkeypatch.setattr(cells_mod, "compact_record", slim_record)  # the fuller form everywhere
    fuller = _outputs(root, tmp_path, "fuller")
    assert all(not hasattr(e, "dropped") for c in collect(root) for e in c.episodes)
    assert compact.keys() == fuller.keys() and len(compact) > len(TABLE_FILES)
    for name in compact:
        assert compact[name] == fuller[name], name


def test_a_metric_that_reads_a_dropped_field_gets_the_fuller_form_and_a_warning(experiment, monkeypatch):
    """A metric function that reads a field the compact form leaves out (here the episode's seed,
    with `.get`, which would silently answer None) makes the cell fall back, with the same numbers."""
    from benchmarks.toy.benchmark import Toy

    root, _ = experiment
    toy = [d for d in root.iterdir() if "__toy__" in d.name]
    before = {d.name: cells_mod.summarize(d).metrics for d in toy}
    original = Toy.metrics

    def reads_seed(self, episodes):
        out = original(self, episodes)
        out["seeds"] = float(sum(int(e.get("seed") or 0) + 1 for e in episodes))
        return out

    monkeypatch.setattr(Toy, "metrics", reads_seed)
    for d in toy:
        seen: list[tuple[str, int]] = []
        s = cells_mod.summarize(d, on_record=lambda cell, r, line: seen.append((r["task_id"], r["trial"])))
        assert s.kept_whole and "seed" in s.kept_whole
        assert sorted(seen) == sorted((e["task_id"], e["trial"]) for e in s.records)  # the hook saw each once
        assert "seed" in s.episodes[0] and not hasattr(s.episodes[0], "dropped")
        assert s.metrics["seeds"] == s.n_episodes + sum(e["seed"] for e in s.episodes)
        assert {k: v for k, v in s.metrics.items() if k != "seeds"} == before[d.name]
        assert any("seed" in w and "fuller form" in w for w in reader_warnings(root, [s], []))


def record(i: int, **extra):
    return {
        "cell": "c",
        "task_id": f"t{i}",
        "trial": 0,
        "seed": 0,
        "status": "ok",
        "error": None,
        "requests": [{"request": "q" * 100, "steps": [{"observation": "o" * 100, "method": {"attempts": 1}}]}],
        "scores": {"success": i % 2, "subtask_correct": [1, 0], "answers": ["a", "b"], "subset": "x", **extra},
        "usage_by_role": {
            "agent": {
                "prompt_tokens": 9000 + i,
                "cached_prompt_tokens": 0,
                "completion_tokens": 500,
                "reasoning_tokens": 0,
                "source": "api",
            }
        },
        "calls_by_role": {"agent": 6},
        "started_at": "2026-12-06T22:20:50+00:00",
        "wall_s": 1.5,
        "code": "src:1",
        "texts": {"method:system": "upstream:9ce6c335"},
    }


def test_reading_a_left_out_field_raises_instead_of_answering_absent():
    shared: dict = {}
    e = compact_record(record(1), shared)
    assert e["task_id"] == "t1" and e.get("status") == "ok" and "scores" in e
    for read in (lambda: e["seed"], lambda: e.get("wall_s"), lambda: "started_at" in e):
        with pytest.raises(DroppedField):
            read()
    s = e["scores"]
    assert s["subset"] == "x" and s.get("success") == 1 and s["subtask_correct"] == [1, 0]
    with pytest.raises(DroppedField):
        s.get("answers")
    with pytest.raises(KeyError) as ei:  # a field no record had stays a plain KeyError
        e["nothing"]
    assert not isinstance(ei.value, DroppedField) and e.get("nothing") is None
    assert not isinstance(DroppedField("x"), KeyError)  # no reader's `except KeyError` swallows it
    back = json.loads(json.dumps(e, default=dict))  # usage (`UsageByRole`) writes as the dict it was
    assert back["scores"] == {"success": 1, "subtask_correct": [1, 0], "subset": "x"}
    assert back["usage_by_role"] == record(1)["usage_by_role"]
    assert type({**e}) is dict and orjson.loads(orjson.dumps(e, default=dict))["trial"] == 0
    resampled = _resample([[e]], np.array([0, 0]), 1)  # the bootstrap's copies keep raising
    # a task's first draw is its record itself; a second draw is a copy under its own id
    assert [r["task_id"] for r in resampled] == ["t1", "t1~1.1"] and resampled[0] is e and e["task_id"] == "t1"
    with pytest.raises(DroppedField):
        resampled[1].get("seed")


def test_usage_reads_as_stored_and_values_are_shared_only_when_equal():
    shared: dict = {}
    a, b, c = (compact_record(r, shared) for r in (record(1), record(3), record(2)))
    assert isinstance(a["usage_by_role"], UsageByRole)
    assert dict(a["usage_by_role"]) == record(1)["usage_by_role"] and list(a["usage_by_role"]) == ["agent"]
    assert a["scores"] is b["scores"] and a["scores"] is not c["scores"]  # equal outcomes: one object
    assert a["requests"] is c["requests"] and a["texts"] is c["texts"]
    # Equal JSON but different fields left out, or NaN beside null: never one object.
    d = compact_record({**record(1), "scores": {"success": 1, "subtask_correct": [1, 0], "subset": "x"}}, shared)
    assert d["scores"] is not a["scores"] and d["scores"].get("answers") is None
    nan = compact_record(record(5, progress=float("nan")), shared)
    null = compact_record(record(5, progress=None), shared)
    assert null["scores"]["progress"] is None and nan["scores"]["progress"] != nan["scores"]["progress"]
    odd = {**record(1), "usage_by_role": {"agent": {"prompt_tokens": 1.5, "source": "api"}}}
    assert compact_record(odd, shared)["usage_by_role"] == odd["usage_by_role"]  # another shape: kept as it is


def test_a_compact_record_takes_under_a_kilobyte():
    import tracemalloc

    lines = [orjson.dumps(record(i)) for i in range(2000)]
    shared: dict = {}
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = [compact_record(orjson.loads(raw), shared) for raw in lines]
        compact = (tracemalloc.get_traced_memory()[0] - base) / len(kept)
        del kept
        shared = {}
        base = tracemalloc.get_traced_memory()[0]
        kept = [slim_record(orjson.loads(raw), shared) for raw in lines]
        slim = (tracemalloc.get_traced_memory()[0] - base) / len(kept)
    finally:
        tracemalloc.stop()
    assert compact < 900 and compact < slim / 2, (compact, slim)


def test_equal_per_task_numbers_are_one_dict_inside_a_table_build():
    from runners.analysis.stats import per_task, shared_evaluations

    def rate(episodes):
        return {"SR": 100.0 * sum(e["scores"]["success"] for e in episodes) / len(episodes), "zero": -0.0}

    eps = [{"task_id": f"t{i}", "trial": 0, "scores": {"success": i % 2}} for i in range(1000)]
    with shared_evaluations():
        got = per_task(eps, rate)
        assert len({id(v) for v in got.values()}) == 2  # one dict per distinct result, not per task
        assert got["t1"] == {"SR": 100.0, "zero": -0.0} and str(got["t0"]["zero"]) == "-0.0"
    assert per_task(eps, rate)["t3"] is not per_task(eps, rate)["t5"]  # outside a build: nothing kept


def test_usage_counts_take_4_bytes_until_one_needs_64_bits_and_every_record_reads_back_exactly():
    """A cell's usage counts share one int32 array; a count beyond 32 bits starts an int64 one for
    that record and the next, the records before keeping theirs: every count reads back exact."""

    def usage(n):
        keys = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
        return {"agent": {**dict(zip(keys, (n, 0, 7, 0))), "source": "api"}}

    counts = [5, 2**31 - 1, 2**31, 9, -(2**63), 2**63 - 1, 3]
    shared: dict = {}
    kept = [compact_record({**record(i), "usage_by_role": usage(n)}, shared) for i, n in enumerate(counts)]
    assert [k["usage_by_role"]["agent"]["prompt_tokens"] for k in kept] == counts
    assert [dict(k["usage_by_role"]) for k in kept] == [usage(n) for n in counts]
    arrays = [k["usage_by_role"]._counts for k in kept]
    assert arrays[0].typecode == "i" and arrays[0] is arrays[1]  # 4 bytes a count while they fit
    assert all(a.typecode == "q" and a is arrays[2] for a in arrays[2:])
