"""Run the perf benchmarks in scripts/perf/ in turn (`make perf`), then a summary table: every goal
beside what this run measured (each line a benchmark printed with its target), the load average
at the time, and the goals of the whole-process benchmarks beside their last measurement (from
scripts/perf/README.md, with the command, load and date). Not run here: `inspect_compare` (it
makes its own inspect_ai venv, a download, and runs ~5 minutes), nor the whole-process ones that
run minutes each (`tail`, `processes`, `analysis`, `report_load`, `resume`, `compact_levels`,
`profile_sweep`, `real_experiment`, `insitu`): run those on their own."""

import contextlib
import importlib
import io
import os
import re
import sys
import typing
from pathlib import Path

FAST = (
    "calibrate",  # first: the machine's speed at this hour, to read the rest against
    "harness",
    "transport",
    "recorder",
    "episode_path",
    "sweep_parts",
    "concurrency",
    "methods",
    "flowstate_overhead",
    "memory_latency",
    "shopping_catalogue",
)

GOALS_HEADING = "## Whole-process goals"
"""The section of scripts/perf/README.md whose table (goal | measured | command | load | date) holds
the whole-process goals and their last measurement: the one place they are written; this script
reads it rather than keeping its own copy."""


def long_goals(readme: Path = Path(__file__).with_name("README.md")) -> list[list[str]]:
    """The rows of the README's whole-process goals table (each: goal, measured, command, load, date)."""
    rows: list[list[str]] = []
    inside = False
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            if inside:
                break
            inside = line.startswith(GOALS_HEADING)
        elif inside and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 5 and cells[0] != "goal" and not set(cells[0]) <= set("-: "):
                rows.append([c.strip("`") if k == 2 else c for k, c in enumerate(cells)])
    if not rows:
        raise SystemExit(
            f"{readme}: no table under {GOALS_HEADING!r}; restore that section (goal | measured | command | load | date"
            ")"
        )
    return rows


class _Tee(io.StringIO):
    """Writes go to every one of `outs`."""

    def __init__(self, *outs: typing.TextIO) -> None:
        super().__init__()
        self.outs = outs

    def write(self, s: str) -> int:
        for o in self.outs:
            o.write(s)
        return len(s)

    def flush(self) -> None:
        for o in self.outs:
            o.flush()


def main() -> None:
    rows: list[tuple[str, str, str]] = []  # benchmark, the line with its target, load average then
    for name in FAST:
        try:
            mod = importlib.import_module(f"scripts.perf.{name}")
        except ImportError as e:
            print(f"== {name}: not available ({e})")
            continue
        print(f"== {name}")
        sys.argv = [name]
        seen = io.StringIO()
        with contextlib.redirect_stdout(_Tee(sys.stdout, seen)):
            mod.main()
        load = f"{os.getloadavg()[0]:.1f}"
        for line in seen.getvalue().splitlines():
            if re.search(r"target", line, re.I):
                rows.append((name, " ".join(line.split()), load))
    print("\n== summary: goal beside measurement (this run)")
    print(f"| {'benchmark':<18} | measured, with its goal | load |\n|---|---|---:|")
    for name, line, load in rows:
        print(f"| {name:<18} | {line} | {load} |")
    print("\n== whole-process goals, last measured (scripts/perf/README.md; run them on their own)")
    print("| goal | measured | command | load | date |\n|---|---|---|---:|---|")
    for goal, got, cmd, load, date in long_goals():
        print(f"| {goal} | {got} | `{cmd}` | {load} | {date} |")


if __name__ == "__main__":
    main()
