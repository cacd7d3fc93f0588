"""Run the perf benchmarks in scripts/perf/ in turn (`make perf`), then a summary table: every goal
beside what this run measured (each line a benchmark printed with its target), the load average
at the time, and the goals of the whole-process benchmarks beside their last measurement (from
scripts/perf/README.md, with the command, load and date). Not run here: `inspect_compare` (it
makes its own inspect_ai venv, a download, and runs ~5 minutes), nor the whole-process ones that
run minutes each (`tail`, `processes`, `analysis`, `report_load`, `resume`, `compact_levels`,
`profile_sweep`, `real_experiment`): run those on their own."""

import contextlib
import importlib
import io
import os
import re
import sys
import typing

FAST = (
    "harness",
    "transport",
    "recorder",
    "concurrency",
    "methods",
    "flowstate_overhead",
    "memory_latency",
    "shopping_catalogue",
)

# The whole-process goals (scripts/perf/README.md, "Memory flat in the number of episodes"): goal,
# last measurement, its command, load average and date. Update them with the README.
LONG_GOALS = [
    (
        "records on disk while a cell runs ≤ 1.5× final",
        "1.15× (52.1 MB peak, 45.2 MB final, 10,000 episodes)",
        "python -m scripts.perf.real_experiment --episodes 10000 --out DIR",
        "11.3",
        "2026-12-06",
    ),
    (
        "runners.aggregate at 10,000 real episodes: ≤ 2 s CPU, ≤ 300 MB",
        "1.79, 1.82 s CPU, 112, 111 MB (main beside it: 2.53, 2.62 s, 246, 245 MB); ~4.5 KB more per episode",
        "/usr/bin/time python -m runners.aggregate EXP (EXP: real_experiment --episodes 10000)",
        "13.6–11.1",
        "2026-12-06",
    ),
    (
        "runners.view at 10,000 real episodes: ≤ 5 s CPU, ≤ 300 MB, page ≤ 50 MB",
        "15.96, 14.58 s CPU, 371, 368 MB (main: 16.52, 16.59 s, 373, 376 MB); page 0.7 MB (2026-12-05: 215 MB)",
        "/usr/bin/time python -m runners.view EXP (EXP: real_experiment --episodes 10000)",
        "5.0–3.5",
        "2026-12-06",
    ),
    (
        "the sweep at 10,000 episodes: peak RSS ≤ 300 MB",
        "231 MB (earlier on 2026-12-06: 353 MB; 2026-12-05: 974 MB)",
        "python -m scripts.perf.tail --episodes 10000 --concurrency 256 --repeats 1",
        "11–16",
        "2026-12-06",
    ),
    (
        "the sweep at 10,000 episodes: first request → exit / window ≥ 0.98",
        "0.98 (0.977; tail 9.1 s; 2026-12-05: 0.945)",
        "python -m scripts.perf.tail --episodes 10000 --concurrency 256 --repeats 1",
        "11–16",
        "2026-12-06",
    ),
    (
        "harness CPU per call ≤ 0.4 ms (quiet 2 cores)",
        "0.97 ms against main's 1.25 ms (0.78×), loaded",
        "python -m scripts.perf.tail --episodes 512 --concurrency 128 --repeats 3 --against MAIN",
        "8.9–9.0",
        "2026-12-06",
    ),
]


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
    for goal, got, cmd, load, date in LONG_GOALS:
        print(f"| {goal} | {got} | `{cmd}` | {load} | {date} |")


if __name__ == "__main__":
    main()
