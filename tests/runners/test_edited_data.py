"""A data file edited between runs: a resume refuses before any work, naming the file and the
fixes, and leaves manifest and records untouched (the data are treated like the model-facing
texts); runner.fresh=true re-runs the cell on the new data."""

from __future__ import annotations

import json
import shutil

from runners.records.store import MANIFEST, data_fingerprint, data_mismatch
from tests.runners.sweep_helpers import REPO, cell_records, run_sweep


def test_a_resume_on_edited_data_refuses_naming_the_file_and_fresh_reruns(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(
        REPO / "benchmarks" / "memoryarena" / "fixtures" / "formal_reasoning_math", data / "formal_reasoning_math"
    )
    f = data / "formal_reasoning_math" / "data.jsonl"
    args = (
        "method=full_context",
        "benchmark=memoryarena_math",
        f"benchmark.params.data_dir={data}",
        "experiment.name=exp",
    )
    out = tmp_path / "out"
    p = run_sweep(out, *args, "runner.limit=1")
    assert p.returncode == 0, p.stderr[-2000:]
    (cell,) = (out / "exp").glob("full_context__*")
    manifest = json.loads((cell / "manifest.json").read_text())
    assert data_fingerprint(manifest["benchmark_notes"]) == {str(f): manifest["benchmark_notes"]["data"]["sha256"]}
    before = {n: (cell / n).read_bytes() for n in ("manifest.json", "episodes.jsonl.zst")}

    lines = f.read_text().splitlines()
    lines[-1] = lines[-1].replace("a", "b", 1)  # a later task's row edited: the finished episode's row is the same
    f.write_text("\n".join(lines) + "\n")
    for extra in ("runner.limit=2", "runner.limit=1"):  # a resume with work left, and a re-run of the finished cell
        p = run_sweep(out, *args, extra)
        err = p.stdout + p.stderr
        assert p.returncode != 0 and "Traceback" not in err
        assert f"ran on other data than this run would read ({f}: sha256" in err, err[-2000:]
        assert "runner.fresh=true" in err and "experiment.name=" in err and "Nothing was run" in err
        assert {n: (cell / n).read_bytes() for n in before} == before  # manifest and records untouched

    p = run_sweep(out, *args, "runner.limit=2", "runner.fresh=true")
    assert p.returncode == 0, p.stderr[-2000:]
    manifest = json.loads((cell / "manifest.json").read_text())
    assert (
        manifest["benchmark_notes"]["data"]["sha256"]
        != json.loads(before["manifest.json"])["benchmark_notes"]["data"]["sha256"]
    )
    assert len(cell_records(cell)) == 2


def test_data_fingerprint_reads_paths_and_maps_of_hashes_but_not_texts():
    notes = {
        "data": {"path": "/d/a.jsonl", "sha256": "1" * 64},
        "files": {"sha256": {"tasks.json": "2" * 64}},
        "text_sources": {"prompts": {"p": {"sha256": "3" * 64, "text_sha256": "4" * 64}}},
    }
    assert data_fingerprint(notes) == {"/d/a.jsonl": "1" * 64, "files/tasks.json": "2" * 64}


def test_data_mismatch_names_a_changed_or_vanished_file_and_passes_same_or_unrecorded_data(tmp_path):
    store = tmp_path / "cell"
    store.mkdir()
    before = {"a.jsonl": "1" * 64, "b.jsonl": "2" * 64}
    notes = {"files": [{"path": k, "sha256": v} for k, v in before.items()]}
    (store / MANIFEST).write_text(json.dumps({"benchmark_notes": notes}))
    assert data_mismatch("c", [store], dict(before)) is None
    assert data_mismatch("c", [store], {}) is None  # this run records no data hash: nothing to compare
    assert data_mismatch("c", [tmp_path / "no-manifest"], {"a.jsonl": "9" * 64}) is None
    changed = data_mismatch("c", [store], {"a.jsonl": "9" * 64, "b.jsonl": "2" * 64})
    assert changed and "a.jsonl: sha256 111111111111… then, 999999999999… now" in changed and "b.jsonl" not in changed
    gone = data_mismatch("c", [store], {"a.jsonl": "1" * 64})
    assert gone and "b.jsonl: read then, not now" in gone
