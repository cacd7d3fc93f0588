"""Analysis at scale: `python -m scripts.perf.analysis [--episodes 1000 10000] [--repeats 3] [--against DIR]`.

Makes a real sweep's experiment of each size (`scripts/perf/real_experiment.py`: distinct tasks
and texts, ~33 KB records compressed as the sweep compresses them, a transcript per episode;
`--experiments DIR` keeps them for the next run), then times, as whole processes,
`python -m runners.aggregate EXP` (cold: the table cache removed first) and
`python -m runners.view EXP` at every size, the sizes alternating inside each repeat. With
`--against DIR` the same commands run with another checkout's code on the same experiments, in the
same rounds. Prints medians, the peak RSS of each process, the load average before and after, and
the linearity ratio t(largest) / (size ratio × t(smallest)) (target ≤ 1.3).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.perf.real_experiment import real_experiment

REPO = Path(__file__).resolve().parents[2]


def timed(cmd: list[str], code: Path) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds: user + system) of one process running `cmd` with
    `code` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        assert p.stderr is not None
        raise RuntimeError(f"{' '.join(cmd)} failed: {p.stderr.read().decode()[-2000:]}")
    assert p.stderr is not None
    p.stderr.close()
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def commands(exp: Path, out: Path) -> dict[str, list[str]]:
    return {
        "aggregate": [sys.executable, "-m", "runners.aggregate", str(exp)],
        "view": [sys.executable, "-m", "runners.view", str(exp), "--out", str(out)],
    }


def clear_cache(exp: Path) -> None:
    for f in (exp / "tables").glob(".cache*"):
        f.unlink()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout measured on the same experiments in the same rounds")
    ap.add_argument("--only", choices=["aggregate", "view"], help="time one command only")
    ap.add_argument(
        "--experiments", type=Path, help="where the real experiments are made once and kept (default: a temp dir)"
    )
    a = ap.parse_args(argv)
    codes = {"this": REPO} | ({"against": a.against.resolve()} if a.against else {})
    times: dict[tuple[str, str, int], list[tuple[float, float, float]]] = {}
    pages: dict[tuple[str, int], tuple[float, float]] = {}  # the view's page and parts folder, MB
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        exps = {n: real_experiment(a.experiments or root, n) for n in a.episodes}
        for r in range(a.repeats):
            for n, exp in exps.items():
                for label, code in codes.items():
                    for what, cmd in commands(exp, root / f"report{n}.html").items():
                        if a.only and what != a.only:
                            continue
                        clear_cache(exp)
                        times.setdefault((label, what, n), []).append(timed(cmd, code))
                        if what == "view":
                            page = root / f"report{n}.html"
                            files = page.with_name(f"report{n}.files")
                            parts = sum(f.stat().st_size for f in files.iterdir()) if files.is_dir() else 0
                            pages[label, n] = (page.stat().st_size / 1e6, parts / 1e6)
            print(f"round {r + 1}/{a.repeats} done, load average {os.getloadavg()}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    print(
        f"\n{'code':>8} {'command':>10} {'episodes':>9} {'median s':>9} {'runs s':>24} {'CPU s':>7} {'peak RSS MB':>12}"
    )
    for (label, what, n), runs in times.items():
        print(
            f"{label:>8} {what:>10} {n:>9} {med(w for w, _, _ in runs):>9.2f} "
            f"{', '.join(f'{w:.2f}' for w, _, _ in runs):>24} "
            f"{med(c for _, _, c in runs):>7.2f} {max(m for _, m, _ in runs):>12.0f}"
        )
    for (label, n), (page_mb, parts_mb) in pages.items():
        print(f"{label} view at {n}: page {page_mb:.1f} MB, parts folder {parts_mb:.1f} MB (target: page ≤ 50 MB)")
    sizes = sorted(a.episodes)
    if len(sizes) > 1:
        lo, hi = sizes[0], sizes[-1]
        for label in codes:
            for what in ("aggregate", "view"):
                if (label, what, lo) in times:
                    for i, unit in ((0, "wall"), (2, "CPU")):
                        t_lo, t_hi = (
                            med(r[i] for r in times[label, what, lo]),
                            med(r[i] for r in times[label, what, hi]),
                        )
                        print(
                            f"{label} {what} ({unit}): {hi} vs {lo} episodes {t_hi / t_lo:.2f}× the time "
                            f"for {hi / lo:.0f}× the data; "
                            f"t({hi}) / ({hi / lo:.0f} × t({lo})) = {t_hi / (hi / lo * t_lo):.2f} (target ≤ 1.3)"
                        )
    if a.against:
        for what in ("aggregate", "view"):
            for n in sizes:
                if ("this", what, n) in times:
                    for i, unit in ((0, "wall"), (2, "CPU")):
                        t, o = med(r[i] for r in times["this", what, n]), med(r[i] for r in times["against", what, n])
                        print(f"{what} at {n} ({unit}): this {t:.2f} s vs against {o:.2f} s = {o / t:.1f}× less")


if __name__ == "__main__":
    main()
