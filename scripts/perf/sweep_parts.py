"""Where the whole sweep's CPU per call goes, part by part: `python -m scripts.perf.sweep_parts
[--episodes 512] [--concurrency 128] [--repeats 3] [--parts all ...] [--harness DIR]`.

`scripts/perf/tail.py`'s workload (Full Context on 12-call memoryarena_math-shaped episodes, one
cell, transcripts on) run as the real sweep (`runners.sweep`, its scheduler, stores, transcript
thread, progress, tables) in one process, with the HTTP transport replaced by an in-process reply
(what `ShapedEndpoint` answers) given after `await asyncio.sleep(latency)`, so that the episodes
interleave as they do against the endpoint. Without the HTTP client, the kernel and the endpoint
(`scripts/perf/transport.py` prices those) and far quieter than `tail`.

Each variant runs in a fresh process (alternating order over `--repeats`); per variant the median
harness CPU per call (µs) from the first model call to the end of the sweep (tables written), the
stand-in endpoint's own CPU subtracted, split into:
- each thread's CPU (`time.thread_time` of every thread, the store writer, the transcript thread,
  `asyncio.to_thread` workers, summed by name),
- the cyclic collector's time (`gc.callbacks`), and the inclusive CPU of a few synchronous
  functions on the event loop (the record's line, the call and episode counters, the table fold).
Variants switch one part off: `no_transcripts` (`runner.transcripts=false`), `no_compaction`
(`runner.compact_records=false`), `no_inflight` (episodes' backbones without `runners.pool.InFlight`),
`no_call_count` (`Scheduler._on_call` a no-op: the live call/token/cost counters and the display's
per-call hook), and `episode_path` (`scripts.perf.episode_path`: the episodes alone, no scheduler,
no stores, the reply after `asyncio.sleep(latency)` as here). A variant's difference from `all`
prices that part. Results: scripts/perf/README.md ("Where the sweep's CPU per call goes").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from scripts.perf import checkout
from scripts.perf.recorder import Delayed

VARIANTS: dict[str, list[str]] = {
    "all": [],
    "no_transcripts": ["runner.transcripts=false"],
    "no_compaction": ["runner.compact_records=false"],
    "no_inflight": [],
    "no_call_count": [],
    "episode_path": [],
    "episode_path_next_turn": [],
}
TIMED = (  # synchronous functions on the event loop, timed inclusively (module, class, attribute)
    ("runners.records.store", "CellStore", "_line"),
    ("runners.run", "Scheduler", "_on_call"),
    ("runners.run", "TableFold", "add"),
    ("runners.progress", "CellReport", "count_episode"),
    ("runners.progress", "Progress", "episode"),
)


class Clock:
    """Per-thread and per-function CPU from the first model call on."""

    def __init__(self) -> None:
        self.started = False
        self.ended: collections.defaultdict[str, float] = collections.defaultdict(
            float
        )  # thread name → CPU s of ended threads
        self.at_start: dict[int, float] = {}  # thread ident → its CPU at the first call
        self.funcs: collections.defaultdict[str, float] = collections.defaultdict(float)
        self.gc_s = 0.0
        self.gc_by: collections.defaultdict[str, float] = collections.defaultdict(float)  # by generation
        self.gc_passes: collections.Counter[str] = collections.Counter()
        self.stand_in_s = 0.0
        self.process0 = 0.0
        self._gc0 = 0.0
        self.last = (0.0, 0.0, 0.0)  # (process, main thread, stand-in) CPU as the last reply is handed over
        self.profile_dir: Path | None = None  # cProfile every thread into here (`--profile`)

    @staticmethod
    def label(name: str) -> str:
        return re.sub(r"[-_ ](full_context|inspect_compare|\d).*$|\(.*\)$", "", name).strip() or name

    def install(self) -> None:
        import gc

        clock, run = self, threading.Thread.run

        def timed_run(thread: threading.Thread) -> None:
            profile = None
            if clock.profile_dir is not None:
                import cProfile

                profile = cProfile.Profile(time.thread_time)  # CPU, not wall
                profile.enable()
            try:
                run(thread)
            finally:
                if profile is not None and clock.profile_dir is not None:
                    profile.disable()
                    profile.dump_stats(str(clock.profile_dir / f"{clock.label(thread.name)}-{thread.ident}.prof"))
                if clock.started:
                    spent = time.thread_time() - clock.at_start.get(threading.get_ident(), 0.0)
                    clock.ended[clock.label(thread.name)] += spent

        threading.Thread.run = timed_run  # type: ignore[method-assign,assignment]

        def on_gc(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                self._gc0 = time.thread_time()
            elif self.started:
                spent = time.thread_time() - self._gc0
                self.gc_s += spent
                gen, where = info["generation"], threading.current_thread()
                where_name = "main" if where is threading.main_thread() else self.label(where.name)
                self.gc_by[f"gc generation {gen} in {where_name} ({{}} passes)"] += spent
                self.gc_passes[f"{gen} {where_name}"] += 1

        gc.callbacks.append(on_gc)

    def time_functions(self) -> None:
        import functools
        import importlib

        for mod, cls, attr in TIMED:
            owner = getattr(importlib.import_module(mod), cls)
            f = getattr(owner, attr)

            def wrap(f: Any, key: str) -> Any:
                @functools.wraps(f)
                def timed(*a: Any, **k: Any) -> Any:
                    t0 = time.thread_time()
                    try:
                        return f(*a, **k)
                    finally:
                        if self.started:
                            self.funcs[key] += time.thread_time() - t0

                return timed

            setattr(owner, attr, wrap(f, f"{cls}.{attr}"))

    def start(self) -> None:
        for t in threading.enumerate():
            if t.ident is not None:
                try:
                    self.at_start[t.ident] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
                except OSError:
                    pass
        self.process0 = time.process_time()
        self.started = True

    def threads(self) -> dict[str, float]:
        out = collections.defaultdict(float, self.ended)
        for t in threading.enumerate():
            if t.ident is None:
                continue
            try:
                now = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
            except OSError:
                continue
            name = "main (event loop)" if t is threading.main_thread() else self.label(t.name)
            out[name] += now - self.at_start.get(t.ident, 0.0)
        return dict(out)


def stand_in(w: dict[str, Any], latency: float, clock: Clock) -> Any:
    """`post(url, body)` → the reply `ShapedEndpoint` gives, after `latency` seconds."""
    from scripts.perf.episode_path import shaped_reply

    answer, delayed = shaped_reply(w), Delayed(latency)

    async def post(url: str, body: bytes) -> Any:
        if not clock.started:
            clock.start()
        c0 = time.thread_time()
        out = answer(body)
        clock.stand_in_s += time.thread_time() - c0
        out = await delayed.reply(out)
        clock.last = (time.process_time(), time.thread_time(), clock.stand_in_s)
        return out

    return post


def child(variant: str, episodes: int, concurrency: int, latency: float, profile: Path | None = None) -> dict[str, Any]:
    """One variant in this process: µs per call in total and per part (with `profile`, every
    thread's cProfile statistics are written there instead: the figures then include its cost)."""
    from scripts.perf.inspect_compare import (
        CALLS_PER_EPISODE,
        check_harness_cell,
        harness_cmd,
        workload,
        write_workload,
    )

    clock = Clock()
    clock.profile_dir = profile
    clock.install()
    w = workload(episodes, 3000)
    root = Path(tempfile.mkdtemp(prefix="perf-sweep-parts-"))
    calls = episodes * CALLS_PER_EPISODE
    try:
        data_dir = write_workload(root / "data", w["rows"])
        post = stand_in(w, latency, clock)
        if variant.startswith("episode_path"):
            from scripts.perf import episode_path

            main_profile = None
            if profile is not None:
                import cProfile

                main_profile = cProfile.Profile(time.thread_time)  # CPU, not wall
                main_profile.enable()
            wait = 0.0 if variant == "episode_path_next_turn" else latency
            us, n = asyncio.run(episode_path.us_per_call(episodes, concurrency, data_dir, w, wait))
            if main_profile is not None and profile is not None:
                main_profile.disable()
                main_profile.dump_stats(str(profile / "main.prof"))
            return {"us": us, "calls": n, "parts": {}}
        from runners.backbones import openai
        from scripts.perf.recorder import InProcess

        openai.TRANSPORTS["h1"] = lambda **kw: InProcess(post)  # this process only
        clock.time_functions()
        if variant == "no_inflight":
            import runners.run

            runners.run.InFlight = lambda inner, progress: inner  # type: ignore[assignment,misc,return-value]
        if variant == "no_call_count":
            import runners.run

            runners.run.Scheduler._on_call = lambda *a, **k: None  # type: ignore[method-assign]
        out = root / "out"
        cmd = harness_cmd("http://127.0.0.1:9/v1", data_dir, out, concurrency, episodes)[3:]
        cmd += ["runner.preflight_s=0", "runner.check_access=false", "runner.processes=1", *VARIANTS[variant]]
        import runners.sweep

        sys.argv = ["runners.sweep", *cmd]
        main_profile = None
        if profile is not None:
            import cProfile

            main_profile = cProfile.Profile(time.thread_time)  # CPU, not wall
            main_profile.enable()
        try:
            runners.sweep.main()
        except SystemExit as e:
            if e.code not in (0, None):
                raise RuntimeError(f"the sweep exited with {e.code}") from None
        finally:
            if main_profile is not None and profile is not None:
                main_profile.disable()
                main_profile.dump_stats(str(profile / "main.prof"))
        total = time.process_time() - clock.process0 - clock.stand_in_s
        after = time.process_time() - clock.last[0] - (clock.stand_in_s - clock.last[2])
        threads = clock.threads()
        threads["main (event loop)"] -= clock.stand_in_s
        clock.started = False  # what follows (the check) is not the sweep's
        parts = {f"thread {k}": v for k, v in threads.items() if v > 0}
        parts["after the last reply (all threads: tables, compaction, closing)"] = after
        parts |= {"gc (any thread)": clock.gc_s} | {f"fn {k}": v for k, v in clock.funcs.items()}
        parts |= {k.format(clock.gc_passes[f"{k.split()[2]} {k.split()[4]}"]): v for k, v in clock.gc_by.items()}
        if variant != "no_transcripts":
            check_harness_cell(out, episodes)
        return {
            "us": total / calls * 1e6,
            "calls": calls,
            "parts": {k: v / calls * 1e6 for k, v in parts.items()},
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--latency", type=float, default=0.1, help="seconds before each reply (default 0.1)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts", nargs="+", choices=list(VARIANTS), default=list(VARIANTS), help="variants to run")
    ap.add_argument("--harness", metavar="DIR", help="measure the harness checked out at DIR (default: this one)")
    ap.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="run the first of --parts once with every thread under cProfile, write DIR/<thread>.prof "
        "and print each one's top functions (own time); no timing",
    )
    ap.add_argument("--top", type=int, default=25, help="functions printed per thread with --profile")
    ap.add_argument("--variant", help=argparse.SUPPRESS)  # a child: run one variant, print one JSON line
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json:
        if a.harness:
            checkout.use(a.harness)
        r = child(a.variant, a.episodes, a.concurrency, a.latency)
        print(json.dumps({"harness": checkout.location(), **r}))
        return
    if a.profile:
        import pstats

        if a.harness:
            checkout.use(a.harness)
        a.profile.mkdir(parents=True, exist_ok=True)
        child(a.parts[0], a.episodes, a.concurrency, a.latency, a.profile.resolve())
        for f in sorted(a.profile.glob("*.prof")):
            print(f"\n== {f.name}")
            pstats.Stats(str(f)).sort_stats("tottime").print_stats(a.top)
        return
    harness = str(Path(a.harness).resolve()) if a.harness else str(checkout.REPO)
    args = ["--episodes", str(a.episodes), "--concurrency", str(a.concurrency), "--latency", str(a.latency)]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in a.parts}
    print(
        f"{harness}: {a.episodes} episodes, {a.concurrency} in flight, reply after {a.latency * 1000:.0f} ms; "
        f"load average before {os.getloadavg()}",
        flush=True,
    )
    for rep in range(a.repeats):
        for v in a.parts if rep % 2 == 0 else a.parts[::-1]:
            r = checkout.measure("scripts.perf.sweep_parts", harness, [*args, "--variant", v])
            runs[v].append(r)
            print(f"  {v:<22} {r['us']:7.1f} us/call  load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    med = statistics.median
    base = med(r["us"] for r in runs["all"]) if "all" in runs else None
    print(f"\nharness CPU per call (µs), medians of {a.repeats}:")
    for v, rs in runs.items():
        m = med(r["us"] for r in rs)
        diff = f"  {m - base:+7.1f} vs all" if base is not None and v != "all" else ""
        print(f"  {v:<22} {m:7.1f}{diff}   (runs: {', '.join(format(r['us'], '.1f') for r in rs)})")
    for v, rs in runs.items():
        keys = sorted({k for r in rs for k in r["parts"]}, key=lambda k: -med(r["parts"].get(k, 0.0) for r in rs))
        if not keys:
            continue
        print(f"\n{v}: by part (µs per call; threads add up to the total, gc and fn are inside them)")
        for k in keys:
            print(f"  {med(r['parts'].get(k, 0.0) for r in rs):7.1f}  {k}")


if __name__ == "__main__":
    main()
