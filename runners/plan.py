"""`runner.plan=true`: what a sweep would run and what it would cost, before launch.

Per cell and in total: tasks × trials, expected model calls and tokens per role, and dollars per
role at the prices of the backbone that serves the role (`runners.cost.role_prices`, the rule of
the live budget and the tables). Nothing is called and nothing is written: the cells are surveyed
as a run would survey them (`runners.prepare.survey`: data loaded where it is here, every missing
piece listed), then the plan is printed and the sweep exits 0.

Where each estimate comes from (printed beside it):
- `paper`: the paper's reported #Tok for this method × backbone × benchmark
  (`runners/reference/*.csv`), divided by the paper's task count (`runners/reference/layouts/task_counts.csv`: the
  full split, which the papers evaluate), for the method-side roles on the agent's backbone (the
  `agent` row; the paper's #Tok counts neither the benchmark's judge or simulated user nor
  MemoryArena's `reasoning` tool on its own model). The paper gives no input/output split or
  calls: the split comes from a stored run where there is one, else `ASSUMED_OUTPUT_SHARE`.
- `stored`: the mean per episode of a stored run of the same cell shape under
  `runner.output_dir` (same cell first, else the same method, benchmark and model), named by its
  `<experiment>/<cell>`: calls, input, cached input and output tokens per role. Only a run on the
  benchmark's real data and a real backbone counts: a run on fixture data (`data_dir=fixtures`, or
  data its benchmark records as a fixture) or on the scripted backbone is never borrowed, whatever
  experiment it sits in, and the line says how many were passed over. A benchmark role (judge,
  user simulator) is read from the stored run only where it ran on the same model as planned.
- `unknown`: neither; the total says how many role estimates are unknown.
"""

from __future__ import annotations

import csv
import functools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners.analysis.papers import task_counts
from runners.cost import prices_for, role_prices, usd

ASSUMED_OUTPUT_SHARE = 0.05
"""Share of output tokens assumed when only a total is known (long-horizon agents re-send long
contexts and answer briefly; a stored run replaces it with measured shares). No cache hits assumed."""
NO_PRICE = "no price: tokens only"


@functools.lru_cache(maxsize=None)
def paper_reported_tok(method: str, backbone: str, benchmark: str) -> tuple[float, str] | None:
    """(the paper's #Tok in millions, 'FlowState Table 1') for this cell's names, or None."""
    from runners.analysis.papers import BACKBONE_LABELS, BENCHMARK_DOMAINS, METHOD_ALIASES, METHOD_LABELS, REFERENCE_DIR

    labels = {METHOD_LABELS.get(method, method), *METHOD_ALIASES.get(method, ())}
    want_b, want_d = BACKBONE_LABELS.get(backbone, backbone), BENCHMARK_DOMAINS.get(benchmark, benchmark)
    for path in sorted(REFERENCE_DIR.glob("*.csv")):
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if (
                    row.get("metric") == "Tok"
                    and row.get("row_type", "result") == "result"
                    and row.get("value")
                    and row.get("method") in labels
                    and row.get("backbone") == want_b
                    and (row.get("domain") or row.get("benchmark")) == want_d
                ):
                    return float(row["value"]), f"{row['paper']} {row['table']}"
    return None


@dataclass
class RoleEstimate:
    role: str
    backbone: str
    prices: dict[str, Any] | None
    calls: float | None = None  # per episode
    prompt: float | None = None  # tokens per episode (input, cached included)
    cached: float = 0.0
    completion: float | None = None
    source: str = "unknown"

    @property
    def tokens(self) -> float | None:
        return None if self.prompt is None or self.completion is None else self.prompt + self.completion

    def usd(self, episodes: int) -> float | None:
        if self.tokens is None or self.prices is None:
            return None
        return episodes * (
            usd(
                {
                    "prompt_tokens": self.prompt,
                    "cached_prompt_tokens": self.cached,
                    "completion_tokens": self.completion,
                },
                self.prices,
            )
            or 0.0
        )


@dataclass
class CellPlan:
    cell: str
    label: str
    tasks: int
    trials: int
    tasks_source: str
    roles: list[RoleEstimate] = field(default_factory=list)

    done: int = 0  # finished episodes already on disk (a resumed run skips them)

    @property
    def episodes(self) -> int:
        return self.tasks * self.trials

    @property
    def left(self) -> int:
        return max(self.episodes - self.done, 0)


