"""Report page load at scale: `python -m scripts.perf.report_load [--episodes 100 10000] [--repeats 3]`.

Runs the offline demo sweep once (Full Context + FlowState on both Formal Reasoning fixtures,
with transcripts), replicates its episodes (fresh task ids, same transcripts) into experiments of
each requested size, builds `report.html` for each, and opens it in headless Chromium (playwright
driving the system's chromium): the time until the page is interactive (navigation start → the
viewer's ready mark, and the page's own `performance.now()` at that mark), the time to open one
episode (decode + render) and to apply a filter over all episodes. Prints medians side by side.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
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


def base_experiment(root: Path) -> Path:
    out = root / "base"
    subprocess.run(
        [sys.executable, "-m", "runners.sweep", f"runner.output_dir={out}", "runner.display=none"],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return out / "offline_demo"


def replicate(base: Path, dest: Path, n: int) -> Path:
    """An experiment of about `n` episodes: each cell's episodes repeated under new task ids."""
    cells = [d for d in base.iterdir() if (d / "manifest.json").exists()]
    per = max(1, n // len(cells))
    for c in cells:
        d = dest / c.name
        d.mkdir(parents=True)
        shutil.copy(c / "transcripts.sqlite", d / "transcripts.sqlite")
        recs = read_jsonl(c / "episodes.jsonl")[0]  # a finished cell's records are compacted (episodes.jsonl.xz)
        with open(d / "episodes.jsonl", "w") as f:
            for i in range(per):
                r = dict(recs[i % len(recs)])
                r["task_id"] = f"{r['task_id']}~{i // len(recs)}"
                f.write(json.dumps(r) + "\n")
        m = json.loads((c / "manifest.json").read_text())
        m["n_tasks"] = per
        m["task_ids"] = [
            f"{recs[i % len(recs)]['task_id']}~{i // len(recs)}" for i in range(per)
        ]  # the tables count these
        (d / "manifest.json").write_text(json.dumps(m))
    return dest


def measure(report: Path, repeats: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    ready, inner, open_ep, filt = [], [], [], []
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
            page.fill("#f-task", "~7")
            page.wait_for_function("document.querySelector('#ep-count').textContent.startsWith('')")
            page.evaluate("() => document.querySelector('#ep-count').textContent")
            filt.append(time.perf_counter() - t0)
            page.close()
        browser.close()
    med = statistics.median
    return {"ready_s": med(ready), "page_ready_s": med(inner), "open_episode_s": med(open_ep), "filter_s": med(filt)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, nargs="*", default=[100, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    from runners.analysis.report import build_report

    rows = []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        base = base_experiment(root)
        for n in a.episodes:
            exp = replicate(base, root / f"exp{n}", n)
            t0 = time.perf_counter()
            report = build_report(exp)
            build = time.perf_counter() - t0
            n_eps = sum(len((c / "episodes.jsonl").read_text().splitlines()) for c in exp.iterdir() if c.is_dir())
            rows.append((n_eps, build, report.stat().st_size, measure(report, a.repeats)))
    print(
        f"{'episodes':>9} {'build s':>8} {'HTML MB':>8} {'load→ready s':>13} {'page ready s':>13} "
        f"{'open episode s':>15} {'filter s':>9}"
    )
    for n, build, size, m in rows:
        print(
            f"{n:>9} {build:>8.2f} {size / 1e6:>8.1f} {m['ready_s']:>13.2f} {m['page_ready_s']:>13.2f} "
            f"{m['open_episode_s']:>15.3f} {m['filter_s']:>9.3f}"
        )
    if len(rows) > 1:
        (n0, _, _, m0), (n1, _, _, m1) = rows[0], rows[-1]
        print(
            f"load→ready {n1} vs {n0} episodes: {m1['ready_s'] / m0['ready_s']:.1f}×; "
            f"opening an episode: {m1['open_episode_s'] / m0['open_episode_s']:.1f}× "
            f"(medians of {a.repeats})"
        )


if __name__ == "__main__":
    main()
