"""The harness beside inspect_ai on the same episodes and the same loopback endpoint:
`python -m scripts.perf.inspect_compare [--levels 1 32 64] [--repeats 3] [--quick]`.

inspect_ai is never a dependency of the project: the script makes its own venv once (default
`~/.cache/harness/inspect-venv`, or `--venv`) with the pinned `inspect_ai` and `openai` and runs
inspect there as a subprocess (`scripts/perf/inspect_task.py`, read only by that venv).

Workload: episodes shaped like memoryarena_math. Each episode is a task of 3 subtasks (the first
with a background, as in the Formal Reasoning fixture); per subtask the agent calls the `reasoning`
tool once (itself one model call), then answers, then the judge is asked: 4 calls per subtask,
12 per episode. The harness runs it as a user would: `python -m runners.sweep method=full_context
benchmark=memoryarena_math` on the generated tasks (Full Context, ReAct text protocol, judge and
tool on the agent's backbone, transcripts on); inspect runs `inspect eval` on the same tasks with
native tool calls, twice: as it runs by default, and with `--no-log-realtime` (inspect_ai's option
not to log each sample's events in real time, which only `inspect view`'s live view of running
samples needs): the variant that spends the least of inspect's CPU on its log. Both read the same policy, tool
and judge prompts (the harness's, from `benchmarks.memoryarena.formal.formal_prompts`). Every
task is distinct, so neither side can share content across episodes that the other could not.

One endpoint (`tests/fake_openai.FakeOpenAI` in this process, threads; the process does nothing
else while a run is on) answers every call after `--latency` s (default 100 ms) with replies
that are a deterministic function of the request, and stamps every arrival. Per run:

- episodes/s: episodes / (last arrival + latency - first arrival), the in-flight window;
- time to first request: process start (just before its launcher starts) to the first arrival;
- wall overhead per call (at 1 concurrent episode): the window / calls - latency, i.e. the
  time between a reply leaving the endpoint and the next request arriving, episode boundaries
  included;
- CPU per call: the process's CPU seconds (user + sys) from the first arrival to its exit
  (the final log writes included, start-up excluded) / calls;
- peak RSS: `ru_maxrss` of the process, taken by a small launcher that forks it (`LAUNCH`), so
  that this process's own memory is not counted;
- storage per episode: every file the run left in its output directory / episodes (harness:
  episodes.jsonl.zst, transcripts.sqlite, manifest, errors, DONE, tables; inspect: its `.eval` log).

The systems alternate within one run (order reversed every repeat); medians of `--repeats`.
Every table row states the 1-minute load average at the start and at the end of the runs it
summarises (lowest–highest over them): on a shared machine the ratios overstate inspect's cost
when the load is high (inspect's CPU per call grows with contention more than the harness's), so
read them from a quiet machine. `--quick`: one level (64 concurrent unless `--levels`), one
repeat: a few minutes.
Every run is checked: exit status 0, exactly 12 × episodes requests, every request recognised,
the harness cell DONE with every call's transcript readable, inspect's log `success` with every
sample. `--background-chars` / `--reply-chars` change the texts' lengths. Results and how to read
them: scripts/perf/README.md ("Beside inspect_ai").
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[2]
TASK_FILE = Path(__file__).with_name("inspect_task.py")
INSPECT_PINS = ("inspect_ai==0.3.285", "openai==3.57.0")
DEFAULT_VENV = Path("~/.cache/harness/inspect-venv").expanduser()
SUBTASKS = 3
CALLS_PER_EPISODE = 4 * SUBTASKS  # per subtask: agent (tool call), tool, agent (answer), judge
MODEL = "fake-model"
_LETTERS = (
    "etaoinshrdlcumwfgypbvkjxqz",
    (
        12.7,
        9.1,
        8.2,
        7.5,
        7.0,
        6.7,
        6.3,
        6.1,
        6.0,
        4.3,
        4.0,
        2.8,
        2.8,
        2.4,
        2.4,
        2.2,
        2.0,
        2.0,
        1.9,
        1.5,
        1.0,
        0.8,
        0.15,
        0.15,
        0.1,
        0.07,
    ),
)


# ----------------------------------------------------------------------------- the inspect venv
def inspect_venv(venv: Path) -> Path:
    """The venv's `inspect` executable, making the venv first if it is missing or pins differ."""
    stamp = venv / "pins.txt"
    exe = venv / "bin" / "inspect"
    if exe.exists() and stamp.exists() and stamp.read_text().split() == list(INSPECT_PINS):
        return exe
    print(f"making the inspect_ai venv at {venv} ({', '.join(INSPECT_PINS)}; once)", flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *INSPECT_PINS], check=True)
    stamp.write_text("\n".join(INSPECT_PINS) + "\n")
    return exe


