"""Measuring another checkout's harness side by side (`--against DIR` of the perf scripts): the
script runs itself in a fresh process with `--harness DIR --json`, which imports `runners`,
`kit`, ... from DIR and prints one JSON line whose `harness` names where they came from."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def use(path: str) -> None:
    """Import the harness from `path` (call before any project import)."""
    sys.path.insert(0, str(Path(path).resolve()))


def location() -> str:
    """The checkout the imported harness comes from."""
    import runners

    return str(Path(runners.__file__).resolve().parents[1])


def measure(module: str, path: str, args: list[str], timeout_s: float = 1800) -> dict[str, Any]:
    """Run `python -m <module> --harness <path> --json <args>` and return its JSON line."""
    p = subprocess.run(
        [sys.executable, "-m", module, "--harness", path, "--json", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if p.returncode != 0:
        raise RuntimeError(f"{module} on {path}: {p.stderr[-2000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if out.get("harness") != path:
        raise RuntimeError(f"{module} measured the harness at {out.get('harness')}, not {path}")
    return out
