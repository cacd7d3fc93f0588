"""The tables fold a cell's records as they stream past: a summary keeps a few KB per episode (no
trajectory), so its memory does not grow with the records' size; the report still shows every
episode whole (it reads the records again, one at a time)."""

import json
import tracemalloc

import pytest

from runners.analysis.cells import collect, summarize
from runners.records.store import EPISODES, read_jsonl
from tests.runners.sweep_helpers import run_sweep

N = 300
PAD = 20_000  # characters of trajectory text added to each record


@pytest.fixture(scope="module")
def big_cell(tmp_path_factory):
    out = tmp_path_factory.mktemp("stream")
    p = run_sweep(out, "method=full_context", "benchmark=toy", "experiment.name=stream")
    assert p.returncode == 0, p.stderr[-2000:]
    (cell,) = [d for d in (out / "stream").iterdir() if (d / "manifest.json").exists()]
    recs = read_jsonl(cell / EPISODES)[0]
    ids = []
    with open(cell / EPISODES, "w") as f:  # N episodes, each with a long trajectory
        for i in range(N):
            r = json.loads(json.dumps(recs[i % len(recs)]))
            r["task_id"] = f"{r['task_id']}~{i}"
            r["requests"][0]["request"] = f"padding {i} " + "x" * PAD
            ids.append(r["task_id"])
            f.write(json.dumps(r) + "\n")
    for p in cell.glob("episodes.jsonl.*"):
        p.unlink()
    (cell / "episodes.index.json").unlink(missing_ok=True)
    m = json.loads((cell / "manifest.json").read_text())
    m["task_ids"], m["n_tasks"] = ids, N
    (cell / "manifest.json").write_text(json.dumps(m))
    return out / "stream", cell


def test_a_summary_holds_no_trajectories(big_cell):
    _, cell = big_cell
    summarize(cell)  # modules imported, caches filled: what follows is the summary's own memory
    tracemalloc.start()
    s = summarize(cell)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert s.n_episodes == N and len(s.records) == N
    assert all("request" not in rr for r in s.records for rr in r.get("requests", []))
    # the records' trajectories alone are N x 20 KB: what stays is a few KB per episode, and the
    # peak never holds all the records at once (before streaming both were above N x 20 KB)
    assert held < N * PAD / 3, held
    assert peak < N * PAD / 2, peak
    assert s.records[0]["texts"] is s.records[1]["texts"]  # one object for equal fingerprints


def test_the_report_still_shows_every_episode_whole(big_cell, tmp_path):
    from runners.analysis.report import gather, unpack

    exp, _ = big_cell
    (cs,) = collect(exp)
    index, blocks = gather(exp)
    payloads = unpack(index, blocks)
    assert len(index["episodes"]) == N == len(payloads)
    assert cs.n_episodes == N
    first = payloads[0]
    assert first["record"]["requests"][0]["request"].endswith("x" * PAD)