# ----------------------------------------------------------------------------- the workload
class Text:
    """Seeded prose-like text: Zipf-distributed pseudo-words (English letter frequencies) with
    inline math. zlib compresses it about 2.9×, as it does English prose (the project's docs:
    2.5×); a small fixed vocabulary would compress far better and flatter compressed formats."""

    def __init__(self, seed: int = 0) -> None:
        rng = random.Random(seed)
        lengths = (1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 7, 7, 8, 9, 10, 11)
        vocab = sorted({"".join(rng.choices(*_LETTERS, k=rng.choice(lengths))) for _ in range(4000)})
        rng.shuffle(vocab)
        self.vocab, self.cum = vocab, list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))

    def __call__(self, rng: random.Random, chars: int) -> str:
        out, n, line = [], 0, 0
        while n < chars:
            r = rng.random()
            if r < 0.06:
                w = f"$x_{{{rng.randint(0, 99)}}}$"
            elif r < 0.09:
                w = f"$\\frac{{{rng.randint(1, 99)}}}{{{rng.randint(1, 99)}}}$"
            elif r < 0.11:
                w = str(rng.randint(0, 9999))
            else:
                w = rng.choices(self.vocab, cum_weights=self.cum)[0]
            line += len(w) + 1
            n += len(w) + 1
            out.append(w + ("\n" if line > 80 else " "))
            line = 0 if line > 80 else line
        return "".join(out).strip() + "."


words = Text()


def workload(n_tasks: int, background_chars: int) -> dict[str, Any]:
    """The tasks (as MemoryArena rows and as inspect requests) and the prompts both systems use."""
    from benchmarks.memoryarena.formal import formal_prompts, request_text
    from runners.upstream import TextSources

    p = formal_prompts(TextSources())
    rows, tasks = [], []
    for i in range(n_tasks):
        rng = random.Random(i)
        backgrounds = [words(rng, background_chars)] + [""] * (SUBTASKS - 1)
        questions = [f"Problem {i}.{k}: " + words(rng, 160) for k in range(SUBTASKS)]
        answers = [f"c_{i}_{k} = {rng.randint(2, 999)}" for k in range(SUBTASKS)]
        rows.append(
            {
                "id": i,
                "paper_name": f"shaped-{i}",
                "backgrounds": backgrounds,
                "questions": questions,
                "answers": answers,
            }
        )
        tasks.append(
            {
                "task_id": f"formal_reasoning_math-{i}",
                "answers": answers,
                "requests": [request_text(b, q) for b, q in zip(backgrounds, questions)],
            }
        )
    judge_system, judge_user = p["judge"]
    return {
        "rows": rows,
        "tasks": tasks,
        "policy": p["policy"],
        "tool": p["tool"].model_dump(),
        "tool_system": p["tool_system"],
        "tool_user": p["tool_user"],
        "judge_system": judge_system,
        "judge_user": judge_user,
    }


