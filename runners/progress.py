"""Live progress of a sweep: cells done / total, episodes, calls, tokens, retries, cost, ETA.
`rich` on a terminal, one plain line per event otherwise (CI, pipes, `runner.display=plain`).

Each cell's row is its `CellReport`, the record the completeness report sums too. Calls, tokens
and retries update as each model call finishes (`CellReport.count_call`, fed by the episode
recorder), not when an episode ends, so a long episode shows its activity. A cell's
elapsed time stops when its last episode is on disk. The ETA extrapolates the episodes finished
in this run (not those skipped from earlier runs) over the episodes left in the whole sweep.
Cell names are shortened in the middle to fit the terminal width."""
from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from runners.api import method_tokens


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
    usage_estimated: int = 0  # calls whose endpoint usage was garbage (tokens estimated instead; CallLog.hygiene says why)
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
        self.cache_hits += int(bool(getattr(log, "cached", False)))
        self.tokens += method_tokens({log.role: log.usage})
        self.retries += len(getattr(log, "retries", ()) or ())
        self.usd += usd
        hygiene = getattr(log, "hygiene", None) or ()
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
    return name[: (keep + 1) // 2] + "…" + name[len(name) - keep // 2:]


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


class Progress:
    def __init__(self, mode: str = "auto") -> None:
        if mode == "auto":
            mode = "rich" if sys.stdout.isatty() else "plain"
        self.mode = mode
        self.cells: list[CellReport] = []
        self.started = time.perf_counter()
        self._live: Any = None
        self._last_refresh = 0.0
        self.expected_cells = 0

    def expect_cells(self, n: int) -> None:
        """The sweep will run `n` cells (they appear as they open)."""
        self.expected_cells = max(self.expected_cells, n)
        self.retries: dict[str, int] = {}  # endpoint URL -> retries so far
        self._retry_shown: dict[str, float] = {}

    def __enter__(self) -> "Progress":
        if self.mode == "rich":
            from rich.live import Live

            self._live = Live(self._render(), refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
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
            self._emit(f"  retrying {url} ({name}): {error[:120]}; waiting {wait_s:.2f}s ({self.retries[url]} retries so far)")
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
                self._emit(f"  {cp.cell}: {n}/{todo} episodes ({status} {task}), {cp.calls} calls, {human_tokens(cp.tokens)} tokens, "
                           f"{cp.retries} retries" + (f", sweep ETA {human_duration(eta)}" if eta else ""))
        self._refresh()

    def finish_cell(self, cp: CellReport) -> None:
        if cp.finished is None:
            cp.finished = time.perf_counter()
            done = sum(c.finished is not None for c in self.cells)
            self._emit(f"[cell done {done}/{max(len(self.cells), self.expected_cells)}] {cp.cell}: {cp.ran}/{cp.todo} run in {human_duration(cp.elapsed)}")
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

    def _render(self) -> Any:
        from rich.table import Table

        done = sum(c.finished is not None for c in self.cells)
        elapsed = time.perf_counter() - self.started
        t = Table(title=f"sweep: cells {done}/{max(len(self.cells), self.expected_cells)} done · {human_duration(elapsed)} elapsed · ETA {human_duration(self.eta())}",
                  expand=False)
        cols = ("cell", "episodes", "errors", "calls", "cached", "retries", "tokens", "elapsed")
        for col in cols:
            t.add_column(col, justify="right" if col != "cell" else "left", no_wrap=True)
        width = shutil.get_terminal_size((120, 24)).columns
        name_w = max(12, width - 78)  # what the other columns leave
        for c in self.cells:
            mark = "✓ " if c.finished is not None else ""
            t.add_row(mark + fit(c.cell, name_w - len(mark)), f"{c.ran}/{c.todo}" + (f" (+{c.skipped})" if c.skipped else ""),
                      f"{c.infra_error + c.harness_error}" if not c.harness_error else f"{c.infra_error}+{c.harness_error}h", str(c.calls), str(c.cache_hits),
                      str(c.retries), human_tokens(c.tokens), human_duration(c.elapsed))
        return t
