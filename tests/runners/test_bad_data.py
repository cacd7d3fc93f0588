"""Bad data files through the sweep CLI: a lone surrogate in task text no longer fails the task
forever (replaced at load, the manifest says so); an empty data file is an error naming it, not
"Nothing to run" with exit 0."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.runners.sweep_helpers import cell_records, record_files, run_sweep

FIXTURES = Path(__file__).resolve().parents[2] / "benchmarks" / "memoryarena" / "fixtures"
ARGS = ("method=full_context", "benchmark=memoryarena_math", "runner.limit=2")


def arena(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "data"
    shutil.copytree(FIXTURES, d)
    return d, d / "formal_reasoning_math" / "data.jsonl"


def test_lone_surrogate_in_task_text_runs_and_is_noted(tmp_path):
    d, f = arena(tmp_path)
    rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    rows[0]["questions"][0] += " \ud800"  # json.dumps writes the valid escape "\ud800"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert "\\ud800" in f.read_text()
    out = tmp_path / "out"
    p = run_sweep(out, *ARGS, f"benchmark.params.data_dir={d}")
    assert p.returncode == 0, p.stderr[-2000:]
    recs = [r for rf in record_files(out) for r in cell_records(rf.parent)]
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert not list(out.rglob("errors.jsonl")) or all(not x.read_text().strip() for x in out.rglob("errors.jsonl"))
    manifest = json.loads(next(out.rglob("manifest.json")).read_text())
    note = manifest["input_hygiene"]
    assert note == {str(f): {"lone_surrogates_replaced": 1, "lines": [1]}}


def test_empty_data_file_is_an_error_naming_it(tmp_path):
    d, f = arena(tmp_path)
    f.write_bytes(b"")
    p = run_sweep(tmp_path / "out", *ARGS, f"benchmark.params.data_dir={d}")
    assert p.returncode == 3 and str(f) in p.stderr and "no rows" in p.stderr, (p.returncode, p.stderr[-1500:])
    assert "Nothing to run" not in p.stdout and "Traceback" not in p.stderr


def test_missing_field_and_garbage_name_file_and_line(tmp_path):
    d, f = arena(tmp_path)
    lines = f.read_text().splitlines()
    row = json.loads(lines[1])
    row.pop("questions")
    f.write_text(lines[0] + "\n" + json.dumps(row) + "\n")
    p = run_sweep(tmp_path / "out", *ARGS, f"benchmark.params.data_dir={d}")
    assert p.returncode == 3 and f"{f}:2: row has no field 'questions'" in p.stderr, p.stderr[-1500:]
    f.write_bytes(lines[0].encode() + b"\n\x89PNG\r\n\x1a\n\x00\xff\n")
    p = run_sweep(tmp_path / "out", *ARGS, f"benchmark.params.data_dir={d}")
    assert p.returncode == 3 and f"{f}:2: not UTF-8 text" in p.stderr and "Traceback" not in p.stderr, p.stderr[-1500:]


async def test_text_made_at_run_time_with_a_lone_surrogate_is_stored_sanitised(tmp_path):
    """A record whose text was made during the episode (a tool output, a score note) holds a lone
    surrogate: it is stored with U+FFFD and a `hygiene` note, never a harness error that every
    resume repeats."""
    import types

    from runners.records.schema import EpisodeRecord
    from runners.records.store import CellStore
    from runners.run import Scheduler

    store = CellStore(tmp_path, "c").open({"config": {}})
    rec = EpisodeRecord(cell="c", task_id="t1", trial=0, seed=0, scores={"note": "tool said \ud800"})
    run = types.SimpleNamespace(transcripts=None, io=None, store=store)  # the parts of a running cell `_store` uses
    stored = await Scheduler._store(types.SimpleNamespace(fold=None), run, rec)  # type: ignore[arg-type]
    store.close()
    assert stored.status == "ok" and stored.scores == {"note": "tool said \ufffd"}
    assert stored.hygiene and stored.hygiene[0].startswith("sanitized: 1 lone surrogate")
    back = [r for f in record_files(tmp_path) for r in cell_records(f.parent)]
    assert [(r["task_id"], r["status"], r["scores"]["note"]) for r in back] == [("t1", "ok", "tool said \ufffd")]
