"""One text source per cell: every episode record carries the fingerprint of the model-facing texts
it ran on; a resume (or a re-run of a finished cell) whose texts differ refuses before any work and
names both fixes, leaving manifest and records untouched; `runner.fresh=true` re-runs on the new
source; tables mark a cell whose counted episodes ran on different texts [mixed]."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from runners.records.store import text_fingerprint
from tests.conftest import upstream_src
from tests.runners.sweep_helpers import REPO, cell_records


def sweep(out: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        f"runner.output_dir={out}",
        "runner.display=none",
        "benchmark=clindiag",
        "benchmark.params.data_dir=fixtures",
        "method=full_context",
        "experiment.name=ts",
        "runner.compact_records=false",
        *extra,
    ]
    return subprocess.run(
        cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **env}, capture_output=True, text=True, timeout=300
    )


def test_mixed_source_resume_refuses_and_fresh_reruns(tmp_path):
    online = {"HARNESS_UPSTREAM_DIR": str(upstream_src()), "HARNESS_UPSTREAM_OFFLINE": "1"}
    b3 = upstream_src().parent / "paper-text" / "flowstate_b3.txt"  # Full Context's layout (kit/b3.py)
    if b3.is_file():
        online["HARNESS_FLOWSTATE_B3"] = str(b3)
    offline = {
        "HARNESS_UPSTREAM_DIR": str(tmp_path / "none"),
        "HARNESS_UPSTREAM_OFFLINE": "1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    out = tmp_path / "r"
    p = sweep(out, offline, "runner.limit=1")
    assert p.returncode == 0, p.stderr[-3000:]
    cell = next((out / "ts").glob("full_context__*"))
    manifest = json.loads((cell / "manifest.json").read_text())
    recs = cell_records(cell)
    assert manifest["benchmark_notes"]["text_sources"]["paraphrased"]  # offline: the project's wording
    assert recs and all(r["texts"] == text_fingerprint(manifest) for r in recs)
    assert any(v.startswith("paraphrase:") for v in recs[0]["texts"].values())

    before = {n: (cell / n).read_bytes() for n in ("manifest.json", "episodes.jsonl")}
    for extra in (
        ("runner.limit=2",),
        ("runner.limit=1",),
    ):  # a resume with work left, and a re-run of the finished cell
        p = sweep(out, online, *extra)
        assert p.returncode != 0
        err = p.stderr + p.stdout
        assert "runner.fresh=true" in err and "HARNESS_UPSTREAM_DIR" in err and "Nothing was run" in err, err[-2000:]
        assert "HARNESS_FLOWSTATE_B3" in err  # the B.3 switch is named too
        assert {n: (cell / n).read_bytes() for n in before} == before  # manifest and records untouched

    p = sweep(out, online, "runner.limit=1", "runner.fresh=true")
    assert p.returncode == 0, p.stderr[-3000:]
    manifest = json.loads((cell / "manifest.json").read_text())
    assert manifest["benchmark_notes"]["text_sources"]["paraphrased"] == []
    assert all(r["texts"] == text_fingerprint(manifest) for r in cell_records(cell))
    assert all(
        not v.startswith("paraphrase:")
        for v in cell_records(cell)[0]["texts"].values()
        if v.startswith(("upstream", "paraphrase"))
    )


def test_tables_mark_a_cell_with_mixed_texts(tmp_path):
    from runners.analysis.tables import aggregate_dir

    env = {"HARNESS_UPSTREAM_DIR": str(upstream_src()), "HARNESS_UPSTREAM_OFFLINE": "1"}
    out = tmp_path / "r"
    p = sweep(out, env, "runner.limit=2")
    assert p.returncode == 0, p.stderr[-3000:]
    cell = next((out / "ts").glob("full_context__*"))
    lines = (cell / "episodes.jsonl").read_text().splitlines()
    aggregate_dir(out / "ts", out=io.StringIO())
    assert "[mixed]" not in (out / "ts" / "tables" / "summary.md").read_text()
    first = json.loads(lines[0])
    key = next(iter(first["texts"]))
    first["texts"][key] = "paraphrase:" + "0" * 64  # as if this episode had run offline
    (cell / "episodes.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    aggregate_dir(out / "ts", out=io.StringIO())
    summary = next((out / "ts" / "tables").glob("summary.md")).read_text()
    assert "[mixed]" in summary and "runner.fresh=true re-runs the cell on one" in summary


def test_failed_download_falls_back_loudly(monkeypatch, tmp_path, capsys):
    import runners.upstream as up

    monkeypatch.setattr(
        up, "RAW_URL", "http://127.0.0.1:9/{repo}/{commit}/{path}"
    )  # nothing listens: connection refused
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("HARNESS_UPSTREAM_OFFLINE", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(up, "DOWNLOAD_FAILED", [])  # the first failure of the process is said in full
    sources = up.TextSources()
    f = up.UpstreamFile("PoS", "benchmarks/clindiag_env.py")
    assert sources.string("judge.system", f, "JUDGE_SYSTEM_PROMPT", "our words") == "our words"
    entry = sources.as_manifest()["prompts"]["judge.system"]
    assert entry["source"] == "paraphrase" and entry["reason"].startswith("download of http://127.0.0.1:9/")
    assert sources.paraphrased == ["judge.system"]
    err = capsys.readouterr().err
    assert "warning:" in err and "download of" in err and "[paraphrased]" in err
