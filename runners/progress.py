"""Live progress of a sweep: cells done / total, episodes, calls, tokens, retries, cost, ETA.
`rich` on a terminal, one plain line per event otherwise (CI, pipes, `runner.display=plain`).

Each cell's row is its `CellReport`, the record the completeness report sums too. Calls, tokens
and retries update as each model call finishes (`CellReport.count_call`, fed by the episode
recorder), not when an episode ends, so a long episode shows its activity. A cell's
elapsed time stops when its last episode is on disk. The ETA extrapolates the episodes finished
in this run (not those skipped from earlier runs) over the episodes left in the whole sweep.

The live table fits the terminal: cells are labelled by what tells them apart (the method, and
the benchmark, backbone or hash only where cells differ in them), and below 100 columns it shows
fewer, shorter columns (retries and cache hits move to the title). In plain mode (not a
terminal: logs, nohup, Slurm) a heartbeat line every `heartbeat_s` seconds (runner.heartbeat_s)
says the run is alive before and between finished episodes: calls and episodes in flight,
episodes done, calls, retries, tokens, elapsed, ETA."""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from runners.api import BENCHMARK_ROLES, METHOD_ROLES, Usage, method_tokens


@dataclass
class CellReport:
    """One cell's counts in this run: the scheduler fills it (`count_call`, `count_episode`), the
    live display shows it as the cell's row and the completeness report (`runners.sweep.print_report`)
    sums it. Calls, cache hits, tokens, retries and cost are counted per model call as it finishes."""

    cell: str  # the cell's name, with ' [shard i/n]' when runner.shard is set
    total: int = 0  # episodes of the cell (tasks × trials; of the shard when sharded)
    skipped: int = 0  # finished in earlier runs
    ok: int = 0
    infra_error: int = 0
    harness_error: int = 0
    not_started: int = 0  # episodes left for a later run (runner.budget_usd reached)
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0  # #Tok: method-side roles only
    retries: int = 0
    usd: float = 0.0  # spent by this run (cache hits cost nothing)
    usage_estimated: int = (
        0  # calls whose endpoint usage was garbage (tokens estimated instead; CallLog.hygiene says why)
    )
    redacted: int = 0  # calls whose reply echoed a configured secret (redacted before storage)
    errors: list[str] = field(default_factory=list)  # '<task>#<trial>: <first line of the error>'
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None  # when the cell's last episode was on disk

    @property
    def todo(self) -> int:
        return self.total - self.skipped

    @property
    def ran(self) -> int:
        return self.ok + self.infra_error + self.harness_error

    @property
    def elapsed(self) -> float:
        return (self.finished or time.perf_counter()) - self.started

    def count_call(self, log: Any, usd: float = 0.0) -> None:
        """One model call finished (a `runners.episode.CallLog`) and cost `usd`."""
        self.calls += 1
        if getattr(log, "cached", False):
            self.cache_hits += 1
        role, usage = log.role, log.usage
        if type(usage) is Usage and role in METHOD_ROLES:  # `method_tokens` of the usual call, without its checks
            self.tokens += usage.prompt_tokens + usage.completion_tokens
        elif role not in BENCHMARK_ROLES:  # any other usage, or a role outside `Role` (an error)
            self.tokens += method_tokens({role: usage})
        retries = getattr(log, "retries", None)
        if retries:
            self.retries += len(retries)
        self.usd += usd
        hygiene = getattr(log, "hygiene", None)
        if hygiene:
            self.usage_estimated += int(any(h.startswith("usage:") for h in hygiene))
            self.redacted += int(any(h.startswith("redacted:") for h in hygiene))

    def count_episode(self, status: str, task: str = "", error: str | None = None) -> None:
        """One episode of `task` is on disk with `status` (ok, infra_error or harness_error)."""
        setattr(self, status, getattr(self, status) + 1)
        if status != "ok":
            lines = (error or "").splitlines()
            self.errors.append(f"{task}: {lines[0] if lines else ''}")


