"""The cache of an experiment's tables (`tables/.cache.json`): `tables_key` is what the tables of
the whole experiment are a function of (the records' files, the manifests without their run
history, the code fingerprint, the options); when nothing of it changed (a resume with nothing to
run) runners.analysis.tables reads them from the cache and rebuilds only the list of sweeps, which
every run updates, from the manifests (`sweep_cells`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runners.records.store import (
    DONE,
    INDEX,
    MANIFEST,
    atomic_write,
    cell_dirs,
    code_fingerprint,
    shard_dirs,
)


CACHE = ".cache.json"
TABLE_FILES = ("summary.md", "summary.csv", "summary.tex", "metrics.csv")
"""What runners.analysis.tables writes; a cache entry stands for them only while they all exist."""
_UNTRACKED = {
    MANIFEST,
    DONE,
    INDEX,
    ".lock",
}  # the manifest is read without its run history; the rest is not read by the tables


def _dir_fingerprint(h: "hashlib._Hash", d: Path) -> None:
    h.update(b"\0dir\0" + d.name.encode("utf-8", "surrogateescape"))
    mpath = d / MANIFEST
    try:
        raw = mpath.read_bytes()
        try:
            m = json.loads(raw)
            if isinstance(m, dict):
                m.pop("runs", None)  # every resume adds a run; the sweep lines are rebuilt from it each time
            h.update(json.dumps(m, sort_keys=True, default=str).encode())
        except ValueError:
            h.update(raw)
    except FileNotFoundError:
        h.update(b"\0no manifest")
    h.update(b"\0done" if (d / DONE).exists() else b"\0open")
    for f in sorted(d.iterdir()):
        if f.is_file() and f.name not in _UNTRACKED and not f.name.startswith("transcripts."):
            st = f.stat()
            h.update(f"\0{f.name}:{st.st_size}:{st.st_mtime_ns}".encode("utf-8", "surrogateescape"))
    for sub in shard_dirs(d):
        _dir_fingerprint(h, sub)


def tables_key(root: Path, reference: str, with_paper: bool, resamples: int, strict: bool = False) -> str:
    """What the tables of `root` are a function of: every cell's records and error files (size,
    modification time), its manifest without the run history, the code (`code_fingerprint`: the
    benchmarks' metric functions, the tables' code, the papers' values) and the options."""
    h = hashlib.sha256(
        json.dumps(
            {
                "format": 1,
                "code": code_fingerprint(),
                "reference": reference,
                "with_paper": with_paper,
                "resamples": resamples,
                "strict": strict,
            }
        ).encode()
    )
    left_out: list[str] = []  # a symlinked copy or a foreign name appearing changes the warnings
    for d in cell_dirs(root, left_out, every=True):
        _dir_fingerprint(h, d)
    h.update(json.dumps(left_out).encode())
    return h.hexdigest()


def read_cache(tdir: Path, key: str) -> dict[str, Any] | None:
    try:
        hit = json.loads((tdir / CACHE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(hit, dict) or hit.get("key") != key or not all((tdir / f).exists() for f in TABLE_FILES):
        return None
    return hit


def store_cache(tdir: Path, key: str, long: list[dict[str, Any]], warnings: list[str]) -> None:
    md = (tdir / "summary.md").read_text()
    cut = md.rfind("\n\nSweeps the cells came from")
    atomic_write(
        tdir / CACHE,
        json.dumps(
            {"key": key, "md": md[:cut] if cut >= 0 else md.rstrip("\n"), "long": long, "warnings": warnings},
            default=str,
        ),
    )


def sweep_cells(root: Path) -> list[Any]:
    """(cell, sweep) of every cell, from the manifests alone (what the tables' list of sweeps needs)."""
    from types import SimpleNamespace

    out = []
    for d in cell_dirs(root):
        src = d / MANIFEST if (d / MANIFEST).exists() else shard_dirs(d)[0] / MANIFEST
        try:
            m = json.loads(src.read_bytes())
        except (OSError, ValueError):
            m = {}
        runs: list[Any] = m["runs"] if isinstance(m, dict) and isinstance(m.get("runs"), list) else []
        sweep: dict[str, Any] = next(
            (r["sweep"] for r in reversed(runs) if isinstance(r, dict) and isinstance(r.get("sweep"), dict)), {}
        )
        out.append(SimpleNamespace(cell=d.name, sweep=sweep))
    return out
