"""What named functions cost inside the real sweep process:
`python -m scripts.perf.insitu [--episodes 1024] [--concurrency 128] [--wrap MODULE:QUALNAME ...]`.

`tail`'s workload (Full Context, 12-call memoryarena_math-shaped episodes, transcripts on, one
cell) run once as a user runs it (`runners.sweep` against the loopback endpoint, 100 ms per
call), with each `--wrap` function (`runners.records.transcripts:Encoder.messages`,
`asyncio.selector_events:_SelectorSocketTransport.write`, a module-level function as
`module:name`) wrapped in the sweep process by a `sitecustomize` this script writes to a
temporary directory: the calling thread's CPU time (`time.thread_time_ns`) inside it, summed. It
prints, per function, how often it ran, its CPU per run and per model call, beside the whole
process's CPU per call (first request to exit, as `tail` counts it). What the same code costs in a
micro-benchmark (warm caches, nothing else running) is often a half or a third of what it costs
here, between the rest of a call's work: this is the figure to compare with `tail`'s.

A function that calls another wrapped one counts the inner one's time too. The wrapper's own part of
each run (the clock reads, a system call on a virtual machine: ~0.7 µs each where `thread_time_ns` is
not served by the vDSO) is measured at the sweep's exit on an empty function wrapped the same way and
subtracted: the figures printed are net of it, the raw ones are in `--json` (`us_each_raw`) beside the
overhead (`wrapper_us_per_run`). Module-level functions are replaced in their module, so calls that look
them up there are timed (not a name imported elsewhere before the wrap).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import textwrap
from pathlib import Path

from scripts.perf.inspect_compare import (
    CALLS_PER_EPISODE,
    REPO,
    ShapedEndpoint,
    check_harness_cell,
    harness_cmd,
    harness_env,
    run_one,
    workload,
    write_workload,
)

DEFAULT_WRAPS = (
    "runners.records.transcripts:Encoder.messages",
    "runners.records.transcripts:TranscriptStore.put_many",
    "runners.episode:RecordingBackbone._log",
    "asyncio.selector_events:_SelectorSocketTransport.write",
)

# Written as the sweep process's sitecustomize: wraps the targets as soon as their modules have
# them (an import hook, removed once all are wrapped), writes the sums as JSON at exit.
HOOK = textwrap.dedent(
    """
    import atexit, builtins, json, os, sys, time

    _targets = [t for t in os.environ["INSITU_WRAP"].split(";") if t]
    _sums = {t: [0, 0] for t in _targets}
    _left = set(_targets)
    _missing = set()
    _import = builtins.__import__

    def _timed(f, acc):
        clock = time.thread_time_ns

        def timed(*a, **k):
            t = clock()
            try:
                return f(*a, **k)
            finally:
                acc[0] += clock() - t
                acc[1] += 1

        return timed

    def _wrap(owner, name, key):
        setattr(owner, name, _timed(getattr(owner, name), _sums[key]))

    def _overhead(runs=20000):
        # what a run of the wrapper counts beyond its function: an empty one, wrapped the same way
        acc = [0, 0]
        empty = _timed(lambda: None, acc)
        for _ in range(runs):
            empty()
        return acc[0] / acc[1]

    def _try():
        for t in list(_left):
            mod, _, qual = t.partition(":")
            owner = sys.modules.get(mod)
            *path, name = qual.split(".")
            if owner is None:  # not imported yet
                continue
            try:
                for p in path:
                    owner = getattr(owner, p)
                getattr(owner, name)
            except AttributeError:
                if not getattr(getattr(sys.modules[mod], "__spec__", None), "_initializing", False):
                    _left.discard(t)  # the module is whole and has no such name: reported unwrapped
                    _missing.add(t)
                continue  # else half-imported: looked for again at the next import
            _wrap(owner, name, t)
            _left.discard(t)
        if not _left:
            builtins.__import__ = _import

    def _hook(*a, **k):
        m = _import(*a, **k)
        _try()
        return m

    builtins.__import__ = _hook
    _try()

    def _dump():
        if os.environ.get("INSITU_OUT") and sys.argv and sys.argv[0].endswith("sweep.py"):
            with open(os.environ["INSITU_OUT"], "w") as f:
                json.dump({"sums": _sums, "unwrapped": sorted(_left | _missing), "wrapper_ns": _overhead()}, f)

    atexit.register(_dump)
    """
)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=1024)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--wrap", nargs="+", default=list(DEFAULT_WRAPS), metavar="MODULE:QUALNAME")
    ap.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    a = ap.parse_args(argv)
    for t in a.wrap:
        if ":" not in t:
            ap.error(f"--wrap {t!r}: write MODULE:QUALNAME, e.g. runners.records.transcripts:Encoder.messages")
    w = workload(a.episodes, 3000)
    root = Path(tempfile.mkdtemp(prefix="perf-insitu-"))
    try:
        hook = root / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(HOOK)
        data_dir = write_workload(root / "data", w["rows"])
        env = harness_env()
        env.update(
            PYTHONPATH=f"{hook}{os.pathsep}{REPO}", INSITU_WRAP=";".join(a.wrap), INSITU_OUT=str(root / "sums.json")
        )
        out = root / "run"
        with ShapedEndpoint(w, a.latency, 1500) as ep:
            r = run_one(
                ep,
                "harness",
                harness_cmd(ep.base_url, data_dir, out, a.concurrency, a.episodes),
                out,
                a.concurrency,
                a.episodes,
                env,
            )
        check_harness_cell(out, a.episodes)
        got = json.loads((root / "sums.json").read_text())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    calls = a.episodes * CALLS_PER_EPISODE
    over = got.pop("wrapper_ns")
    rows = {
        t: {
            "runs": n,
            "us_each": max(0.0, ns / n - over) / 1e3 if n else 0.0,
            "us_each_raw": ns / n / 1e3 if n else 0.0,
            "us_per_call": max(0.0, ns - over * n) / calls / 1e3,
        }
        for t, (ns, n) in got["sums"].items()
    }
    if a.json:
        print(
            json.dumps(
                {"cpu_per_call_us": r.cpu_ms * 1000, "calls": calls, "wrapper_us_per_run": over / 1e3, "wrapped": rows}
                | got
            )
        )
        return
    print(
        f"{a.episodes} episodes, {a.concurrency} in flight, {calls} calls; whole process "
        f"{r.cpu_ms * 1000:.0f} µs CPU per call (first request to exit); load {r.load_start:.2f} → {r.load_end:.2f}"
    )
    print(f"the wrapper's own part of each run, subtracted below: {over / 1e3:.2f} µs (an empty function, wrapped)")
    print(f"{'µs per call':>12} {'µs each':>9} {'runs':>8}  function (the calling thread's CPU inside it)")
    for t, row in sorted(rows.items(), key=lambda kv: -kv[1]["us_per_call"]):
        print(f"{row['us_per_call']:>12.1f} {row['us_each']:>9.1f} {row['runs']:>8}  {t}")
    for t in got["unwrapped"]:
        print(f"  not found in the sweep process (never imported, or a wrong name): {t}")


if __name__ == "__main__":
    main()
