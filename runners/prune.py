"""Cells that never finished an episode because of a configuration error (a refused key, an
unknown model: a fatal backbone error) are failed tries, not results.

The tables hide them (`runners.analysis.tables.collect`) and list them under the table with how
to remove them; `python -m runners.prune <experiment folder>` (or `runner.prune=failed` on the
sweep's command line, before its run) moves each to `<experiment>/.superseded/<cell>/<time>/`:
nothing is deleted, and the budget (runners/budget.py) still counts what they spent.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from pathlib import Path
from typing import Any

from runners.records.store import ERRORS, MANIFEST, SUPERSEDED, finished_keys, move_aside, read_jsonl, shard_dirs


def config_failure(cell_dir: Path) -> str | None:
    """The configuration error that kept the cell from finishing any episode (its first fatal
    error, one line), or None: the cell finished an episode, or never met such an error."""
    stores = [Path(cell_dir), *shard_dirs(Path(cell_dir))]
    fatal = next(
        (
            str(r.get("error") or "fatal backbone error")
            for d in stores
            for r in read_jsonl(d / ERRORS)[0]
            if r.get("fatal")
        ),
        None,
    )
    if fatal is None or any(finished_keys(d) for d in stores):
        return None
    return fatal.strip().splitlines()[0][:200] if fatal.strip() else "fatal backbone error"


def failed_cells(root: Path) -> dict[str, str]:
    """cell name → its configuration error, for every failed try of the experiment folder `root`."""
    root = Path(root)
    if not root.is_dir():
        return {}
    out = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (d / MANIFEST).exists() or shard_dirs(d):
            why = config_failure(d)
            if why:
                out[d.name] = why
    return out


def hidden_notes(root: Path) -> list[str]:
    """The tables' notes on the failed tries they hide."""
    return [
        f"{cell}: hidden from the tables: it never finished an episode because of a configuration error ({why}). "
        f"Remove it with `python -m runners.prune {root}` (or add runner.prune=failed to the sweep's command); "
        f"its files move to {Path(root) / SUPERSEDED}/"
        for cell, why in failed_cells(root).items()
    ]


def prune_failed(root: Path) -> list[tuple[str, Path]]:
    """Move every failed try of `root` to `<root>/.superseded/<cell>/<time>/`; a cell another sweep is
    writing (its lock is held) is left. Returns (cell, where it went)."""
    root = Path(root)
    moved = []
    for cell in failed_cells(root):
        src = root / cell
        fd = os.open(src / ".lock", os.O_CREAT | os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"warning: {cell}: another sweep is writing it; left in place", file=sys.stderr)
                continue
            dest = move_aside(src)
        finally:
            os.close(fd)
        (src / ".lock").unlink(missing_ok=True)
        try:
            src.rmdir()
        except OSError:
            pass
        if dest is not None:
            moved.append((cell, dest))
    return moved


def report(moved: list[tuple[str, Path]], out: Any = None) -> None:
    for cell, dest in moved:
        print(f"pruned {cell}: it never finished an episode (configuration error); moved to {dest}", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m runners.prune",
        description="Move aside the cells of an experiment that never finished an episode because of a configuration "
        "error (a refused key, an unknown model) to <experiment>/.superseded/; nothing is deleted.",
    )
    ap.add_argument("experiment", type=Path, help="the experiment folder (<output_dir>/<experiment name>)")
    a = ap.parse_args(argv)
    if not a.experiment.is_dir():
        print(f"error: no experiment folder {a.experiment}", file=sys.stderr)
        return 2
    moved = prune_failed(a.experiment)
    report(moved)
    if not moved:
        print(f"no failed cells under {a.experiment}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
