"""Live progress of a sweep: cells done / total, episodes, calls, tokens, retries, cost, ETA.
`rich` on a terminal, one plain line per event otherwise (CI, pipes, `runner.display=plain`).

Calls, tokens and retries update as each model call finishes (`Progress.call`, fed by the
episode recorder), not when an episode ends, so a long episode shows its activity. A cell's
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
class CellProgress:
    name: str
    total: int
    skipped: int = 0
    done: int = 0
    infra: int = 0
    harness: int = 0
    tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    usd: float = 0.0
    started: float = field(default_factory=time.perf_counter)
    finished: float | None = None

    @property
    def todo(self) -> int:
        return self.total - self.skipped

    @property
    def ran(self) -> int:
        return self.done + self.infra + self.harness

    @property
    def elapsed(self) -> float:
        return (self.finished or time.perf_counter()) - self.started


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
        self.cells: list[CellProgress] = []
        self.started = time.perf_counter()
        self._live = None
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

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)

    # ------------------------------------------------------------------ events
    def start_cell(self, name: str, total: int, skipped: int) -> CellProgress:
        cp = CellProgress(name=name, total=total, skipped=skipped)
        self.cells.append(cp)
        self._emit(f"[cell] {name}: {total} episodes, {skipped} already finished, {total - skipped} to run")
        return cp

    def call(self, cp: CellProgress, log: Any, usd: float = 0.0) -> None:
        """One model call finished (a `runners.episode.CallLog`)."""
        cp.calls += 1
        cp.cache_hits += int(bool(getattr(log, "cached", False)))
        cp.tokens += method_tokens({log.role: log.usage})  # #Tok: method-side roles only
        cp.retries += len(getattr(log, "retries", ()) or ())
        cp.usd += usd
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

    def episode(self, cp: CellProgress, *, status: str, task: str, **_: Any) -> None:
        """One episode is on disk. (Calls and tokens were counted per call.)"""
        if status == "ok":
            cp.done += 1
        elif status == "infra_error":
            cp.infra += 1
        else:
            cp.harness += 1
        if self.mode == "plain":
            n, todo = cp.ran, cp.todo
            if status != "ok" or n == todo or n % max(1, todo // 10) == 0:
                eta = self.eta()
                self._emit(f"  {cp.name}: {n}/{todo} episodes ({status} {task}), {cp.calls} calls, {human_tokens(cp.tokens)} tokens, "
                           f"{cp.retries} retries" + (f", sweep ETA {human_duration(eta)}" if eta else ""))
        self._refresh()

    def finish_cell(self, cp: CellProgress) -> None:
        if cp.finished is None:
            cp.finished = time.perf_counter()
            done = sum(c.finished is not None for c in self.cells)
            self._emit(f"[cell done {done}/{max(len(self.cells), self.expected_cells)}] {cp.name}: {cp.ran}/{cp.todo} run in {human_duration(cp.elapsed)}")
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

    def _render(self):
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
            t.add_row(mark + fit(c.name, name_w - len(mark)), f"{c.ran}/{c.todo}" + (f" (+{c.skipped})" if c.skipped else ""),
                      f"{c.infra + c.harness}" if not c.harness else f"{c.infra}+{c.harness}h", str(c.calls), str(c.cache_hits),
                      str(c.retries), human_tokens(c.tokens), human_duration(c.elapsed))
        return t
