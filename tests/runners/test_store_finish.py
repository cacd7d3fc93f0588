"""Finishing a cell and opening it again: records compressed a chunk at a time while the cell runs (finishing
compresses the last chunk; a kill at any point loses nothing), and a finished cell opened with nothing to
run is neither restored nor scanned (`episodes.index.json`); anything else takes the full path."""

import os

import pytest

from runners.records.schema import EpisodeRecord
from runners.records.store import CellStore, StoreError, read_jsonl
from tests.runners.sweep_helpers import unzstd


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
    xz = d / "episodes.jsonl.zst"
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
    xz = d / "episodes.jsonl.zst"
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


def prose(i, chars=20_000):
    """A record's worth of text as compressible as a model's (a 600-word vocabulary, seeded)."""
    import random

    rng = random.Random(i)
    vocab = [f"w{k}{'abcdefgh'[k % 8] * (k % 5)}" for k in range(600)]
    return " ".join(rng.choice(vocab) for _ in range(chars // 6))


def test_records_compressed_as_written_make_the_same_lines(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    lines = []
    for i in range(60):
        r = EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=0, status="ok", error=prose(i, 3000))
        s.append(r)
        lines.append(r.model_dump_json().encode() + b"\n")
    d = tmp_path / "c"
    assert (d / "episodes.jsonl.zst").exists()  # chunks compressed meanwhile
    assert len((d / "episodes.jsonl").read_bytes()) < sum(map(len, lines)) // 2  # and dropped from the plain file
    s.mark_done({"total": 60, "ok": 60})
    s.close()
    assert not (d / "episodes.jsonl").exists()
    assert unzstd(d / "episodes.jsonl.zst") == b"".join(lines)


def test_the_disk_holds_at_most_one_and_a_half_times_the_final_records(tmp_path):
    """While a cell of 300 episodes runs, its records on disk (plain chunk + compressed frames) never
    exceed 1.5x what they come to, and the plain file never holds more than a chunk."""
    from runners.records.store import CHUNK_MIN

    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    d = tmp_path / "c"
    peak = plain_peak = 0
    for i in range(300):
        s.append(EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=0, status="ok", error=prose(i)))
        sizes = [p.stat().st_size for p in (d / "episodes.jsonl", d / "episodes.jsonl.zst") if p.exists()]
        peak, plain_peak = max(peak, sum(sizes)), max(plain_peak, (d / "episodes.jsonl").stat().st_size)
    s.mark_done({"total": 300, "ok": 300})
    s.close()
    final = (d / "episodes.jsonl.zst").stat().st_size
    assert final > 4 * CHUNK_MIN  # a cell past its first chunks
    assert peak <= 1.5 * final, (peak, final)
    assert plain_peak < 300 * 20_000 // 10  # a tenth of the plain records at most (chunks, not the whole file)
    assert len(read_jsonl(d / "episodes.jsonl")[0]) == 300


@pytest.mark.parametrize("extra", [b"", b"hand"])
def test_a_kill_between_compressing_a_chunk_and_emptying_the_plain_file(tmp_path, extra):
    """The chunk's lines are in both files: read once, and the next open leaves them only in the
    compressed file (no duplicate set aside); a line added by hand to the plain file stays."""
    from runners.records.store import append_frame

    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "ab":
        s.append(rec(t))
    s.close()
    d = tmp_path / "c"
    plain = (d / "episodes.jsonl").read_bytes()
    append_frame(d / "episodes.jsonl.zst", plain, 3)
    if extra:
        with open(d / "episodes.jsonl", "ab") as f:
            f.write(rec("hand").model_dump_json().encode() + b"\n")
    want = ["a", "b"] + (["hand"] if extra else [])
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == want
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.close()
    assert s.duplicates == 0 and s.done == {(t, 0) for t in want}
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == want
    assert unzstd(d / "episodes.jsonl.zst") == plain
    assert len((d / "episodes.jsonl").read_bytes().splitlines()) == (1 if extra else 0)


def test_a_kill_while_appending_a_frame_cuts_it_off_and_loses_nothing(tmp_path):
    from runners.records.store import append_frame

    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "ab":
        s.append(rec(t))
    s.close()
    d = tmp_path / "c"
    first = (d / "episodes.jsonl").read_bytes()
    append_frame(d / "episodes.jsonl.zst", first, 3)
    (d / "episodes.jsonl").write_bytes(b"")  # the first chunk done
    whole = (d / "episodes.jsonl.zst").read_bytes()
    s = CellStore(tmp_path, "c").open({"config": {}})
    for t in "cd":
        s.append(rec(t))
    s.close()
    second = (d / "episodes.jsonl").read_bytes()
    append_frame(d / "episodes.jsonl.zst", second, 3)
    with open(d / "episodes.jsonl.zst", "r+b") as f:  # killed halfway through the second frame
        f.truncate(len(whole) + (f.seek(0, 2) - len(whole)) // 2)
    assert [r["task_id"] for r in read_jsonl(d / "episodes.jsonl")[0]] == ["a", "b", "c", "d"]
    s = CellStore(tmp_path, "c").open({"config": {}})
    assert s.done == {(t, 0) for t in "abcd"} and s.duplicates == 0 and s.corrupt == 0 and not s.warnings
    assert (d / "episodes.jsonl.zst").read_bytes() == whole  # the torn frame cut off
    s.mark_done({"total": 4, "ok": 4})
    s.close()
    assert unzstd(d / "episodes.jsonl.zst") == first + second


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


def test_a_part_file_an_earlier_version_left_is_removed(tmp_path):
    s = CellStore(tmp_path, "c").open({"config": {}})
    s.compact_as_written()
    s.append(rec("a"))
    s.close()  # interrupted before the end: the plain file is the records
    d = tmp_path / "c"
    (d / ".episodes.jsonl.xz.part.99999").write_bytes(b"\xfd7zXZ half")  # what a SIGKILL left before zstd
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


def test_compact_level_sets_the_zstd_level_and_the_default_is_the_configs(tmp_path):
    from pathlib import Path

    import yaml

    from runners.records.store import ZSTD_LEVEL

    conf = yaml.safe_load((Path(__file__).resolve().parents[2] / "conf/runner/default.yaml").read_text())
    assert conf["compact_level"] == ZSTD_LEVEL
    out = {}
    for level in (1, 19):
        s = CellStore(tmp_path / str(level), "c").open({"config": {}})
        s.compact_as_written(level)
        for i in range(40):
            s.append(EpisodeRecord(cell="c", task_id=f"t{i}", trial=0, seed=0, status="ok", error=prose(i, 2000)))
        s.mark_done({"total": 40, "ok": 40})
        s.close()
        out[level] = (tmp_path / str(level) / "c" / "episodes.jsonl.zst").read_bytes()
    assert unzstd(tmp_path / "1" / "c" / "episodes.jsonl.zst") == unzstd(tmp_path / "19" / "c" / "episodes.jsonl.zst")
    assert len(out[19]) < len(out[1])


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