def fit(name: str, width: int) -> str:
    """`name` shortened in the middle with '…' to at most `width` characters."""
    if len(name) <= width or width < 5:
        return name
    keep = width - 1
    return name[: (keep + 1) // 2] + "…" + name[len(name) - keep // 2 :]


def human_tokens(n: float) -> str:
    """Token counts readable at a glance: 950, 12.3k, 4.56M."""
    if n < 1000:
        return f"{n:.0f}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def human_duration(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def short_labels(cells: list[str]) -> dict[str, str]:
    """Cell name (`method__backbone__benchmark__hash`) → the shortest label that tells it apart
    from the others: the method, plus the benchmark, backbone and hash only where cells differ."""
    parts = {c: (c.split(" [", 1)[0].split("__") + ["", "", "", ""])[:4] for c in cells}
    suffix = {c: c[len(c.split(" [", 1)[0]) :] for c in cells}  # ' [shard i/n]'
    keep = [i for i in (2, 1) if len({p[i] for p in parts.values()}) > 1]
    out = {c: "·".join([p[0]] + [p[i] for i in sorted(keep, reverse=True)]) + suffix[c] for c, p in parts.items()}
    if len(set(out.values())) < len(out):  # same method/backbone/benchmark, other config: add the hash
        out = {c: f"{v} #{parts[c][3][:6]}" for c, v in out.items()}
    return out


class Progress:
    NARROW = 100  # below this many columns: fewer, shorter columns

    def __init__(self, mode: str = "auto", heartbeat_s: float | None = 30.0) -> None:
        if mode == "auto":
            mode = "rich" if sys.stdout.isatty() else "plain"
        self.mode = mode
        self.cells: list[CellReport] = []
        self.started = time.perf_counter()
        self._live: Any = None
        self._last_refresh = 0.0
        self.expected_cells = 0
        self.heartbeat_s = heartbeat_s
        self.in_flight = 0  # episodes running now (the scheduler keeps it)
        self.calls_in_flight = 0  # model calls waiting for their reply (runners.pool.InFlight keeps it)
        self._beat: Any = None  # the plain mode's heartbeat task (asyncio.Task)
        self.retries: dict[str, int] = {}  # endpoint URL -> retries so far
        self._retry_shown: dict[str, float] = {}

    def expect_cells(self, n: int) -> None:
        """The sweep will run `n` cells (they appear as they open)."""
        self.expected_cells = max(self.expected_cells, n)

    def __enter__(self) -> "Progress":
        if self.mode == "rich":
            from rich.live import Live

            self._live = Live(self._render(), refresh_per_second=4, transient=False)
            self._live.__enter__()
        elif self.mode == "plain" and self.heartbeat_s:
            import asyncio

            try:
                self._beat = asyncio.get_running_loop().create_task(self._heartbeat())
            except RuntimeError:  # no event loop (a synchronous caller): no heartbeat
                self._beat = None
        return self

    async def _heartbeat(self) -> None:
        import asyncio

        while True:
            await asyncio.sleep(self.heartbeat_s or 30.0)  # started only when set
            self._emit(self.heartbeat_line())

    def heartbeat_line(self) -> str:
        """One line of the whole sweep's state (plain mode, every runner.heartbeat_s seconds)."""
        ran = sum(c.ran for c in self.cells)
        todo = sum(c.todo for c in self.cells)
        done = sum(c.finished is not None for c in self.cells)
        calls = sum(c.calls for c in self.cells)
        cached = sum(c.cache_hits for c in self.cells)
        eta = self.eta()
        return (
            f"[{time.strftime('%H:%M:%S')}] alive: {self.calls_in_flight} calls in flight ({self.in_flight} episodes), "
            f"{ran}/{todo} episodes done, "
            f"cells {done}/{max(len(self.cells), self.expected_cells)}, {calls} calls"
            + (f" ({cached} cached)" if cached else "")
            + f", {sum(c.retries for c in self.cells)} retries, "
            f"{human_tokens(sum(c.tokens for c in self.cells))} tokens, "
            f"{human_duration(time.perf_counter() - self.started)} elapsed, "
            f"ETA {human_duration(eta) if eta is not None else '–'}"
        )

    def __exit__(self, *exc: object) -> None:
        if self._beat is not None:
            self._beat.cancel()
            self._beat = None
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)

    # ------------------------------------------------------------------ events
    def start_cell(self, cell: CellReport) -> CellReport:
        """Show `cell` (opened: its total and skipped counts are known); its clock starts now."""
        cell.started = time.perf_counter()
        self.cells.append(cell)
        self._emit(f"[cell] {cell.cell}: {cell.total} episodes, {cell.skipped} already finished, {cell.todo} to run")
        return cell

    def call(self, cp: CellReport) -> None:
        """One model call of `cp` finished (already counted by `CellReport.count_call`)."""
        now = time.perf_counter()
        if now - self._last_refresh > 0.2:  # rich redraws at 4 Hz anyway; keep per-call cost tiny
            self._last_refresh = now
            self._refresh()

    def retry(self, url: str, error: str, wait_s: float, name: str = "") -> None:
        """A backbone is retrying a call: shown at once, then at most every 2 s per endpoint."""
        self.retries[url] = self.retries.get(url, 0) + 1
        now = time.perf_counter()
        if now - self._retry_shown.get(url, -1e9) >= 2.0:
            self._retry_shown[url] = now
            self._emit(
                f"  retrying {url} ({name}): {error[:120]}; waiting {wait_s:.2f}s ({self.retries[url]} retries so far)"
            )
        self._refresh()

    def note(self, line: str) -> None:
        """A line for the user (plain: printed; rich: above the live table)."""
        self._emit(line)

    def episode(self, cp: CellReport, *, status: str, task: str, **_: Any) -> None:
        """One episode is on disk (already counted by `CellReport.count_episode`)."""
        if self.mode == "plain":
            n, todo = cp.ran, cp.todo
            if status != "ok" or n == todo or n % max(1, todo // 10) == 0:
                eta = self.eta()
                self._emit(
                    f"  {cp.cell}: {n}/{todo} episodes ({status} {task}), {cp.calls} calls, "
                    f"{human_tokens(cp.tokens)} tokens, "
                    f"{cp.retries} retries" + (f", sweep ETA {human_duration(eta)}" if eta else "")
                )
        self._refresh()

    def finish_cell(self, cp: CellReport) -> None:
        if cp.finished is None:
            cp.finished = time.perf_counter()
            done = sum(c.finished is not None for c in self.cells)
            self._emit(
                f"[cell done {done}/{max(len(self.cells), self.expected_cells)}] {cp.cell}: "
                f"{cp.ran}/{cp.todo} run in {human_duration(cp.elapsed)}"
            )
        self._refresh()

    # ------------------------------------------------------------------ summaries
    def eta(self) -> float | None:
        """Seconds left for the whole sweep, from the episode rate of this run; None before any."""
        ran = sum(c.ran for c in self.cells)
        left = sum(c.todo - c.ran for c in self.cells)
        if ran == 0 or left <= 0:
            return None if ran == 0 else 0.0
        return (time.perf_counter() - self.started) / ran * left

    def _emit(self, line: str) -> None:
        if self.mode == "plain":
            print(line, flush=True)
        elif self.mode == "rich" and self._live is not None:
            self._live.console.print(line)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._render())

    def _width(self) -> int:
        if self._live is not None:
            return self._live.console.width
        return shutil.get_terminal_size((120, 24)).columns

    def _render(self, width: int | None = None) -> Any:
        from rich import box
        from rich.table import Table

        width = width or self._width()
        narrow = width < self.NARROW
        done = sum(c.finished is not None for c in self.cells)
        elapsed = time.perf_counter() - self.started
        title = (
            f"cells {done}/{max(len(self.cells), self.expected_cells)} done · {human_duration(elapsed)} · "
            f"ETA {human_duration(self.eta())}"
        )
        if narrow:
            title += f" · {sum(c.retries for c in self.cells)} retries · {sum(c.cache_hits for c in self.cells)} cached"
            cols: tuple[tuple[str, int], ...] = (
                ("cell", 0),
                ("episodes", 9),
                ("err", 5),
                ("calls", 6),
                ("tokens", 7),
                ("time", 6),
            )
        else:
            title = "sweep: " + title
            cols = (
                ("cell", 0),
                ("episodes", 13),
                ("errors", 6),
                ("calls", 7),
                ("cached", 6),
                ("retries", 7),
                ("tokens", 7),
                ("elapsed", 7),
            )
        t = Table(title=title, expand=False, box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD, pad_edge=not narrow)
        for col, w in cols:
            t.add_column(
                col,
                justify="right" if col != "cell" else "left",
                no_wrap=True,
                min_width=len(col),
                max_width=w or None,
                overflow="ellipsis",
            )
        # what the other columns leave for the label (each column: its width + padding and border)
        per_col = 2 if narrow else 3
        name_w = max(12, width - sum(max(w, len(c)) + per_col for c, w in cols[1:]) - per_col - 1)
        names = [c.cell for c in self.cells]
        fits = not narrow and all(len(n) + 2 <= name_w for n in names)
        labels = {n: n for n in names} if fits else short_labels(names)
        for c in self.cells:
            mark = "✓ " if c.finished is not None else ""
            label = mark + fit(labels[c.cell], name_w - len(mark))
            episodes = f"{c.ran}/{c.todo}" + (f" (+{c.skipped})" if c.skipped and not narrow else "")
            errors = (
                f"{c.infra_error + c.harness_error}" if not c.harness_error else f"{c.infra_error}+{c.harness_error}h"
            )
            if narrow:
                t.add_row(label, episodes, errors, str(c.calls), human_tokens(c.tokens), human_duration(c.elapsed))
            else:
                t.add_row(
                    label,
                    episodes,
                    errors,
                    str(c.calls),
                    str(c.cache_hits),
                    str(c.retries),
                    human_tokens(c.tokens),
                    human_duration(c.elapsed),
                )
        return t
