"""The sweep's end-of-run tables come from the numbers it kept as episodes finished
(runners.run.TableFold), not from reading back the records it just wrote; cells it did not see
whole (a resume after kill -9, cells finished by an earlier run) are read from disk. Either way
the tables are byte-identical to a cold `runners.aggregate` of the same experiment."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

from runners.analysis.table_cache import TABLE_FILES
from runners.analysis.tables import aggregate_dir
from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import REPO, cell_records, record_files

ARGS = ("runner.display=plain", "backbone.scripted.latency_s=0.02", "runner.trials=2", "runner.concurrency=2")
EPISODES = 2 * (3 + 2) * 2  # offline demo: 2 methods × (math 3 + phys 2 tasks) × 2 trials


def counted_cmd(out, *extra):
    return [sys.executable, "-m", "tests.runners.count_reads", f"runner.output_dir={out}", *ARGS, *extra]


def sweep(out, *extra):
    p = subprocess.run(
        counted_cmd(out, *extra), cwd=REPO, capture_output=True, text=True, timeout=120, preexec_fn=default_sigint
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return int(re.search(r"records read back: (\d+)", p.stderr).group(1))


def tables(root):
    return {f: (root / "tables" / f).read_bytes() for f in TABLE_FILES}


def cold(root, tmp_path):
    """The tables `runners.aggregate` builds from the records alone, in a copy without the sweep's tables."""
    copy = tmp_path / "cold" / root.name
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("tables", ".lock"))
    aggregate_dir(copy, "full_context", out=open(os.devnull, "w"))
    return tables(copy)


def same_tables(sweep_tables, cold_tables):
    for f in TABLE_FILES:
        assert sweep_tables[f] == cold_tables[f], f


def test_fresh_sweep_reads_no_record_back_and_its_tables_are_aggregate_s(tmp_path):
    assert sweep(tmp_path / "a") == 0  # old code: every record read back (EPISODES)
    root = tmp_path / "a" / "offline_demo"
    assert sum(len(cell_records(p.parent)) for p in record_files(root)) == EPISODES
    same_tables(tables(root), cold(root, tmp_path))


