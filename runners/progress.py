"""Live progress of a sweep: cells, episodes, tokens, errors. `rich` on a terminal, one plain
line per event otherwise (CI, pipes, `runner.display=plain`)."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field


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
    started: float = field(default_factory=time.perf_counter)


class Progress:
    def __init__(self, mode: str = "auto") -> None:
        if mode == "auto":
            mode = "rich" if sys.stdout.isatty() else "plain"
        self.mode = mode
        self.cells: list[CellProgress] = []
        self._live = None
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

    def start_cell(self, name: str, total: int, skipped: int) -> CellProgress:
        cp = CellProgress(name=name, total=total, skipped=skipped)
        self.cells.append(cp)
        self._emit(f"[cell] {name}: {total} episodes, {skipped} already finished, {total - skipped} to run")
        return cp

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

    def episode(self, cp: CellProgress, *, status: str, tokens: int, calls: int, cache_hits: int, task: str) -> None:
        cp.calls += calls
        cp.cache_hits += cache_hits
        cp.tokens += tokens
        if status == "ok":
            cp.done += 1
        elif status == "infra_error":
            cp.infra += 1
        else:
            cp.harness += 1
        n = cp.done + cp.infra + cp.harness
        if self.mode == "plain":
            todo = cp.total - cp.skipped
            if status != "ok" or n == todo or n % max(1, todo // 10) == 0:
                self._emit(f"  {cp.name}: {n}/{todo} episodes ({status} {task}), {cp.tokens:,} tokens")
        self._refresh()

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

        t = Table(title="sweep", expand=False)
        for col in ("cell", "episodes", "infra err", "harness err", "calls", "cache hits", "tokens", "elapsed"):
            t.add_column(col, justify="right" if col != "cell" else "left")
        for c in self.cells:
            todo = c.total - c.skipped
            t.add_row(c.name, f"{c.done + c.infra + c.harness}/{todo} (+{c.skipped} done)", str(c.infra), str(c.harness),
                      str(c.calls), str(c.cache_hits), f"{c.tokens:,}", f"{time.perf_counter() - c.started:.1f}s")
        return t
