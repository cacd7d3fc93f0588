"""Report page load at scale: `python -m scripts.perf.report_load [--episodes 100 10000 100000] [--repeats 3]
[--parts-above N] [--against DIR]`.

Makes a real sweep's experiment of each requested size (`scripts/perf/real_experiment.py`: distinct
tasks and texts, a transcript per episode; `--experiments DIR` keeps them), builds the report of
each with `python -m runners.view` as a whole process (wall, CPU, peak RSS; the page's size and that
of its parts folder, `report.files/`, where the episodes' details go above `--parts-above`
episodes, default the view's own), and opens it in headless Chromium (playwright driving the
system's chromium): the time until the page is interactive (navigation start → the viewer's ready
mark, and the page's own `performance.now()` at that mark), the time to open one episode (decode +
render; with parts, reading its part file too), to apply a filter over all episodes and to turn to
the last page of the episode list. Every size is measured in the same run; prints medians side by
side. `--against DIR`: another checkout's `runners.view` builds and is loaded on the same
experiments too, right after this one's (without `--parts-above`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from runners.records.store import read_jsonl

REPO = Path(__file__).resolve().parents[2]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def measure(report: Path, repeats: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    ready, inner, open_ep, filt, last_page = [], [], [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        for _ in range(repeats):
            page = browser.new_page()
            t0 = time.perf_counter()
            page.goto(report.as_uri())
            page.wait_for_selector("body[data-ready-ms]")
            ready.append(time.perf_counter() - t0)
            inner.append(
                float(cast(str, page.get_attribute("body", "data-ready-ms"))) / 1000
            )  # present: waited for above
            page.click("nav button[data-tab=episodes]")
            t0 = time.perf_counter()
            page.click("#ep-list tr.click >> nth=3")
            page.wait_for_selector("#ep-detail[data-loaded='3'] .episode")
            open_ep.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            page.fill("#f-task", "-7")  # the list is refreshed synchronously on input
            page.evaluate("() => document.querySelector('#ep-count').textContent")
            filt.append(time.perf_counter() - t0)
            page.fill("#f-task", "")
            if page.query_selector("#page-last"):  # one page of episodes has no pager
                t0 = time.perf_counter()
                page.click("#page-last")  # the list is redrawn synchronously on click
                last_page.append(time.perf_counter() - t0)
                assert page.input_value("#page-no") == page.get_attribute("#page-no", "max")
            page.close()
        browser.close()
    med = statistics.median
    return {
        "ready_s": med(ready),
        "page_ready_s": med(inner),
        "open_episode_s": med(open_ep),
        "filter_s": med(filt),
        "pages_s": med(last_page) if last_page else float("nan"),
    }


def build(exp: Path, out: Path, parts_above: int | None, code: Path = REPO) -> dict[str, float]:
    """`python -m runners.view EXP --out OUT` as a whole process with `code`'s harness: wall, CPU and
    peak RSS; the page's size and that of its parts folder (if any)."""
    from scripts.perf.analysis import timed

    cmd = [sys.executable, "-m", "runners.view", str(exp), "--out", str(out)]
    wall, rss, cpu = timed(cmd + (["--parts-above", str(parts_above)] if parts_above is not None else []), code)
    files = out.with_name(out.name.removesuffix(".html") + ".files")  # runners.analysis.report.parts_dir
    parts = sum(f.stat().st_size for f in files.iterdir()) if files.is_dir() else 0
    return {"wall": wall, "cpu": cpu, "rss": rss, "html": out.stat().st_size, "parts": parts}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, nargs="*", default=[100, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts-above", type=int, default=None, help="passed to runners.view (default: its own)")
    ap.add_argument(
        "--against", type=Path, help="another checkout's runners.view, built and loaded on the same experiments"
    )
    ap.add_argument(
        "--experiments", type=Path, help="where the real experiments are made once and kept (default: a temp dir)"
    )
    a = ap.parse_args(argv)
    codes = {"this": REPO} | ({"against": a.against.resolve()} if a.against else {})
    print(f"load average before: {os.getloadavg()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for n in a.episodes:
            from scripts.perf.real_experiment import real_experiment

            exp = real_experiment(a.experiments or root, n)
            n_eps = sum(len(read_jsonl(c / "episodes.jsonl")[0]) for c in exp.iterdir() if (c / "DONE").exists())
            for label, code in codes.items():
                report = root / label / f"report{n}.html"
                report.parent.mkdir(exist_ok=True)
                b = build(exp, report, a.parts_above if label == "this" else None, code)
                rows.append((label, n_eps, b, measure(report, a.repeats)))
                print(f"{label}: {n_eps} episodes measured, load average {os.getloadavg()}", flush=True)
                report.unlink()
                shutil.rmtree(report.with_name(f"report{n}.files"), ignore_errors=True)
            if a.experiments is None:
                shutil.rmtree(exp)  # the next size needs the disk more
    print(f"load average after: {os.getloadavg()}")
    print(
        f"{'code':>7} {'episodes':>9} {'build s':>8} {'CPU s':>6} {'RSS MB':>7} {'page MB':>8} {'parts MB':>9} "
        f"{'load→ready s':>13} {'page ready s':>13} {'open episode s':>15} {'filter s':>9} {'last page s':>12}"
    )
    for label, n, b, m in rows:
        print(
            f"{label:>7} {n:>9} {b['wall']:>8.2f} {b['cpu']:>6.2f} {b['rss']:>7.0f} {b['html'] / 1e6:>8.1f} "
            f"{b['parts'] / 1e6:>9.1f} "
            f"{m['ready_s']:>13.2f} {m['page_ready_s']:>13.2f} {m['open_episode_s']:>15.3f} {m['filter_s']:>9.3f} "
            f"{m['pages_s']:>12.3f}"
        )
    mine = [r for r in rows if r[0] == "this"]
    if len(mine) > 1:
        (_, n0, _, m0), (_, n1, _, m1) = mine[0], mine[-1]
        print(
            f"load→ready {n1} vs {n0} episodes: {m1['ready_s'] / m0['ready_s']:.1f}×; "
            f"opening an episode: {m1['open_episode_s'] / m0['open_episode_s']:.1f}× "
            f"(medians of {a.repeats})"
        )
    for label, n, b, m in rows:
        if label == "against":
            _, _, bt, mt = next(r for r in rows if r[0] == "this" and r[1] == n)
            print(
                f"at {n} episodes, against / this: build {b['wall'] / bt['wall']:.2f}× wall, "
                f"{b['cpu'] / bt['cpu']:.2f}× CPU; load→ready {m['ready_s'] / mt['ready_s']:.2f}×; open episode "
                f"{m['open_episode_s'] / mt['open_episode_s']:.2f}×"
            )


if __name__ == "__main__":
    main()
