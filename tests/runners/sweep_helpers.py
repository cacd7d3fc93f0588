"""Run the sweep CLI as a subprocess, the way users do."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from runners.interrupts import default_sigint

REPO = Path(__file__).resolve().parents[2]


def sweep_cmd(out: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "runners.sweep", f"runner.output_dir={out}", "runner.display=plain", *overrides]


def fake_endpoint(srv) -> tuple[str, ...]:
    """Overrides that point every role at a loopback fake endpoint (tests/fake_openai.py), no key."""
    return (
        "backbone=openai_compatible",
        "backbone.model=fake-model",
        f"backbone.base_url={srv.base_url}",
        "backbone.base_url_env=null",
        "backbone.api_key_env=null",
        "roles.judge=agent",
        "roles.tool=agent",
        "runner.preflight_s=1",
    )


def run_sweep(out: Path, *overrides: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {**os.environ, **(env or {})}
    return subprocess.run(
        sweep_cmd(out, *overrides),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
        preexec_fn=default_sigint,
    )


def metrics_csv(path: Path) -> dict[tuple[str, str, str], float]:
    with open(path, newline="") as f:
        return {
            (r["method"], r["benchmark"], r["metric"]): float(r["value"])
            for r in csv.DictReader(f)
            if r["value"] not in ("", "None")
        }


RECORD_FILES = ("episodes.jsonl", "episodes.jsonl.zst", "episodes.jsonl.xz")


def record_files(root: Path) -> list[Path]:
    """Every cell's records under `root`: plain (`episodes.jsonl`, a running cell's last lines) or
    compressed (`episodes.jsonl.zst`; `episodes.jsonl.xz`, a cell finished before zstd)."""
    return sorted(p for p in Path(root).rglob("episodes.jsonl*") if p.name in RECORD_FILES)


def unzstd(path: Path) -> bytes:
    """The bytes of a `.zst` file of one or more zstd frames (what `zstdcat` prints)."""
    import zstandard

    with open(path, "rb") as f:
        return zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True).read()


def cell_records(cell: Path) -> list[dict]:
    """One cell's records, live or compacted, as the harness reads them (`runners.records.store.read_jsonl`)."""
    from runners.records.store import EPISODES, read_jsonl

    return read_jsonl(Path(cell) / EPISODES)[0]


def records_under(root: Path) -> list[dict]:
    """The records of every cell under `root`."""
    return [r for d in sorted({p.parent for p in record_files(root)}) for r in cell_records(d)]


def decompact(cell: Path) -> Path:
    """A finished cell's records back in the plain `episodes.jsonl`, for a test that edits lines by hand."""
    from runners.records.store import uncompact

    return uncompact(cell)
