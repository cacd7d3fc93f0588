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


def compare(module: str, args: list[str], repeats: int, against: str | None, title: str) -> None:
    """`measure` this checkout (and `against`, alternating which goes first) `repeats` times with
    `args`; print `title`, each side's median µs (its `us`) with its runs, and their ratio."""
    import statistics

    sides = {"this checkout": str(REPO)}
    if against:
        sides[against] = str(Path(against).resolve())
    runs: dict[str, list[float]] = {s: [] for s in sides}
    for r in range(repeats):
        for side in list(sides) if r % 2 == 0 else list(reversed(sides)):
            runs[side].append(measure(module, sides[side], args)["us"])
    print(f"{title}, medians of {repeats}:")
    med = {s: statistics.median(v) for s, v in runs.items()}
    for s, m in med.items():
        print(f"  {s:>24}: {m:6.1f} us  (runs: {', '.join(f'{x:.1f}' for x in runs[s])})")
    if against:
        print(f"  {against} / this checkout = {med[against] / med['this checkout']:.2f}x")
