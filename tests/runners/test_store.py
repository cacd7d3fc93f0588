"""Results store: torn tails, corrupt lines, no duplicates, one writer per cell, a finished
cell's records compacted and restored."""

import json
import lzma

import pytest

from runners.records.schema import EpisodeRecord
from runners.records.store import CellStore, StoreError, load_cell, read_jsonl, repair_tail
from tests.runners.sweep_helpers import unzstd


def rec(task, trial=0, status="ok"):
    return EpisodeRecord(cell="c", task_id=task, trial=trial, seed=0, status=status)


def test_torn_last_line_is_cut_on_open(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.append(rec("a"))
    s.append(rec("b"))
    s.close()
    path = tmp_path / "c" / "episodes.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"cell": "c", "task_id": "x", "tri')  # killed mid-write
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert s.repaired and s.done == {("a", 0), ("b", 0)}
    s.close()
    assert path.read_bytes() == good


def test_complete_but_unparseable_last_line_is_cut(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": \n')
    assert repair_tail(p) and p.read_bytes() == b'{"a": 1}\n'
    assert not repair_tail(p)


def test_corrupt_middle_line_is_set_aside_not_lost(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    lines = [rec("a").model_dump_json(), "garbage{", rec("b").model_dump_json()]
    (d / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.corrupt == 1 and s.done == {("a", 0), ("b", 0)}
    assert (d / "episodes.corrupt.jsonl").read_text() == "garbage{\n"


def test_no_duplicates_and_errors_kept_apart(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.append(rec("a"))
    s.append(rec("a"))
    s.append(rec("b", status="infra_error"))
    s.close()
    d = tmp_path / "c"
    assert len((d / "episodes.jsonl").read_text().splitlines()) == 1
    assert json.loads((d / "errors.jsonl").read_text())["task_id"] == "b"
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert ("b", 0) not in s.done  # infra errors are retried
    s.close()
    manifest, records = load_cell(d)
    assert len(records) == 1 and len(manifest["runs"]) == 2


def test_second_writer_is_refused(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    with pytest.raises(StoreError, match="another sweep"):
        CellStore(tmp_path, "c").open({"config": {}})
    s.close()


def test_unreadable_manifest_is_a_clear_error(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.json").write_text("{oops")
    with pytest.raises(StoreError, match="unreadable manifest"):
        load_cell(tmp_path / "c")


def test_manifest_naming_a_missing_benchmark_is_a_clear_aggregate_error(tmp_path, capsys):
    from runners.aggregate import main as aggregate_main

    cell = tmp_path / "exp" / "c"
    cell.mkdir(parents=True)
    (cell / "manifest.json").write_text('{"config": {"benchmark": {"name": "x", "_target_": "benchmarks.gone.Gone"}}}')
    assert aggregate_main([str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err
    assert "benchmarks.gone.Gone" in err and "PYTHONPATH" in err  # the fix: the package on the path


def test_json_lines_that_are_not_records_are_set_aside_not_a_crash(tmp_path):
    """Hand edits or a foreign file (`null`, `[]`, an object without task_id) must not crash the
    resume (KeyError/TypeError) nor reach aggregation."""
    d = tmp_path / "c"
    d.mkdir()
    lines = [rec("a").model_dump_json(), "null", "[]", '{"status": "ok"}', rec("b").model_dump_json()]
    (d / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    (d / "manifest.json").write_text("{}")
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.corrupt == 3 and s.done == {("a", 0), ("b", 0)}
    assert [r["task_id"] for r in load_cell(d)[1]] == ["a", "b"]


def test_wrong_field_types_and_duplicate_lines_are_set_aside_and_rerun(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    bad = json.loads(rec("a").model_dump_json())
    bad["usage_by_role"] = {"agent": "many"}
    lines = [json.dumps(bad), rec("b").model_dump_json(), rec("b").model_dump_json()]
    (d / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.done == {("b", 0)} and s.corrupt == 1 and s.duplicates == 1  # "a" runs again
    assert len((d / "episodes.jsonl").read_text().splitlines()) == 1
    assert "many" in (d / "episodes.corrupt.jsonl").read_text()
    assert len((d / "episodes.duplicates.jsonl").read_text().splitlines()) == 1


def test_finished_cell_is_compacted_and_a_resume_appends_to_it(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "abc":
        s.append(rec(t))
    plain = (tmp_path / "c" / "episodes.jsonl").read_bytes()
    s.mark_done({"total": 3, "ok": 3})
    with pytest.raises(StoreError, match="closed"):
        s.append(rec("d"))  # after DONE a record would land in a removed file: refused
    s.close()
    d = tmp_path / "c"
    assert not (d / "episodes.jsonl").exists() and (d / "DONE").exists()
    assert unzstd(d / "episodes.jsonl.zst") == plain  # the same lines, `zstdcat` reads them
    assert [r["task_id"] for r in load_cell(d)[1]] == ["a", "b", "c"]
    frame = (d / "episodes.jsonl.zst").read_bytes()
    s = CellStore(tmp_path, "c").open({"config": {}})  # a resume: new lines in the plain file, the frames kept
    assert s.done == {("a", 0), ("b", 0), ("c", 0)} and (d / "episodes.jsonl.zst").read_bytes() == frame
    s.append(rec("d"))
    s.mark_done({"total": 4, "ok": 4})
    s.close()
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == ["a", "b", "c", "d"]
    assert (d / "episodes.jsonl.zst").read_bytes().startswith(frame) and not (d / "episodes.jsonl").exists()


def test_cell_finished_before_zstd_is_read_and_resumed(tmp_path):
    """A cell whose records were compacted to episodes.jsonl.xz (before zstd) reads as it did, and a
    resume restores its lines and writes them on in the current form."""
    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "ab":
        s.append(rec(t))
    s.close()
    d = tmp_path / "c"
    plain = (d / "episodes.jsonl").read_bytes()
    (d / "episodes.jsonl.xz").write_bytes(lzma.compress(plain))
    (d / "episodes.jsonl").unlink()
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == ["a", "b"]
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert s.done == {("a", 0), ("b", 0)} and not (d / "episodes.jsonl.xz").exists()
    s.append(rec("c"))
    s.mark_done({"total": 3, "ok": 3})
    s.close()
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == ["a", "b", "c"]
    assert sorted(p.name for p in d.glob("episodes.jsonl*")) == ["episodes.jsonl.zst"]


@pytest.mark.parametrize("extra", [b"", rec("hand").model_dump_json().encode() + b"\n"])
def test_compaction_cut_short_reads_each_line_once(tmp_path, extra):
    """Killed between writing episodes.jsonl.xz and removing episodes.jsonl (or restoring it):
    both exist; readers and the next open see each line once, and a line only in the plain
    file (added by hand) is kept."""
    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "ab":
        s.append(rec(t))
    s.close()
    d = tmp_path / "c"
    plain = (d / "episodes.jsonl").read_bytes()
    (d / "episodes.jsonl.xz").write_bytes(lzma.compress(plain))
    (d / "episodes.jsonl").write_bytes(plain + extra)
    want = ["a", "b"] + (["hand"] if extra else [])
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == want
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.duplicates == 0 and not (d / "episodes.jsonl.xz").exists()
    assert [json.loads(x)["task_id"] for x in (d / "episodes.jsonl").read_text().splitlines()] == want


def test_compaction_that_fails_leaves_the_plain_records(tmp_path, monkeypatch):
    import runners.records.store as store

    s = CellStore(tmp_path, "c").open({"config": {}})
    s.append(rec("a"))

    def full(path, data, level):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "append_frame", full)
    s.mark_done({"total": 1, "ok": 1})
    s.close()
    d = tmp_path / "c"
    assert (d / "DONE").exists() and not list(d.glob("*.zst*")) and not list(d.glob(".*tmp*"))
    assert any("uncompacted" in w for w in s.warnings) and [r["task_id"] for r in load_cell(d)[1]] == ["a"]


@pytest.mark.parametrize("kind", ["zst", "xz"])
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_compacted_records_keep_what_reads_and_rerun_the_rest(tmp_path, damage, kind):
    import random

    noise = lambda i: random.Random(i).randbytes(6000).hex()  # noqa: E731 - incompressible: each record fills its share of the file
    big = [EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=i, error=noise(i)) for i in range(12)]
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()  # frames of 64 KiB of plain lines: the first ones stand before the damage
    for r in big:
        s.append(r)
    s.mark_done({"total": 12, "ok": 12})
    s.close()
    gz = tmp_path / "c" / f"episodes.jsonl.{kind}"
    if kind == "xz":  # a cell finished before zstd
        plain = unzstd(tmp_path / "c" / "episodes.jsonl.zst")
        (tmp_path / "c" / "episodes.jsonl.zst").unlink()
        gz.write_bytes(lzma.compress(plain))
    data = gz.read_bytes()
    cut = len(data) * 3 // 4
    gz.write_bytes(data[:cut] if damage == "truncated" else data[:cut] + b"\x00garbage" * 50)
    recs, bad = read_jsonl(tmp_path / "c" / "episodes.jsonl")
    assert bad == 1 and 0 < len(recs) < 12 and [r["task_id"] for r in recs] == [f"t{i}" for i in range(len(recs))]
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.done == {(f"t{i}", 0) for i in range(len(recs))}  # the rest run again on this resume
    assert any("damaged" in w for w in s.warnings) and not gz.exists()
    (kept,) = (tmp_path / "c").glob(f"episodes.damaged-*.jsonl.{kind}")
    assert kept.read_bytes()[:100] == data[:100]  # kept as found, never deleted


def test_compaction_switched_off_leaves_the_plain_records(tmp_path):
    from tests.runners.sweep_helpers import run_sweep

    for out, switch in ((tmp_path / "on", []), (tmp_path / "off", ["runner.compact_records=false"])):
        p = run_sweep(out, "method=full_context", "benchmark=toy", *switch)  # the toy: the cheapest end-to-end run
        assert p.returncode == 0, p.stderr[-2000:]
    on = sorted(p.name for p in (tmp_path / "on").rglob("episodes.jsonl*"))
    off = sorted((tmp_path / "off").rglob("episodes.jsonl*"))
    assert on == ["episodes.jsonl.zst"] and [p.name for p in off] == ["episodes.jsonl"]
    assert (off[0].parent / "DONE").exists()
    assert unzstd(next((tmp_path / "on").rglob("episodes.jsonl.zst"))).count(b"\n") == len(
        off[0].read_bytes().splitlines()
    )


def test_short_process_gc_runs_no_collection_and_leaves_the_records_frozen():
    """The command lines' whole-process rule: no collector pass while records are built (none
    when the block ends either: what is left is frozen, so the interpreter's passes at exit skip
    it); the collector is as it was after the block."""
    import gc

    from runners.records.store import paused_gc, short_process_gc

    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        with short_process_gc():
            with paused_gc():  # what reading records does inside it
                records = [{"task_id": str(i), "trial": 0, "scores": {"success": i % 2}} for i in range(50_000)]
            more = [[r] for r in records]  # allocations after paused_gc: the collector stays off
        assert passes == [] and gc.isenabled() and gc.get_freeze_count() >= len(records) + len(more)
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()


def _finished_cell(tmp_path, n=6, kind="zst"):
    import random

    noise = lambda i: random.Random(i).randbytes(6000).hex()  # noqa: E731 - incompressible records
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()  # frames of 64 KiB: the first ones read back before a lost tail
    for i in range(n):
        s.append(EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=i, error=noise(i)))
    s.mark_done({"total": n, "ok": n})
    s.close()
    d = tmp_path / "c"
    if kind == "xz":  # a cell finished before zstd: its records and index as that version wrote them
        plain = unzstd(d / "episodes.jsonl.zst")
        (d / "episodes.jsonl.zst").unlink()
        (d / "episodes.jsonl.xz").write_bytes(lzma.compress(plain))
        idx = json.loads((d / "episodes.index.json").read_text())
        idx["records"] = CellStore(tmp_path, "c")._records_signature()
        (d / "episodes.index.json").write_text(json.dumps(idx))
    return d / f"episodes.jsonl.{kind}"


@pytest.mark.parametrize("kind", ["zst", "xz"])
def test_a_records_file_cut_short_but_of_the_same_size_and_time_is_not_trusted_by_its_index(tmp_path, kind):
    """A compacted file whose tail was lost (zeros where the end was: an interrupted copy into a
    preallocated file) keeps the size and time its index was written against: the index must not
    claim its episodes done, and a resume re-runs what cannot be read back."""
    import os

    from runners.records.store import finished_keys, load_cell_checked

    n = 12 if kind == "zst" else 6  # zst: two frames, the first whole before the lost tail
    xz = _finished_cell(tmp_path, n=n, kind=kind)
    st, data = xz.stat(), xz.read_bytes()
    cut = len(data) * 3 // 4 if kind == "zst" else len(data) // 2
    xz.write_bytes(data[:cut] + bytes(len(data) - cut))
    os.utime(xz, ns=(st.st_atime_ns, st.st_mtime_ns))
    _, records, notes = load_cell_checked(tmp_path / "c")
    assert 0 < len(records) < n and len(finished_keys(tmp_path / "c")) == len(records)
    assert len(notes) == 1 and notes[0].startswith(f"episodes.jsonl.{kind} is damaged (")
    assert (
        f"its index lists {n} finished episodes, {len(records)} could be read back ({n - len(records)} cannot be)"
        in (notes[0])
    )
    s = CellStore(tmp_path, "c").open({"config": {}}, expect={(f"t{i}", 0) for i in range(n)})
    s.close()
    assert not s.idle and s.done == {(r["task_id"], 0) for r in records}  # the rest run again
    assert any("damaged" in w for w in s.warnings) and list((tmp_path / "c").glob(f"episodes.damaged-*.jsonl.{kind}"))


def test_cell_dirs_count_a_symlinked_copy_once_and_skip_names_that_are_not_utf8(tmp_path):
    import os

    from runners.records.store import cell_dirs

    _finished_cell(tmp_path, n=1)
    (tmp_path / "c").rename(tmp_path / "real")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    os.mkdir(os.fsencode(tmp_path) + b"/old\xffcopy")
    (tmp_path / "old\udcffcopy" / "manifest.json").write_text("{}")
    notes: list[str] = []
    assert [d.name for d in cell_dirs(tmp_path, notes)] == ["real"]
    assert notes == [
        "'old\\xffcopy' is not a UTF-8 name: ignored (rename or move it out of the experiment)",
        "alias is another name of real (a symlink): counted once",
    ]


def test_lines_of_one_batch_wake_their_loop_once(tmp_path):
    """Concurrent `append_async` calls written in one batch are answered with one wake-up of the
    event loop (one `call_soon_threadsafe`), each with its own line, all on disk."""
    import asyncio
    import threading

    s = CellStore(tmp_path, "c").open({"config": {}})
    loop = asyncio.new_event_loop()
    wakeups = []
    plain = loop.call_soon_threadsafe

    def counted(cb, *args, **kw):
        wakeups.append(cb)
        return plain(cb, *args, **kw)

    loop.call_soon_threadsafe = counted  # asyncio's, counted: how often the writer wakes this loop
    gate, held = threading.Event(), threading.Event()

    def hold(e):  # the writer thread waits here until every line below is queued: one batch
        held.set()
        gate.wait(10)

    async def main():
        fh, _ = s._line(rec("first"))
        s._writer.submit(fh, b"", hold)
        assert await asyncio.to_thread(held.wait, 10)
        wakeups.clear()  # to_thread's own wake-up
        tasks = [asyncio.ensure_future(s.append_async(rec(f"t{i}"))) for i in range(20)]
        await asyncio.sleep(0.05)  # every append queued its line
        gate.set()
        return await asyncio.gather(*tasks)

    try:
        lines = loop.run_until_complete(main())
    finally:
        loop.close()
    s.close()
    assert len(wakeups) == 1  # before: 20, one per line
    assert [json.loads(x)["task_id"] for x in lines] == [f"t{i}" for i in range(20)]
    assert s.done >= {(f"t{i}", 0) for i in range(20)}
    written = (tmp_path / "c" / "episodes.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["task_id"] for x in written) == sorted(f"t{i}" for i in range(20))


def test_a_failed_batch_fails_every_append_waiting_on_it(tmp_path):
    """The writer's error reaches each `append_async` of the batch (answered together), and none is
    counted as done."""
    import asyncio

    s = CellStore(tmp_path, "c").open({"config": {}})

    async def main():
        s._fh.close()  # the file is gone under the writer: its write raises
        return await asyncio.gather(*(s.append_async(rec(f"t{i}")) for i in range(3)), return_exceptions=True)

    results = asyncio.run(main())
    s.close()
    assert [type(r) for r in results] == [ValueError] * 3
    assert not s.done