def episodes_done(cfg: Any, task_ids: list[str] | None) -> int:
    """Finished (task, trial) pairs of this cell already stored under runner.output_dir (read
    only), which a run resumes past; 0 with runner.fresh=true."""
    from runners.records.store import finished_keys, shard_dirs

    if cfg.runner.fresh:
        return 0
    cell = Path(cfg.runner.output_dir) / cfg.experiment.name / cfg.cell_name
    if not cell.is_dir():  # stored under its former name (the key held the endpoint address): adopted at launch
        from runners.config import stored_cell_dirs

        cell = next(iter(stored_cell_dirs(cell.parent, cfg)), cell)
    if not cell.is_dir():
        return 0
    ids = set(task_ids) if task_ids is not None else None
    done = {
        (t, k)
        for d in [cell, *shard_dirs(cell)]
        for t, k in finished_keys(d)
        if 0 <= k < cfg.runner.trials and (ids is None or t in ids)
    }
    return len(done)


def _usage_means(episodes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """role → mean calls / prompt / cached / completion tokens per episode."""
    out: dict[str, dict[str, float]] = {}
    n = len(episodes)
    for e in episodes:
        for role, u in (e.get("usage_by_role") or {}).items():
            d = out.setdefault(role, {"calls": 0.0, "prompt": 0.0, "cached": 0.0, "completion": 0.0})
            d["prompt"] += int(u.get("prompt_tokens", 0) or 0) / n
            d["cached"] += int(u.get("cached_prompt_tokens", 0) or 0) / n
            d["completion"] += int(u.get("completion_tokens", 0) or 0) / n
        for role, c in (e.get("calls_by_role") or {}).items():
            out.setdefault(role, {"calls": 0.0, "prompt": 0.0, "cached": 0.0, "completion": 0.0})["calls"] += (
                int(c or 0) / n
            )
    return out


class StoredRuns:
    """The non-scripted cells stored under an output directory (`<output_dir>/<experiment>/<cell>/`),
    read once, never written."""

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = Path(output_dir)
        self._cells: list[tuple[Path, dict[str, Any]]] | None = None

    def cells(self) -> list[tuple[Path, dict[str, Any]]]:
        """The stored cells an estimate may come from (`passed_over` counts the others by reason)."""
        if self._cells is None:
            self._cells = []
            self.passed_over: list[tuple[Path, dict[str, Any], str]] = []
            if self.output_dir.is_dir():
                for m in sorted(self.output_dir.glob("*/*/manifest.json")):
                    try:
                        manifest = json.loads(m.read_text())
                    except (OSError, ValueError):
                        continue
                    if not isinstance(manifest.get("config"), dict):
                        continue
                    why = not_real(manifest)
                    if why:
                        self.passed_over.append((m.parent, manifest, why))
                    else:
                        self._cells.append((m.parent, manifest))
        return self._cells

    def name(self, d: Path) -> str:
        """A stored run as the plan names it: `<experiment>/<cell>` under the output directory."""
        try:
            return str(d.relative_to(self.output_dir))
        except ValueError:
            return str(d)

    def ignored(self, cfg: Any) -> str:
        """' (passed over: 2 stored run(s) of this cell shape on fixture data)' or ''."""
        self.cells()
        whys = [w for _, m, w in self.passed_over if _shape(m["config"]) == _want(cfg)]
        if not whys:
            return ""
        return "; passed over: " + ", ".join(f"{whys.count(w)} stored run(s) on {w}" for w in dict.fromkeys(whys))

    def find(self, cfg: Any) -> tuple[Path, bool, dict[str, dict[str, float]], int] | None:
        """(cell dir, same cell?, per-role means, episodes) of the best stored run for `cfg`."""
        from runners.records.store import EPISODES, read_jsonl

        candidates = [(d, m) for d, m in self.cells() if _shape(m["config"]) == _want(cfg)]
        candidates.sort(key=lambda dm: dm[1].get("cell_key") != cfg.key())  # the same cell first
        for d, m in candidates:
            eps = [e for e in read_jsonl(d / EPISODES)[0] if e.get("status", "ok") == "ok" and not e.get("scripted")]
            if eps:
                return d, m.get("cell_key") == cfg.key(), _usage_means(eps), len(eps)
        return None


def not_real(manifest: dict[str, Any]) -> str:
    """Why a stored cell cannot stand for a real run ('' when it can): scripted, or fixture data."""
    from runners.analysis.fidelity import is_fixture

    config = manifest["config"]
    if manifest.get("scripted") or (config.get("backbone") or {}).get("kind") == "scripted":
        return "the scripted backbone"
    if is_fixture(manifest, config):
        return "fixture data"
    return ""


def _shape(c: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    return (
        (c.get("method") or {}).get("name"),
        (c.get("benchmark") or {}).get("name"),
        (c.get("backbone") or {}).get("model"),
    )


def _want(cfg: Any) -> tuple[str | None, str | None, str | None]:
    return (cfg.method.name, cfg.benchmark.name, cfg.backbone.model)


def _role_model(config: dict[str, Any], role: str) -> str | None:
    """The model a stored cell ran a benchmark role on (its agent's where the role followed it)."""
    r = (config.get("roles") or {}).get(role)
    if isinstance(r, dict) and r.get("model"):
        return str(r["model"])
    return (config.get("backbone") or {}).get("model")


METHOD_ROLES_ON_AGENT = ("agent", "state", "memory", "sentinel")


def plan_cell(cfg: Any, n_tasks: int, tasks_source: str, stored: StoredRuns, bench_roles: tuple[str, ...]) -> CellPlan:
    prices = role_prices(cfg)
    found = stored.find(cfg)
    means = found[2] if found else {}
    where = (
        f"stored run {stored.name(found[0])} ({found[3]} episodes, "
        f"{'same cell' if found[1] else 'same method/benchmark/model'}, real data)"
        if found
        else ""
    )
    stored_cfg: dict[str, Any] = next((m["config"] for d, m in stored.cells() if found and d == found[0]), {})
    passed = stored.ignored(cfg)
    paper = paper_reported_tok(cfg.method.name, cfg.backbone.name, cfg.benchmark.name)
    plan = CellPlan(
        cfg.cell_name,
        f"{cfg.method.name} / {cfg.backbone.name} / {cfg.benchmark.name}",
        n_tasks,
        cfg.runner.trials,
        tasks_source,
    )
    role_backbone = {r: b for r, b in cfg.roles.items()}
    for role in ("agent", *[r for r in bench_roles if r != "agent"]):
        b = role_backbone.get(role) or cfg.backbone
        est = RoleEstimate(
            role=role if role != "agent" else "agent (method)", backbone=b.name, prices=prices_for(role, prices)
        )
        other_model = role != "agent" and found and _role_model(stored_cfg, role) != b.model
        agent_side = (
            [r for r in METHOD_ROLES_ON_AGENT if r in means]
            if role == "agent"
            else ([role] if role in means and not other_model else [])
        )
        m = (
            {k: sum(means[r][k] for r in agent_side) for k in ("calls", "prompt", "cached", "completion")}
            if agent_side
            else None
        )
        if role == "agent" and paper is not None:
            tok_m, table = paper
            n_paper, _ = task_counts().get(cfg.benchmark.name, (None, ""))
            if n_paper:
                total = tok_m * 1e6 / n_paper
                if m and (m["prompt"] + m["completion"]) > 0:
                    share, cache = (
                        m["completion"] / (m["prompt"] + m["completion"]),
                        (m["cached"] / m["prompt"] if m["prompt"] else 0.0),
                    )
                    split = "input/output split of the stored run"
                else:
                    share, cache = ASSUMED_OUTPUT_SHARE, 0.0
                    split = f"assumed {100 - 100 * ASSUMED_OUTPUT_SHARE:.0f}% input, no cache hits"
                est.prompt, est.completion = total * (1 - share), total * share
                est.cached = est.prompt * cache
                est.calls = m["calls"] if m else None
                est.source = f"paper: {table} #Tok {tok_m:g}M / {n_paper} tasks ({split})"
                plan.roles.append(est)
                continue
        if m is not None:
            est.calls, est.prompt, est.cached, est.completion = m["calls"], m["prompt"], m["cached"], m["completion"]
            est.source = where
        elif found and other_model:
            est.source = f"unknown ({where}: its {role} ran on {_role_model(stored_cfg, role)}, planned on {b.model})"
        elif found:
            est.calls, est.prompt, est.completion, est.source = 0.0, 0.0, 0.0, f"{where}: no calls of this role"
        else:
            est.source = (
                "unknown"
                + (
                    " (not in the paper's #Tok; no stored run"
                    if paper and role != "agent"
                    else " (no paper #Tok, no stored run"
                )
                + (f" on real data{passed})" if passed else ")")
            )
        plan.roles.append(est)
    return plan


def build_plan(cells: list[Any], env: Any = None) -> tuple[list[CellPlan], Any]:
    """The plan of every cell, and the survey (what is missing) it was built from."""
    from runners.api import task_ids
    from runners.prepare import survey

    s = survey(cells, env)
    prepared = {p.cfg.cell_name: p for p in s.prepared}
    stored = StoredRuns(Path(cells[0].runner.output_dir))
    plans = []
    for c in cells:
        p = prepared.get(c.cell_name)
        ids = None
        if p is not None:
            n, src = len(p.tasks), "loaded here"
            ids = task_ids(p.tasks)
        else:
            full, where = task_counts().get(c.benchmark.name, (0, ""))
            n = min(full, c.runner.limit) if c.runner.limit else full
            src = (
                (
                    f"not loaded here, see 'Before a run'; the full split: {where.split(':')[0]}"
                    + (f", runner.limit={c.runner.limit}" if c.runner.limit else "")
                )
                if full
                else "unknown: not loaded here"
            )
        bench_roles = tuple(getattr(c.benchmark.cls, "roles", ()) or ())
        plan = plan_cell(c, n, src, stored, bench_roles)
        plan.done = min(episodes_done(c, ids), plan.episodes)
        plans.append(plan)
    return plans, s


def _num(x: float | None, unit: str = "") -> str:
    if x is None:
        return "?"
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.2f}{suffix}{unit}"
    return f"{x:.0f}{unit}" if x == int(x) else f"{x:.1f}{unit}"


def _usd(x: float | None, priced: bool) -> str:
    if not priced:
        return NO_PRICE
    return "?" if x is None else (f"${x:,.2f}" if x >= 1 else f"${x:.4f}")


def _budget_line(cells: list[Any], estimate: float | None) -> str | None:
    """The experiment's budget (runner.budget_usd, else the one recorded with the experiment), what
    its stored records spent (runners/budget.py: read only) and whether the estimate fits."""
    from runners.budget import manifest_prices, recorded_budget, stored_spend, usd_text

    root = Path(cells[0].runner.output_dir) / cells[0].experiment.name
    budget = cells[0].runner.budget_usd or recorded_budget(root)
    if budget is None:
        return None
    current = {c.cell_name: role_prices(c) for c in cells}
    spent = sum(c.spent for c in stored_spend(root, lambda cell, m: manifest_prices(cell, m, current)).values())
    left = max(budget - spent, 0.0)
    fits = (
        ""
        if estimate is None
        else (
            "; the estimate above fits in what is left"
            if estimate <= left
            else "; the estimate above does not fit: the run stops when it is spent (docs/runner.md §5); "
            f"runner.budget_usd={spent + estimate:.4f} or more would cover it"
        )
    )
    return (
        f"Budget: ${budget:g} for the experiment, {usd_text(spent)} spent by its stored records, "
        f"{usd_text(left)} left{fits}."
    )


def format_plan(cells: list[Any], plans: list[CellPlan], s: Any) -> str:
    exp = cells[0].experiment.name
    out = [
        f"Plan of experiment '{exp}': {len(cells)} cell(s). "
        "No model is called and nothing is written (runner.plan=true).",
        "Estimates per role: calls and tokens for the episodes the cell has left to run "
        "(finished ones are resumed past), $ at the list prices of the backbone serving "
        "the role; each says its source (paper #Tok per task, a stored run, or unknown).",
        "",
    ]
    by_role: dict[tuple[str, str], list[float]] = {}
    unknown = 0
    total_eps = 0
    priced_known = False  # some priced role has a token estimate
    for p in plans:
        total_eps += p.left
        done = f"; {p.done} already done, {p.left} to run" if p.done else ""
        out.append(
            f"{p.label}: {p.tasks} tasks × {p.trials} trial(s) = {p.episodes} episodes{done} (tasks: {p.tasks_source})"
        )
        for r in p.roles:
            calls = None if r.calls is None else r.calls * p.left
            toks = None if r.tokens is None else r.tokens * p.left
            cost = r.usd(p.left)
            out.append(
                f"    {r.role:<15} {r.backbone:<18} calls {_num(calls):>7}  tokens {_num(toks):>8}  "
                f"{_usd(cost, r.prices is not None):<22} [{r.source}]"
            )
            if toks is None:
                unknown += 1
            priced_known = priced_known or (toks is not None and r.prices is not None)
            # [tokens, $, calls, priced, cells with unknown tokens, cells with unknown calls]
            agg = by_role.setdefault((r.role, r.backbone), [0.0, 0.0, 0.0, 1.0 if r.prices is not None else 0.0, 0, 0])
            agg[0] += toks or 0.0
            agg[1] += cost or 0.0
            agg[2] += calls or 0.0
            agg[4] += toks is None
            agg[5] += calls is None
    out.append("")
    tok_total = sum(v[0] for v in by_role.values())
    usd_total = sum(v[1] for v in by_role.values())
    out.append(
        f"Total: {total_eps} episodes to run; {_num(tok_total) if tok_total else 'no'} tokens estimated"
        + (f" ({unknown} role estimate(s) unknown, not included)" if unknown else "")
        + ". By role and backbone:"
    )
    for (role, backbone), (toks, cost, calls, priced, tok_unknown, calls_unknown) in sorted(by_role.items()):
        some = lambda v, k, fmt: "?" if k and not v else fmt(v) + (f" + {k} cell(s) unknown" if k else "")  # noqa: E731
        out.append(
            f"    {role:<15} {backbone:<18} calls {some(calls, calls_unknown, _num):>7}  "
            f"tokens {some(toks, tok_unknown, _num):>8}  "
            + (
                "?"
                if tok_unknown and not toks and priced
                else _usd(cost, bool(priced)) + (" (known part)" if tok_unknown and toks and priced else "")
            )
        )
    unpriced = sorted({b for (_, b), v in by_role.items() if not v[3]})
    unpriced_roles = sorted({f"{role} ({b})" for (role, b), v in by_role.items() if not v[3]})
    priced_unknown = sum(v[4] for v in by_role.values() if v[3])
    if not any(v[3] for v in by_role.values()):
        out.append(f"Total $: {NO_PRICE}.")
    else:
        out.append(
            f"Total $ at list prices: {_usd(usd_total, True) if priced_known else '?'}"
            + (
                f" for the priced roles whose tokens are estimated ({priced_unknown} priced role estimate(s) unknown)"
                if priced_unknown
                else " for the priced roles"
                if unpriced
                else ""
            )
            + "."
        )
    if unpriced_roles:  # one line: which roles have no price, and how to give one
        out.append(
            f"Unpriced roles: {', '.join(unpriced_roles)}. Give prices (USD per 1M tokens) with "
            "backbone.prices.input=<USD> backbone.prices.output=<USD> (the agent's backbone), or "
            "runner.prices_file=<prices.yaml> mapping each model or backbone name to {input, cached_input, output}."
        )
    budget_line = _budget_line(cells, usd_total if priced_known else None)
    if budget_line:
        out.append(budget_line)
    prices_used = {}
    for c in cells:
        for b in (c.backbone, *(x for _, x in c.roles.items())):
            if b is not None and b.prices:
                prices_used[b.name] = b
    for name, b in sorted(prices_used.items()):
        p = b.prices
        out.append(
            f"    prices {name}: ${p['input']:g} input, ${p['cached_input']:g} cached input, "
            f"${p['output']:g} output per 1M tokens"
            + (f" ({b.prices_source})" if getattr(b, "prices_source", None) else "")
        )
    if s.missing:
        from runners.availability import describe

        out += ["", "Before a run: " + describe(s.missing, s.labels, len(cells))]
    return "\n".join(out)


def print_plan(cells: list[Any], out: Any = None) -> int:
    """Print the plan of `cells` (runner.plan=true) and return the exit code: 0, or 3 when the
    cells cannot even be surveyed (e.g. duplicate task ids)."""
    from runners.config import FatalRunError

    try:
        plans, s = build_plan(cells)
    except FatalRunError as e:
        from runners.secrets import redact_secrets

        print(f"error: {redact_secrets(str(e))}", file=sys.stderr)
        return 3
    print(format_plan(cells, plans, s), file=out or sys.stdout)
    return 0
