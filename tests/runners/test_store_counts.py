"""What the store counts as finished, on records written as a crash, a copy or a shard leaves them
(files on disk, no store opened over them): a (task, trial) is finished once, and only when its
record is `ok`; an errored one is run again."""

import json

from runners.records.schema import EpisodeRecord
from runners.records.store import finished_keys, load_cell


def line(task: str, trial: int = 0, status: str = "ok", **extra) -> str:
    rec = json.loads(EpisodeRecord(cell="c", task_id=task, trial=trial, seed=0, status=status).model_dump_json())
    return json.dumps({**rec, **extra}) + "\n"


def test_an_errored_record_is_not_finished(tmp_path):
    (tmp_path / "episodes.jsonl").write_text(
        line("a") + line("b", status="infra_error") + line("c", status="harness_error")
    )
    assert finished_keys(tmp_path) == {("a", 0)}


def test_a_record_stored_twice_is_loaded_once(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"config": {}, "trials": 2}))
    first, again = line("a", scores={"success": 1}), line("a", scores={"success": 0})  # a resume after a lost index
    (tmp_path / "episodes.jsonl").write_text(first + line("a", trial=1) + again + line("b"))
    _, records = load_cell(tmp_path)
    assert sorted((r["task_id"], r["trial"]) for r in records) == [("a", 0), ("a", 1), ("b", 0)]
    assert next(r for r in records if (r["task_id"], r["trial"]) == ("a", 0))["scores"] == {"success": 1}  # the first
