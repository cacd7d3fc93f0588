"""`runner.budget_usd`: the experiment's total spend, kept across resumes.

The budget belongs to the experiment, not to one run: it is recorded in `<experiment>/budget.json`
(a later run without `runner.budget_usd` keeps it; a new value replaces it and the file keeps the
history), and what was spent is counted from what is stored: every record of every cell of the
experiment folder (finished episodes, failed ones in `errors.jsonl`, shards, and results moved
aside by `runner.fresh=true` under `.superseded/`), each model call at the list prices of the
backbone serving its role (`runners.cost.role_prices`), calls served from the response cache
free. So running the same command again never spends the budget again.

Inside a run (`runners.run.Scheduler`):
- episodes start in fair order (task k of every cell before task k+1, trial 0 before trial 1);
  a round starts only when the budget left, less what the episodes in flight are expected to
  spend still, covers the round at each cell's own estimate (`CellCost.estimate`: the mean
  list-price cost of the cell's stored and finished episodes, else the plan's estimate
  (runners/plan.py: the paper's #Tok or a stored run of the same shape, at the cell's prices),
  else the mean of the sweep's other cells). While no cell has any estimate, episodes run one at
  a time, so the first one teaches the others;
- before each model call that is not a cache hit, `BudgetGuard` refuses it once the spend has
  reached the cap (the episode ends as an infra error, run again on resume): a run stops within
  the cost of the calls in flight, one call at concurrency 1, of the cap;
- at the end the report says what was spent in all and what finishing would cost.

One process keeps the budget (`runner.processes` is 1 with a budget, runners/procs.py). Shards
run as separate commands (`runner.shard=i/n`) each count what is stored when they start: run them
one after another to keep the cap exact.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from runners.api import Backbone, BackboneError
from runners.backbones.forwarding import Forwarding
from runners.cost import call_usd, episode_usd, role_prices

BUDGET = "budget.json"
LAST: dict[str, Any] = {}
"""The budget's account of the last run in this process (`runners.run.Scheduler`), for the report:
budget, spent_before, spent, finishing (estimated cost of what is left), unknown (cells without an
estimate), cut_short (episodes a refused call ended)."""


def recorded_budget(root: Path) -> float | None:
    """The budget recorded with the experiment (None when none is)."""
    try:
        data = json.loads((Path(root) / BUDGET).read_text())
        value = data.get("budget_usd")
        return float(value) if value is not None and float(value) > 0 else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def record_budget(root: Path, budget_usd: float | None) -> tuple[float | None, str]:
    """The experiment's budget for this run and where it comes from: `budget_usd` when given
    (recorded in `<root>/budget.json`, the earlier values kept in its history), else the recorded
    one, else None."""
    from runners.records.store import atomic_write

    path = Path(root) / BUDGET
    old = recorded_budget(root)
    if budget_usd is None:
        return old, (f"recorded with the experiment in {path}" if old is not None else "")
    if old != budget_usd:
        try:
            history = json.loads(path.read_text()).get("history", [])
            if not isinstance(history, list):
                history = []
        except (OSError, ValueError, AttributeError):
            history = []
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        data = {"budget_usd": budget_usd, "history": [*history, {"budget_usd": budget_usd, "set_at": now}]}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1) + "\n")
    return budget_usd, f"runner.budget_usd, recorded with the experiment in {path}"


def record_spend(record: Mapping[str, Any], prices_by_role: Mapping[str, Any]) -> float:
    """What one stored record cost: every call not served from the response cache at its role's
    prices. A record without call logs (a storage failure keeps only its usage) counts its whole
    usage at list price."""
    from runners.analysis.episodes import _calls  # every call of a stored record, in order

    calls = [c for c in _calls(dict(record)) if isinstance(c, Mapping)]
    if not calls:
        return episode_usd(record, prices_by_role) or 0.0
    return sum(
        call_usd(str(c.get("role")), c.get("usage") or {}, prices_by_role) or 0.0 for c in calls if not c.get("cached")
    )


@dataclass
class CellCost:
    """What the stored records of one cell cost: `spent` (cache hits free) and the list-price cost
    of each finished episode (`listed`: the cell's estimate of an episode)."""

    spent: float = 0.0
    listed: list[float] = field(default_factory=list)


def _stores(cell_dir: Path) -> list[Path]:
    from runners.records.store import shard_dirs

    return [cell_dir, *shard_dirs(cell_dir)]


def stored_spend(root: Path, prices: Callable[[str, dict[str, Any]], Mapping[str, Any]]) -> dict[str, CellCost]:
    """cell name → `CellCost` of every cell stored under the experiment folder `root` (finished
    and failed records, shards, `.superseded/` copies). `prices(cell, manifest)`: the role prices
    to charge the cell's calls at (this run's for its cells, the manifest's for the others)."""
    from runners.records.store import EPISODES, ERRORS, MANIFEST, SUPERSEDED, read_jsonl

    root = Path(root)
    out: dict[str, CellCost] = {}
    if not root.is_dir():
        return out
    dirs = [(d.name, d, True) for d in sorted(root.iterdir()) if (d / MANIFEST).exists() or list(d.glob("shard-*"))]
    sup = root / SUPERSEDED
    if sup.is_dir():
        dirs += [(c.name, s, False) for c in sorted(sup.iterdir()) if c.is_dir() for s in sorted(c.iterdir())]
    for name, d, current in dirs:
        manifest: dict[str, Any] = {}
        for m in (d / MANIFEST, *(s / MANIFEST for s in _stores(d)[1:])):
            try:
                manifest = json.loads(m.read_text())
                break
            except (OSError, ValueError):
                continue
        by_role = prices(name, manifest if isinstance(manifest, dict) else {})
        cost = out.setdefault(name, CellCost())
        for s in _stores(d):
            for fname in (EPISODES, ERRORS):
                for r in read_jsonl(s / fname)[0]:
                    cost.spent += record_spend(r, by_role)
                    if current and fname == EPISODES and r.get("status", "ok") == "ok":
                        cost.listed.append(episode_usd(r, by_role) or 0.0)
    return out


def manifest_prices(cell: str, manifest: Mapping[str, Any], current: Mapping[str, Any]) -> Mapping[str, Any]:
    """The role prices of a stored cell: this run's when it runs the cell, else its manifest's."""
    if cell in current:
        return current[cell]
    config = manifest.get("config") if isinstance(manifest, Mapping) else None
    return role_prices(config) if isinstance(config, Mapping) else {}


def plan_estimate(cfg: Any, stored: dict[str, Any] | None = None) -> float | None:
    """The plan's expected list-price cost of one episode of `cfg` (runners/plan.py: the paper's
    #Tok or a stored run of the same shape, at the cell's prices), None when no role is known.
    `stored`: output dir → `StoredRuns`, kept between calls (each reads its folder once)."""
    try:
        from runners.plan import StoredRuns, plan_cell

        bench_roles = tuple(getattr(cfg.benchmark.cls, "roles", ()) or ())
        out = str(cfg.runner.output_dir)
        runs = (stored if stored is not None else {}).setdefault(out, StoredRuns(Path(out)))
        plan = plan_cell(cfg, 1, "", runs, bench_roles)
    except Exception:  # an estimate is a help, never a reason to fail the run
        return None
    known = [c for r in plan.roles if (c := r.usd(1)) is not None]
    return sum(known) if known else None


class BudgetReached(BackboneError):
    """A call refused because the experiment's budget is spent (an infra error: run again on resume)."""


class BudgetGuard(Forwarding):
    """`inner` refusing a call once `ledger.exhausted()` says the budget is spent (counting what
    the calls in flight, `ledger.calls_flying`, are expected to cost). It sits under the response
    cache, so a cache hit still costs nothing and is always served."""

    def __init__(self, inner: Backbone, ledger: Any) -> None:
        super().__init__(inner)
        self.ledger = ledger

    def __getattr__(self, name: str) -> Any:  # base_url, sampling, extra_body (the cache's key) and the rest
        if name == "inner":  # not set yet (copying, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @contextmanager
    def around_call(self) -> Iterator[None]:
        why = self.ledger.exhausted(calls=True)
        if why:
            raise BudgetReached(why)
        self.ledger.calls_flying += 1
        try:
            yield
        finally:
            self.ledger.calls_flying -= 1

    def bind(self, scope: Any) -> Backbone:
        return BudgetGuard(self.inner.bind(scope), self.ledger)


def usd_text(x: float) -> str:
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}"
