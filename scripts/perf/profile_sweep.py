"""Where the sweep's CPU goes: `python -m scripts.perf.profile_sweep [--episodes 512] [--concurrency 128]
[--rate 250] [--top 25] [--harness DIR] [--raw FILE] [--gil] [--variant KEY=VALUE ...]`.

`scripts/perf/tail.py`'s workload (Full Context on 12-call memoryarena_math-shaped episodes,
transcripts on, the loopback endpoint at 100 ms per call), the sweep as one process sampled by
py-spy (`--threads --nonblocking`, every thread; the dev extra installs it) from start to exit; with
`--gil` only the thread holding the GIL, i.e. the interpreter's own CPU.
Only what runs from the first cell on is counted (the main thread's stacks under
`runners.sweep.run_cells`, and the helper threads); start-up (imports, configuration) is left out.

Printed: the share of samples per thread, per group of the leaf frame (project code,
HTTP client + asyncio, json, compression, sqlite, pydantic, threads, other: a project line that calls
`lzma`/`zlib`, SQLite or orjson counts as that library) and the top functions by own time.
py-spy counts a thread while it runs or waits for a CPU or in a system call (an fsync), so on a
loaded machine the shares are approximate; `--harness DIR` profiles another checkout. Results:
scripts/perf/README.md ("Harness CPU per call").
"""

from __future__ import annotations

import argparse
import collections
import linecache
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from scripts.perf.inspect_compare import (
    REPO,
    ShapedEndpoint,
    check_harness_cell,
    harness_cmd,
    harness_env,
    run_one,
    transcripts_on,
    workload,
    write_workload,
)

PROJECT = ("runners", "kit", "baselines", "benchmarks", "flowstate", "pos")
ASYNC = (
    "aiohttp/",
    "asyncio/",
    "yarl/",
    "multidict/",
    "aiohappyeyeballs/",
    "selectors.py",
    "socket.py",
    "ssl.py",
    "httptools/",  # with h1.py: the default HTTP client (backbone.transport h1)
    "runners/backbones/h1.py",
)


def _source(roots: list[str], path: str, line: int) -> str:
    for base in roots:
        text = linecache.getline(os.path.join(base, path), line)
        if text:
            return text
    return ""


def group(leaf: str, roots: list[str]) -> str:
    """The group of a py-spy frame `function (path:line)` by its file and its source line."""
    m = re.match(r"(.*) \((.*):(\d+)\)$", leaf)
    if not m:
        return "other (stdlib, importlib)"
    path, text = m.group(2), _source(roots, m.group(2), int(m.group(3)))
    if path.startswith(ASYNC):
        return "HTTP client + asyncio (incl. the kernel's loopback send)"
    if path.startswith("json/") or re.search(r"orjson|json\.(dumps|loads)|model_dump_json|to_json", text):
        return "json (encode/decode)"
    if path.startswith(("lzma", "_compression", "zlib")) or re.search(r"compress|lzma|zlib", text):
        return "compression (xz records, zlib transcript packs)"
    if re.search(r"\.execute|executemany|COMMIT|BEGIN|sqlite", text):
        return "sqlite (transcripts)"
    if path.startswith("pydantic"):
        return "pydantic (records, decisions)"
    if path.split("/")[0] in PROJECT:
        return "project code"
    if path in ("threading.py", "queue.py"):
        return "threads, queues"
    return "other (stdlib, importlib)"


def summarize(raw: Path, roots: list[str], top: int) -> None:
    total = 0
    groups: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        main = "MainThread" in frames[0]
        if main and "run_cells" not in stack:
            continue  # start-up: imports, configuration
        if not main and "Thread._bootstrap" not in stack:
            continue
        count = int(n)
        total += count
        own[frames[-1]] += count
        groups[group(frames[-1], roots)] += count
        name = "main (event loop)" if main else re.sub(r"thread \(\d+\): ", "", frames[0])
        threads[re.sub(r"[-_](full_context|\d).*$", "", name)] += count
    if not total:
        raise SystemExit(f"error: {raw} holds no samples of the run. Fix: check the sweep's output above.")
    print(f"{total} samples")
    for title, counter in (("by thread", threads), ("by group (own time)", groups)):
        print(f"{title}:")
        for k, v in counter.most_common(20):
            print(f"  {v / total:6.1%}  {k}")
    print("top functions (own time):")
    for k, v in own.most_common(top):
        print(f"  {v / total:6.1%}  {k}  [{group(k, roots).split(' (')[0]}]")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--harness", type=Path, default=REPO, help="the checkout to profile (default: this one)")
    ap.add_argument("--raw", type=Path, help="keep py-spy's raw output here (default: a temporary file)")
    ap.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL (py-spy --gil): the interpreter's CPU, without the time a "
        "thread waits for the GIL, a CPU or a system call",
    )
    ap.add_argument(
        "--variant",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="sweep overrides for the profiled run (e.g. runner.transcripts=false: where the rest of the CPU goes)",
    )
    a = ap.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        raise SystemExit("error: py-spy is not installed. Fix: pip install -e '.[dev]' (or pip install py-spy).")
    harness = a.harness.resolve()
    w = workload(a.episodes, 3000)
    root = Path(tempfile.mkdtemp(prefix="perf-profile-"))
    raw = a.raw or root / "py-spy.txt"
    data_dir = write_workload(root / "data", w["rows"])
    env = harness_env()
    env["PYTHONPATH"] = str(harness)
    print(f"load average before {os.getloadavg()}", flush=True)
    try:
        with ShapedEndpoint(w, 0.1, 1500) as ep:
            out = root / "out"
            cmd = [spy, "record", "--threads", "--nonblocking", "-r", str(a.rate), "-f", "raw", "-o", str(raw)]
            cmd += ["--gil"] if a.gil else []
            cmd += ["--"]
            cmd += harness_cmd(ep.base_url, data_dir, out, a.concurrency, a.episodes) + a.variant
            run_one(ep, "harness", cmd, out, a.concurrency, a.episodes, env, cwd=harness)
            check_harness_cell(out, a.episodes, transcripts=transcripts_on(a.variant))
        print(f"load average after {os.getloadavg()}")
        roots = [str(harness), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]]
        summarize(raw, roots, a.top)
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"error: py-spy failed ({e}). Fix: run where py-spy may read the child's memory.") from None
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
