"""Finishing a cell and opening it again: records compressed while the cell runs (finishing only
ends the stream; a kill or a mismatch loses nothing), and a finished cell opened with nothing to
run is neither restored nor scanned (`episodes.index.json`); anything else takes the full path."""

import lzma
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
    assert {(r["task_id"], r["trial"]) for r in read_jsonl(d / "episodes.jsonl")[0]} == {
        ("a", 0),
        ("b", 0),
        ("c", 0),
        ("a", 1),
    }


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


def test_records_compressed_as_written_make_the_same_compacted_file(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    for i in range(50):
        s.append(rec(f"t{i}"))
    d = tmp_path / "c"
    plain = (d / "episodes.jsonl").read_bytes()
    assert list(d.glob(".episodes.jsonl.xz.part.*"))  # being compressed meanwhile
    s.mark_done({"total": 50, "ok": 50})
    s.close()
    assert not (d / "episodes.jsonl").exists() and not list(d.glob(".episodes.jsonl.xz.part.*"))
    assert lzma.decompress((d / "episodes.jsonl.xz").read_bytes()) == plain


def test_a_resumed_cell_compresses_its_earlier_lines_too(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.append(rec("a"))
    s.close()  # interrupted: the stream (none here) and the plain file as they are
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    s.append(rec("b"))
    s.mark_done({"total": 2, "ok": 2})
    s.close()
    assert [r["task_id"] for r in read_jsonl(tmp_path / "c" / "episodes.jsonl")[0]] == ["a", "b"]
    assert not (tmp_path / "c" / "episodes.jsonl").exists()


def test_interrupted_or_killed_compression_loses_nothing(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    s.append(rec("a"))
    s.close()  # interrupted before the end: the part file goes, the plain file is the records
    d = tmp_path / "c"
    assert not list(d.glob(".episodes.jsonl.xz.part.*")) and not (d / "episodes.jsonl.xz").exists()
    (d / ".episodes.jsonl.xz.part.99999").write_bytes(b"\xfd7zXZ half")  # what a SIGKILL leaves
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert s.done == {("a", 0)} and not list(d.glob(".episodes.jsonl.xz.part.*"))
    s.close()


def test_a_stream_that_missed_a_line_falls_back_to_compacting_the_file(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    s.append(rec("a"))
    with open(tmp_path / "c" / "episodes.jsonl", "ab") as f:  # a line the stream never saw
        f.write(rec("b").model_dump_json().encode() + b"\n")
    s.mark_done({"total": 2, "ok": 2})
    s.close()
    assert [r["task_id"] for r in read_jsonl(tmp_path / "c" / "episodes.jsonl")[0]] == ["a", "b"]
    assert not (tmp_path / "c" / "episodes.jsonl").exists()


def test_compact_level_sets_the_xz_preset(tmp_path):
    out = {}
    for level in (0, 6):
        s = CellStore(tmp_path / str(level), "c").open({"config": {}})
        s.compact_as_written(level)
        for i in range(40):
            s.append(
                EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=0, status="ok", hygiene=[f"note {i} " * (i % 7)])
            )
        s.mark_done({"total": 40, "ok": 40})
        s.close()
        out[level] = (tmp_path / str(level) / "c" / "episodes.jsonl.xz").read_bytes()
    assert lzma.decompress(out[0]) == lzma.decompress(out[6]) and out[0] != out[6]


def test_the_fallback_compaction_writes_the_cells_preset_and_the_default_is_the_configs(tmp_path):
    """A stream that missed a line falls back to compacting the plain file: at the preset the cell
    was given (`compact_as_written(level)`), not a fixed one. The store's default preset is the
    one conf/runner/default.yaml sets."""
    from pathlib import Path

    import yaml

    from runners.records.store import XZ_LEVEL, xz_filters

    conf = yaml.safe_load((Path(__file__).resolve().parents[2] / "conf/runner/default.yaml").read_text())
    assert conf["compact_level"] == XZ_LEVEL
    out = {}
    for level in (0, 6):
        s = CellStore(tmp_path / str(level), "c").open({"config": {}})
        s.compact_as_written(level)
        for i in range(40):
            s.append(
                EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=0, status="ok", hygiene=[f"n {i} " * (i % 7)])
            )
        with open(tmp_path / str(level) / "c" / "episodes.jsonl", "ab") as f:  # a line the stream never saw
            f.write(rec("extra").model_dump_json().encode() + b"\n")
        plain = (tmp_path / str(level) / "c" / "episodes.jsonl").read_bytes()
        s.mark_done({"total": 41, "ok": 41})
        s.close()
        out[level] = (tmp_path / str(level) / "c" / "episodes.jsonl.xz").read_bytes()
        assert lzma.decompress(out[level]) == plain
        assert out[level] == lzma.compress(plain, format=lzma.FORMAT_XZ, filters=xz_filters(level))
    assert out[0] != out[6]


def manifest(sha):
    return {
        "config": {},
        "benchmark_notes": {"text_sources": {"prompts": {"policy": {"source": "upstream", "text_sha256": sha}}}},
    }


def test_an_idle_open_still_refuses_other_texts_and_serves_the_text_check(tmp_path):
    from runners.records.store import TextSourceMismatch, finished_texts

    s = CellStore(tmp_path, "c").open(manifest("abc"))
    for t in ("a", "b"):
        r = rec(t)
        r.texts = s.texts
        s.append(r)
    s.mark_done({"total": 2, "ok": 2})
    s.close()
    d = tmp_path / "c"
    assert finished_texts(d) == [{"status": "ok", "texts": {"benchmark:policy": "upstream:abc"}}] * 2  # from the index
    with pytest.raises(TextSourceMismatch, match="other model-facing texts"):
        CellStore(tmp_path, "c").open(manifest("xyz"), expect=[("a", 0)])
    assert '"text_sha256": "abc"' in (d / "manifest.json").read_text()  # not rewritten
    s = CellStore(tmp_path, "c").open(manifest("abc"), expect=[("a", 0)])
    assert s.idle
    s.close()
