"""A finished cell opened again with nothing to run is neither restored nor scanned: its records
stay compacted and untouched (`episodes.index.json`); anything else takes the full path."""
import os

import pytest

from runners.records.schema import EpisodeRecord
from runners.records.store import CellStore, StoreError, read_jsonl


def rec(task, trial=0, code="abc"):
    return EpisodeRecord(cell="c", task_id=task, trial=trial, seed=0, status="ok", code=code)


def finished(tmp_path, tasks=("a", "b", "c")):
    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in tasks:
        s.append(rec(t))
    s.mark_done({"total": len(tasks), "ok": len(tasks)})
    s.close()
    return tmp_path / "c"


def test_nothing_to_run_leaves_the_records_compacted_and_untouched(tmp_path):
    d = finished(tmp_path)
    xz = d / "episodes.jsonl.xz"
    before = (xz.stat().st_mtime_ns, xz.read_bytes())
    s = CellStore(tmp_path, "c").open({"config": {"x": 1}}, expect=[("a", 0), ("b", 0)])
    assert s.idle and s.done == {("a", 0), ("b", 0), ("c", 0)} and s.codes == {"abc": 3}
    assert not (d / "episodes.jsonl").exists()  # not restored
    with pytest.raises(StoreError, match="closed"):
        s.append(rec("d"))
    s.mark_done({"total": 3, "ok": 3})
    s.close()
    assert (xz.stat().st_mtime_ns, xz.read_bytes()) == before  # not compacted again
    assert (d / "DONE").exists() and not (d / "episodes.jsonl").exists()
    assert '"x": 1' in (d / "manifest.json").read_text()  # the run is recorded in the manifest all the same
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == ["a", "b", "c"]
    again = CellStore(tmp_path, "c").open({"config": {}}, expect=[("c", 0)])  # the index written again: still idle
    assert again.idle
    again.close()


def test_work_to_do_opens_the_cell_as_before(tmp_path):
    d = finished(tmp_path)
    s = CellStore(tmp_path, "c").open({"config": {}}, expect=[("a", 0), ("a", 1)])  # a trial more
    assert not s.idle and (d / "episodes.jsonl").exists()
    s.append(rec("a", 1))
    s.mark_done({"total": 4, "ok": 4})
    s.close()
    assert {(r["task_id"], r["trial"]) for r in read_jsonl(d / "episodes.jsonl")[0]} == {("a", 0), ("b", 0), ("c", 0), ("a", 1)}


@pytest.mark.parametrize("change", ["records", "not done", "index"])
def test_an_index_that_does_not_match_the_records_is_not_trusted(tmp_path, change):
    d = finished(tmp_path)
    xz = d / "episodes.jsonl.xz"
    if change == "records":  # the compacted file replaced (same content, another write)
        data = xz.read_bytes()
        xz.unlink()
        xz.write_bytes(data)
        os.utime(xz, ns=(xz.stat().st_atime_ns, xz.stat().st_mtime_ns + 1_000_000))
    elif change == "not done":
        (d / "DONE").unlink()
    else:
        (d / "episodes.index.json").write_text("{not json")
    s = CellStore(tmp_path, "c").open({"config": {}}, expect=[("a", 0)])
    assert not s.idle and s.done == {("a", 0), ("b", 0), ("c", 0)}  # scanned, as without an index
    s.close()


def test_without_expect_the_cell_opens_as_before(tmp_path):
    d = finished(tmp_path)
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert not s.idle and (d / "episodes.jsonl").exists()
    s.close()