def write_workload(data_dir: Path, rows: list[dict[str, Any]]) -> Path:
    """`rows` (a `workload`'s) as the memoryarena_math data the sweep reads with
    `benchmark.params.data_dir=<data_dir>`; returns `data_dir`."""
    (data_dir / "formal_reasoning_math").mkdir(parents=True, exist_ok=True)
    (data_dir / "formal_reasoning_math" / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data_dir


def harness_env() -> dict[str, str]:
    """This environment without `OPENAI_*` / `INSPECT_*` variables (the benchmarks' runs name their endpoint)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "INSPECT_"))}


# ----------------------------------------------------------------------------- the endpoint
def _h(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _block(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return m.group(1) if m else None


REASONED = "Reasoning notes"


class _Discarded(list[Any]):
    """A list that keeps nothing appended to it (the endpoint's record of request bodies)."""

    def append(self, item: Any) -> None:
        pass


class ShapedEndpoint(FakeOpenAI):
    """FakeOpenAI answering memoryarena_math-shaped episodes for both systems and stamping arrivals.

    judge call → "yes"; reasoning-tool call → `reply_chars` of notes; agent call → a call of the
    reasoning tool, or (once the latest observation is its result) a short final answer: ReAct
    text for the harness (no `tools` in the body), a native tool call for inspect."""

    def __init__(self, w: dict[str, Any], latency_s: float, reply_chars: int) -> None:
        super().__init__(self.answer, latency_s=latency_s)
        self.w, self.reply_chars = w, reply_chars
        self.unknown = 0
        self.arrivals: list[float] = []
        self.pid_file: Path | None = None  # where the launcher wrote the measured process's pid
        self.cpu_at_first: float | None = None

    def start_run(self, pid_file: Path | None, keep_bodies: bool = False) -> None:
        """A new run: counters and arrivals reset. FakeOpenAI keeps every request body it parsed
        (~8 KB each, 12 an episode: ~1 GB at 10,000 episodes, which this process, sharing the
        machine with the measured one, would hold and its collector walk); a run keeps them only
        with `keep_bodies` (a test that reads them)."""
        self.reset_counters()
        with self._lock:
            self.arrivals, self.pid_file, self.cpu_at_first, self.unknown = [], pid_file, None, 0
            if not keep_bodies:
                self.bodies, self.auth_headers = _Discarded(), _Discarded()

    def decide(self, key: str) -> Any:  # called as each request arrives (before the latency)
        now = time.monotonic()
        with self._lock:
            self.arrivals.append(now)
            first = len(self.arrivals) == 1
        if first and self.pid_file is not None:
            pid = self.pid_file.read_text().split()[:1]
            self.cpu_at_first = proc_cpu(int(pid[0])) if pid else None
        return super().decide(key)

    def answer(self, body: dict[str, Any]) -> str | dict[str, Any]:
        msgs = body.get("messages") or []
        texts = [m.get("content") if isinstance(m.get("content"), str) else "" for m in msgs]
        if not texts:
            return self._unknown()
        if texts[0] == self.w["judge_system"]:
            return "yes"
        if texts[0] == self.w["tool_system"]:
            rng = random.Random(_h(texts[-1]))
            return f"{REASONED} {_h(texts[-1])}:\n" + words(rng, self.reply_chars)
        last = texts[-1]
        if body.get("tools"):  # inspect: native function calls
            if msgs[-1].get("role") == "tool":
                return f"The result is r_{_h(last)[:6]}."
            call = {
                "id": "call_" + _h(last)[:12],
                "type": "function",
                "function": {"name": "reasoning", "arguments": json.dumps({"input": last})},
            }
            return {"content": None, "tool_calls": [call]}
        query, latest = _block(last, "user_query"), _block(last, "latest_observation")
        if query is None or latest is None:
            return self._unknown()
        if REASONED in latest:
            return (
                "<tool_calls>\n[]\n</tool_calls>\n<assistant_message>\n"
                + json.dumps({"content": f"The result is r_{_h(latest)[:6]}."})
                + "\n</assistant_message>"
            )
        return (
            "<tool_calls>\n"
            + json.dumps([{"name": "reasoning", "arguments": {"input": query}}])
            + '\n</tool_calls>\n<assistant_message>\n{"content": null}\n</assistant_message>'
        )

    def _unknown(self) -> str:
        with self._lock:
            self.unknown += 1
        return "unrecognised request"


_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float | None:
    """User + system CPU seconds of a live process and its waited-for children (/proc/<pid>/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(x) for x in fields[11:15]) / _TICK  # utime stime cutime cstime


# ----------------------------------------------------------------------------- one run
@dataclass
class Run:
    system: str
    level: int
    episodes: int
    rate: float = 0.0  # episodes/s in the in-flight window
    first_request_s: float = 0.0
    overhead_ms: float = 0.0  # wall per call beyond the endpoint latency
    cpu_ms: float = 0.0  # CPU per call, first request to exit
    rss_mb: float = 0.0
    wall_s: float = 0.0  # process start to exit
    storage: dict[str, int] = field(default_factory=dict)
    load_start: float = 0.0  # 1-minute load average just before the process started
    load_end: float = 0.0  # and just after it exited

    @property
    def bytes_per_episode(self) -> float:
        return sum(self.storage.values()) / self.episodes


def dir_bytes(root: Path) -> dict[str, int]:
    """Bytes of every file under `root`, by path relative to it (what a run leaves on disk)."""
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(Path(root).rglob("*")) if p.is_file()}


def storage_kinds(storage: dict[str, int]) -> dict[str, int]:
    """`dir_bytes` grouped: episode records, transcripts, inspect's .eval logs, everything else."""
    out = {"records": 0, "transcripts": 0, "eval logs": 0, "other": 0}
    for name, size in storage.items():
        base = Path(name).name
        kind = (
            "records"
            if base.startswith(("episodes.", "errors."))
            else "transcripts"
            if base.startswith("transcripts.")
            else "eval logs"
            if base.endswith(".eval")
            else "other"
        )
        out[kind] += size
    return {k: v for k, v in out.items() if v}


def harness_cmd(url: str, data_dir: Path, out: Path, n: int, episodes: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "runners.sweep",
        "method=full_context",
        "benchmark=memoryarena_math",
        "backbone=openai_compatible",
        f"backbone.model={MODEL}",
        f"backbone.base_url={url}",
        "backbone.api_key_env=null",
        f"backbone.max_inflight={max(n, 32)}",
        "roles.judge=agent",
        "roles.tool=agent",
        f"benchmark.params.data_dir={data_dir}",
        f"runner.output_dir={out}",
        f"runner.concurrency={n}",
        f"runner.limit={episodes}",
        "runner.cache=false",
        "runner.display=none",
        "experiment.name=inspect_compare",
    ]


INSPECT = "inspect_ai"
INSPECT_NO_REALTIME = "inspect_ai --no-log-realtime"
SYSTEMS = ("harness", INSPECT, INSPECT_NO_REALTIME)
SLUG = {"harness": "harness", INSPECT: "inspect_ai", INSPECT_NO_REALTIME: "inspect_ai-no-realtime"}  # run folders
LABEL = {"harness": "harness", INSPECT: "inspect", INSPECT_NO_REALTIME: "inspect no-realtime"}  # table columns


def inspect_cmd(exe: Path, url: str, wfile: Path, out: Path, n: int, episodes: int, realtime: bool = True) -> list[str]:
    """`inspect eval` of the workload; `realtime=False` adds `--no-log-realtime` (inspect_ai's
    option: events are not logged in real time, as the live view of running samples needs)."""
    return [
        str(exe),
        "eval",
        TASK_FILE.name,
        "-T",
        f"data={wfile}",
        "--model",
        f"openai/{MODEL}",
        "--model-base-url",
        url,
        "-M",
        "responses_api=false",
        "--max-samples",
        str(n),
        "--max-connections",
        str(n),
        "--limit",
        str(episodes),
        "--log-dir",
        str(out),
        "--display",
        "none",
        "--log-level",
        "warning",
        *([] if realtime else ["--no-log-realtime"]),
    ]


# The measured process is started by this small launcher, not forked from this process: a child's
# ru_maxrss counts the address space it was forked from (until exec), so a fork of this process
# (the endpoint, its bodies) would report this process's memory as the child's peak.
LAUNCH = """
import json, os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
with open(sys.argv[1], "w") as f:
    f.write(f"{pid}\\n")
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"maxrss_kb": ru.ru_maxrss, "cpu_s": ru.ru_utime + ru.ru_stime}) + "\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_one(
    ep: ShapedEndpoint,
    system: str,
    cmd: list[str],
    out: Path,
    level: int,
    episodes: int,
    env: dict[str, str],
    cwd: Path | None = None,
) -> Run:
    out.mkdir(parents=True)
    log, pid_file = out.parent / f"{out.name}.log", out.parent / f"{out.name}.pid"
    pid_file.write_text("")
    load_start = os.getloadavg()[0]
    with open(log, "wb") as fh:
        ep.start_run(pid_file)
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", LAUNCH, str(pid_file), *cmd],
            cwd=out.parent if system.startswith(INSPECT) else (cwd or REPO),
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
        t1 = time.monotonic()
    load_end = os.getloadavg()[0]
    lines = pid_file.read_text().splitlines()
    ru = json.loads(lines[1]) if len(lines) > 1 else {"maxrss_kb": 0, "cpu_s": 0.0}
    calls = episodes * CALLS_PER_EPISODE
    arrivals = sorted(ep.arrivals)
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit status {proc.returncode}")
    if len(arrivals) != calls:
        problems.append(f"{len(arrivals)} requests, expected {calls}")
    if ep.unknown:
        problems.append(f"{ep.unknown} requests not recognised")
    if problems:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{system} at {level} concurrent: {'; '.join(problems)}. Its output ({log}):\n{tail}")
    window = arrivals[-1] + ep.latency_s - arrivals[0]
    return Run(
        system,
        level,
        episodes,
        rate=episodes / window,
        first_request_s=arrivals[0] - t0,
        overhead_ms=(window / calls - ep.latency_s) * 1000,
        cpu_ms=(ru["cpu_s"] - (ep.cpu_at_first or 0.0)) / calls * 1000,
        rss_mb=ru["maxrss_kb"] / 1024,
        wall_s=t1 - t0,
        storage=dir_bytes(out),
        load_start=load_start,
        load_end=load_end,
    )


def check_inspect_log(venv: Path, out: Path, episodes: int) -> None:
    """Every sample of the run's .eval finished and was scored (read with inspect's own reader)."""
    code = (
        "import sys; from inspect_ai.log import list_eval_logs, read_eval_log\n"
        "logs = list_eval_logs(sys.argv[1])\n"
        "assert len(logs) == 1, logs\n"
        "h = read_eval_log(logs[0], header_only=True)\n"
        "print(h.status, h.results.completed_samples if h.results else 0)"
    )
    got = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(out)], capture_output=True, text=True)
    if got.stdout.split() != ["success", str(episodes)]:
        raise RuntimeError(
            f"inspect log in {out}: {got.stdout.strip()} {got.stderr.strip()[-1500:]} (expected success {episodes})"
        )


_TRANSCRIPTS_OFF = re.compile(r"\+{0,2}runner\.transcripts=(?i:false|no|off|0)")


def transcripts_on(overrides: list[str]) -> bool:
    """Whether a sweep run with these extra overrides records transcripts: False when one turns them
    off, in any of Hydra's spellings (what `check_harness_cell(transcripts=...)` is to check)."""
    return not any(map(_TRANSCRIPTS_OFF.fullmatch, overrides))


def check_harness_cell(out: Path, episodes: int, transcripts: bool = True) -> None:
    """The cell finished (DONE) with every episode ok, and its transcripts hold every call
    (`transcripts=False`: a run with `runner.transcripts=false`, whose calls have none)."""
    from runners.records.results import open_experiment

    from runners.records.store import shard_dirs

    (cell,) = open_experiment(out / "inspect_compare").cells
    eps = cell.episodes()
    if transcripts:
        calls = sum(1 for e in eps for c in e.calls() if c.has_transcript and c.messages and c.text)
    else:
        calls = sum(1 for e in eps for c in e.calls() if not c.has_transcript)
    stores = shard_dirs(cell.dir) or [cell.dir]  # runner.processes=N: one store per worker, read as one cell
    if not all((d / "DONE").exists() for d in stores) or len(eps) != episodes or calls != episodes * CALLS_PER_EPISODE:
        kind = "with their transcript" if transcripts else "without a transcript"
        raise RuntimeError(f"harness cell {cell.dir}: {len(eps)} episodes of {episodes}, {calls} calls {kind}")


# ----------------------------------------------------------------------------- report
def med(runs: list[Run], attr: str) -> float:
    if not runs:
        return float("nan")
    return statistics.median(getattr(r, attr) if attr != "bytes_per_episode" else r.bytes_per_episode for r in runs)


def load_span(runs: list[Run]) -> str:
    """The 1-minute load average at the start → at the end of `runs` (lowest–highest of each)."""
    if not runs:
        return "-"

    def span(xs: list[float]) -> str:
        lo, hi = min(xs), max(xs)
        return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}–{hi:.1f}"

    return f"{span([r.load_start for r in runs])} → {span([r.load_end for r in runs])}"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b and a == a and b == b else "-"  # x == x: not NaN


