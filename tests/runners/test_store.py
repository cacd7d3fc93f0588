"""Results store: torn tails, corrupt lines, no duplicates, one writer per cell."""
import json

import pytest

from runners.episode import EpisodeRecord
from runners.store import CellStore, StoreError, load_cell, repair_tail


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
    assert "benchmarks.gone.Gone" in err and "re-run the sweep" in err


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