def test_after_kill_9_the_resumed_cells_are_read_and_the_tables_are_aggregate_s(tmp_path):
    out = tmp_path / "b"
    p = subprocess.Popen(counted_cmd(out), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if sum(len(cell_records(f.parent)) for f in record_files(out)) >= 3:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    root = out / "offline_demo"
    before = {f.parent.name: len(cell_records(f.parent)) for f in record_files(root)}
    assert 0 < sum(before.values()) < EPISODES
    read = sweep(out)
    # the cells holding records before the resume are read whole; the cells this run saw whole are not
    after = {f.parent.name: len(cell_records(f.parent)) for f in record_files(root)}
    assert read == sum(after[c] for c, n in before.items() if n)
    assert read < EPISODES
    same_tables(tables(root), cold(root, tmp_path))


def rec(task, trial=0):
    from runners.records.schema import EpisodeRecord

    return EpisodeRecord(cell="c", task_id=task, trial=trial, seed=0, scores={"success": 1})


def test_fold_keeps_only_cells_it_saw_whole(tmp_path):
    import asyncio

    from runners.records.store import CellStore, load_cell
    from runners.run import TableFold

    async def write(store, fold, name, *recs):
        for r in recs:
            fold.add(name, await store.append_async(r))

    earlier = CellStore(tmp_path, "old").open({"config": {}})
    earlier.append(rec("t0"))
    earlier.close()
    fold = TableFold()
    stores = {n: CellStore(tmp_path, n).open({"config": {}}) for n in ("new", "old", "torn", "alone")}
    for n, s in stores.items():
        fold.start(n, s, alone=n != "alone")
    asyncio.run(write(stores["new"], fold, "new", rec("t1"), rec("t2"), rec("t1")))  # the repeat is not written
    asyncio.run(write(stores["old"], fold, "old", rec("t1")))
    asyncio.run(write(stores["torn"], fold, "torn", rec("t1")))
    asyncio.run(write(stores["alone"], fold, "alone", rec("t1")))
    fold.add("torn", b'{"task_id": "t9", "trial": "zero"}\n')  # a line the readers would set aside
    for s in stores.values():
        s.close()
    cells = fold.cells()
    assert set(cells) == {"new"}  # old: records from before; torn: a line read back wrong; alone: other stores
    on_disk = load_cell(tmp_path / "new")[1]
    assert [(r["task_id"], r["trial"]) for r in cells["new"]] == [(r["task_id"], r["trial"]) for r in on_disk]
    assert [r["scores"] for r in cells["new"]] == [r["scores"] for r in on_disk]


def _line(i, **scores):
    """A record's line as the store writes it: orjson, one record per line."""
    import orjson

    from tests.runners.test_compact_summary import record

    return orjson.dumps(record(i, **scores)) + b"\n"


class _Opened:
    """What TableFold reads of a store: opened empty, its finished (task, trial)."""

    idle, records_bytes = False, 0

    def __init__(self):
        self.done = set()


def test_fold_keeps_each_episode_packed_and_gives_back_the_compact_records(tmp_path):
    """The fold holds a few bytes an episode while the sweep runs (before: the compact records,
    ~0.7 KB each, so the sweep's memory grew with its episodes) and gives back exactly the compact
    records `runners.aggregate` makes of the same lines: NaN, integers beyond 64 bits, a score
    text left out, the fields left out still raising DroppedField."""
    import pickle
    import tracemalloc

    import orjson
    import pytest

    from runners.analysis.cells import DroppedField, compact_record
    from runners.records.store import read_back
    from runners.run import TableFold

    n = 3 * TableFold.BLOCK  # whole blocks: none left open
    lines = [_line(i) for i in range(n - 3)]
    odd = [
        _line(n - 3, progress=float("nan")),  # orjson writes null: the store writes NaN as JSON does
        b'{"cell":"c","task_id":"big","trial":0,"status":"ok","scores":{"success":1,"n":123456789012345678901234567890}}\n',
        b'{"cell":"c","task_id":"plain","trial":0,"status":"ok","scores":{},"usage_by_role":{}}\n',
    ]
    odd[0] = odd[0].replace(b'"progress":null', b'"progress":NaN')
    lines += odd
    fold, store = TableFold(), _Opened()
    fold.start("c", store, alone=True)
    store.done = {(r["task_id"], r["trial"]) for r in map(read_back, lines)}  # as the store counts them
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for raw in lines:
            fold.add("c", raw)
        held = (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()
    assert held < 100, held  # the compact records: ~700 bytes an episode
    fold.closed("c")  # the store closed: its count kept, not its set of finished episodes
    store.done = set()
    got = fold.cells()["c"]
    shared: dict = {}
    want = [compact_record(read_back(raw), shared) for raw in lines]
    assert len(got) == n
    for g, w in zip(got, want):  # pickles: NaN compares unequal to itself, the classes must match too
        assert type(g) is type(w) and type(g).dropped == type(w).dropped
        assert pickle.dumps(g) == pickle.dumps(w)
        assert type(g.get("scores")) is type(w.get("scores"))
    assert got[-2]["scores"]["n"] == read_back(odd[1])["scores"]["n"]  # as the readers parse it
    nan = got[-3]["scores"]["progress"]
    assert nan != nan
    with pytest.raises(DroppedField):
        got[0]["scores"].get("answers")
    with pytest.raises(DroppedField):
        got[0].get("wall_s")
    assert got[0]["requests"] is got[1]["requests"]  # repeated values one object, as aggregate keeps them
    assert orjson.dumps(got[5], default=dict) == orjson.dumps(want[5], default=dict)


def _full_record(i, **over):
    """A record with every kind of part: requests with steps, calls and method logs, usage, texts."""
    from runners.api import Decision, Observation, Request, ToolCall, Usage
    from runners.records.schema import CallLog, EpisodeRecord, RequestRecord, StepRecord

    call = CallLog(role="agent", model="m", usage=Usage(prompt_tokens=900 + i, completion_tokens=9), latency_s=0.1)
    steps = [
        StepRecord(
            t=t,
            observation=Observation(note=f"obs {t}\u00e9"),
            decision=Decision(tool_calls=[ToolCall(name="f", arguments={"x": "a\nb", "n": t})], message=None),
            calls=[call],
            method={"protocol_errors": [], "attempts": t, "score": 0.1 * t, "log": ["\u2028", "\x00"]},
            overhead_s=1e-7 * t,
        )
        for t in (1, 2)
    ]
    fields = dict(
        cell="c",
        task_id=f"t{i}",
        trial=i % 2,
        seed=i,
        requests=[
            RequestRecord(request=Request(index=0, request_id=f"t{i}/q1", text="q"), steps=steps, method={"m": i}),
            RequestRecord(request=Request(index=1, request_id=f"t{i}/q2", text="q"), steps=[]),
        ],
        scores={"success": i % 2, "progress": i / 3, "answers": ["x", None], "judge_replies": "yes"},
        usage_by_role={"agent": Usage(prompt_tokens=10 * i, completion_tokens=i), "judge": Usage(source="estimated")},
        calls_by_role={"agent": 2},
        task_calls=[call],
        wall_s=0.25,
        code="abc",
        texts={"k": "v"},
        hygiene=["redacted: 1"],
    )
    return EpisodeRecord(**{**fields, **over})


def test_fold_of_the_record_s_kept_fields_equals_the_fold_of_its_line():
    """`TableFold.add(name, line, rec)` serialises and reads back only the fields the compact form
    keeps: the same compact records as reading back the whole line (NaN and infinities written
    as null, integers beyond 64 bits in a kept field and in one left out, floats, non-ASCII text,
    steps without method logs, a record with nothing but its ids), and a record whose kept fields
    the readers set aside still spoils the cell."""
    import pickle

    from runners.records.schema import EpisodeRecord
    from runners.run import TableFold

    recs = [_full_record(i) for i in range(6)]
    recs += [
        _full_record(6, scores={"progress": float("nan"), "p": float("inf"), "n": 2**70, "f": 1e-7}),
        _full_record(7, seed=2**70),  # the whole line goes to the standard library's reader, the kept part not
        _full_record(8, requests=[], usage_by_role={}, texts=None, code=None),
        EpisodeRecord(cell="c", task_id="bare", trial=0, seed=0),
    ]
    lines = [r.model_dump_json().encode() + b"\n" for r in recs]
    got, want = TableFold(), TableFold()
    for fold in (got, want):
        fold.start("c", _Opened(), alone=True)
    for r, line in zip(recs, lines):
        got.add("c", line, r)
        want.add("c", line)
    for fold in (got, want):
        fold.closed("c")
        fold._stores["c"] = len(recs)  # every record counted finished
    a, b = got.cells()["c"], want.cells()["c"]
    assert len(a) == len(b) == len(recs)
    for g, w in zip(a, b):
        assert type(g) is type(w) and type(g).dropped == type(w).dropped
        assert pickle.dumps(g) == pickle.dumps(w)
    spoilt = TableFold()
    spoilt.start("c", _Opened(), alone=True)
    odd = _full_record(9)
    odd.usage_by_role = {"agent": {"prompt_tokens": "many"}}  # type: ignore[dict-item]  # set aside by the readers
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")  # pydantic's serialisation warning of the wrong type
        spoilt.add("c", odd.model_dump_json().encode() + b"\n", odd)
    assert "c" not in spoilt.cells()