def report(runs: list[Run], levels: list[int], latency_ms: float, keep: Path | None) -> None:
    systems = [s for s in SYSTEMS if any(r.system == s for r in runs)]
    others = [s for s in systems if s != "harness"]

    def of(system: str | None, level: int | None = None) -> list[Run]:
        return [r for r in runs if (system is None or r.system == system) and (level is None or r.level == level)]

    # episodes/s and CPU per call side by side, per level: the rate alone flatters whichever side
    # the machine's load hurts less; the CPU ratio is what a quiet machine would show
    head = (
        "| concurrent | "
        + " | ".join(f"{LABEL[s]} ep/s" for s in systems)
        + " | "
        + " | ".join(f"harness / {LABEL[s]} ep/s" for s in others)
        + " | "
        + " | ".join(f"{LABEL[s]} CPU ms/call" for s in systems)
        + " | "
        + " | ".join(f"{LABEL[s]} / harness CPU" for s in others)
        + " | load 1-min start → end |"
    )
    cols = head.count("|") - 1
    print("\n" + head + "\n|" + "---:|" * cols)
    for n in levels:
        rate = {s: med(of(s, n), "rate") for s in systems}
        cpu = {s: med(of(s, n), "cpu_ms") for s in systems}
        print(
            f"| {n} | "
            + " | ".join(f"{rate[s]:.2f}" for s in systems)
            + " | "
            + " | ".join(ratio(rate["harness"], rate[s]) for s in others)
            + " | "
            + " | ".join(f"{cpu[s]:.2f}" for s in systems)
            + " | "
            + " | ".join(ratio(cpu[s], cpu["harness"]) for s in others)
            + f" | {load_span(of(None, n))} |"
        )

    rows: list[tuple[str, str, list[Run], str]] = []  # (measure, attribute, the runs it reads, format)
    lo, hi = min(levels), 32 if 32 in levels else max(levels)
    if lo == 1:  # calls follow each other only when one episode runs at a time
        rows.append(
            (
                f"wall overhead per call beyond {latency_ms:.0f} ms, at 1 concurrent (ms)",
                "overhead_ms",
                of(None, 1),
                "{:.1f}",
            )
        )
    rows.append((f"peak RSS at {hi} concurrent (MB)", "rss_mb", of(None, hi), "{:.0f}"))
    rows.append(("time to first request, all runs (s)", "first_request_s", runs, "{:.2f}"))
    rows.append((f"process wall at {hi} concurrent (s)", "wall_s", of(None, hi), "{:.2f}"))
    rows.append((f"storage per episode at {hi} concurrent (bytes)", "bytes_per_episode", of(None, hi), "{:,.0f}"))
    print(
        "\n| measure | "
        + " | ".join(LABEL[s] for s in systems)
        + " | "
        + " | ".join(f"harness / {LABEL[s]}" for s in others)
        + " | load 1-min start → end |\n|---|"
        + "---:|" * (len(systems) + len(others) + 1)
    )
    for name, attr, sel, fmt in rows:
        v = {s: med([r for r in sel if r.system == s], attr) for s in systems}
        print(
            f"| {name} | "
            + " | ".join(fmt.format(v[s]) for s in systems)
            + " | "
            + " | ".join(ratio(v["harness"], v[s]) for s in others)
            + f" | {load_span(sel)} |"
        )
    print(
        "\nruns (system, concurrent: episodes/s, first request s, wall overhead ms/call (at 1), CPU ms/call, "
        "RSS MB, bytes/episode, load 1-min start → end):"
    )
    for r in runs:
        over = f"{r.overhead_ms:6.1f}" if r.level == 1 else f"{'-':>6}"
        print(
            f"  {r.system:<28} {r.level:>3}: {r.rate:7.2f} {r.first_request_s:6.2f} {over} {r.cpu_ms:6.2f} "
            f"{r.rss_mb:6.0f} {r.bytes_per_episode:9,.0f}  {r.load_start:.1f} → {r.load_end:.1f}"
        )
    for system in systems:
        last = of(system, hi)[-1]
        kinds = ", ".join(f"{k} {v / last.episodes:,.0f}" for k, v in storage_kinds(last.storage).items())
        print(f"\n{system} files at {hi} concurrent ({last.episodes} episodes; bytes per episode: {kinds}):")
        for name, size in last.storage.items():
            print(f"  {size:>10,}  {name}")
    if keep:
        print(f"\nrun directories kept in {keep}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", help="concurrent episodes (default 1 32 64; 64 with --quick)")
    ap.add_argument("--rounds", type=int, default=3, help="episodes per run = rounds x concurrency")
    ap.add_argument("--repeats", type=int, help="runs of each system at each level (default 3; 1 with --quick)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a short run: one level (64 concurrent unless --levels), one repeat (a few minutes)",
    )
    ap.add_argument(
        "--no-realtime-variant",
        dest="variant",
        action="store_false",
        help=f"leave out the `{INSPECT_NO_REALTIME}` runs",
    )
    ap.add_argument("--latency", type=float, default=0.1, help="endpoint latency per call, seconds")
    ap.add_argument("--background-chars", type=int, default=3000, help="length of each task's first background")
    ap.add_argument("--reply-chars", type=int, default=1500, help="length of each reasoning-tool reply")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the inspect_ai venv (made once if missing)")
    ap.add_argument("--keep", type=Path, default=None, help="keep every run's output directory here")
    a = ap.parse_args()
    levels = sorted(set(a.levels or ([64] if a.quick else [1, 32, 64])))
    a.repeats = a.repeats or (1 if a.quick else 3)
    systems = SYSTEMS if a.variant else SYSTEMS[:2]
    exe = inspect_venv(a.venv.expanduser())
    most = a.rounds * max(levels)
    w = workload(most, a.background_chars)
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="inspect-compare-"))
    root.mkdir(parents=True, exist_ok=True)
    data_dir = write_workload(root / "data", w["rows"])
    shutil.copy(TASK_FILE, root / TASK_FILE.name)  # inspect takes a path relative to its working directory
    wfile = root / "workload.json"
    wfile.write_text(json.dumps({k: v for k, v in w.items() if k != "rows"}))
    env = harness_env()
    env_inspect = {**env, "OPENAI_API_KEY": "EMPTY"}
    print(
        f"endpoint latency {a.latency * 1000:.0f} ms; {CALLS_PER_EPISODE} calls per episode; medians of {a.repeats}; "
        f"episodes per run = {a.rounds} x concurrency; load average {os.getloadavg()[0]:.2f} at start",
        flush=True,
    )
    runs: list[Run] = []
    try:
        with ShapedEndpoint(w, a.latency, a.reply_chars) as ep:
            url = ep.base_url

            def one(system: str, n: int, episodes: int, tag: str) -> Run:
                out = root / f"{tag}-{SLUG[system]}-{n}"
                if system == "harness":
                    r = run_one(ep, system, harness_cmd(url, data_dir, out, n, episodes), out, n, episodes, env)
                    check_harness_cell(out, episodes)
                else:
                    cmd = inspect_cmd(exe, url, wfile, out, n, episodes, realtime=system == INSPECT)
                    r = run_one(ep, system, cmd, out, n, episodes, env_inspect)
                    check_inspect_log(a.venv.expanduser(), out, episodes)
                return r

            for system in systems:  # warm-up: page cache, .pyc files (and the variant's option is accepted)
                one(system, 2, 2, "warmup")
            for rep in range(a.repeats):
                order = systems if rep % 2 == 0 else tuple(reversed(systems))
                for n in levels:
                    for system in order:
                        r = one(system, n, a.rounds * n, f"r{rep}")
                        runs.append(r)
                        print(
                            f"  {system:<28} {n:>3} concurrent: {r.rate:6.2f} episodes/s, "
                            f"CPU {r.cpu_ms:.2f} ms/call, first request {r.first_request_s:.2f} s, "
                            f"{r.bytes_per_episode:,.0f} B/episode, load {r.load_start:.2f} → {r.load_end:.2f}",
                            flush=True,
                        )
    finally:
        if not a.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(runs, levels, a.latency * 1000, a.keep)


if __name__ == "__main__":
    main()
