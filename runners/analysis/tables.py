"""`python -m runners.aggregate results/<experiment> [--reference full_context] [--method a,b] [--benchmark x] \
[--cells c1,c2]`

Reads every cell of an experiment, computes the benchmark's metrics per (method, backbone),
token totals (method-side roles; judge and user simulator apart), Δ rows against a reference
method (pp for rates, relative % for tokens), prints a markdown table laid out like FlowState
Table 1 with the papers' numbers beside ours, and writes `tables/summary.{md,csv,tex}` plus a
long-format `tables/metrics.csv` (always of the whole experiment, written atomically; the
filters only narrow what is printed).

A cell counts exactly the episodes its manifest asks for (its task ids × trials 0..trials-1);
other finished records on disk (an earlier run with more trials or a larger limit) are kept and
reported, not counted. Lines with wrong field types are set aside with a note. Cells that share
method, backbone and benchmark are named by the config values that differ
(`flowstate[max_resamples=2]`); cells whose episodes come from more than one code fingerprint
are marked [mixed code]; the sweeps the cells came from are listed."""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from runners.api import MetricSpec, StepSeries, StepView, find_spec, method_tokens
from runners.config import ConfigError, available, import_target
from runners.upstream import reading_records
from runners.cost import episode_usd, prices_for, role_prices
from runners.analysis.fidelity import footnotes, row_marks
from runners.analysis.papers import delta, fmt, fmt_delta, paper_task_count, paper_value, to_latex, to_markdown
from runners.analysis.stats import (
    DEFAULT_RESAMPLES,
    SIGNIFICANCE_LEGEND,
    bootstrap_ci,
    holm,
    paired_bootstrap,
    paired_sign_test,
    rate_interval,
    shared_evaluations,
    significance_mark,
)
from runners.records.store import (
    DONE,
    EPISODES,
    ERRORS,
    INDEX,
    MANIFEST,
    StoreError,
    atomic_write,
    code_fingerprint,
    compacted,
    load_cell_checked,
    paused_gc,
    record_lines,
    shard_dirs,
)


HARNESS_METRICS = (
    MetricSpec(name="Tok", kind="tokens", higher_is_better=False, table=True),
    MetricSpec(name="Tok_no_tool", kind="tokens", higher_is_better=False, table=True),
    MetricSpec(name="USD", kind="cost", higher_is_better=False, table=True),
)
"""The metrics the harness adds to every cell (method-side tokens in millions, list-price cost);
a benchmark declares its own (`Benchmark.metric_specs`)."""


def metric_spec(specs: tuple[MetricSpec, ...] | list[MetricSpec], metric: str) -> MetricSpec:
    """How the tables treat `metric`: the harness's declaration, the benchmark's, or `other`."""
    return find_spec(HARNESS_METRICS, metric) or find_spec(specs, metric) or MetricSpec(name=metric, kind="other")


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _trailing_int(name: str) -> int | None:
    found = re.search(r"(\d+)$", name)
    return int(found.group(1)) if found else None


def curves(c: "CellSummary") -> list[tuple[MetricSpec, list[float | None]]]:
    """The cell's declared curves (`MetricSpec.curve`): each family's members in numeric order."""
    out = []
    for sp in c.specs:
        if sp.curve and "*" in sp.name:
            members = [
                m for m in c.metrics if sp.matches(m) and find_spec(c.specs, m) is sp and _trailing_int(m) is not None
            ]
            if members:
                out.append((sp, [c.metrics[m] for m in sorted(members, key=lambda m: _trailing_int(m) or 0)]))
    return out


def slug(text: str) -> str:
    """A file or element name from a display name (`Acc_k` → `acc_k`)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def table_columns(specs: tuple[MetricSpec, ...] | list[MetricSpec], metrics: dict[str, Any]) -> list[str]:
    """The wide table's columns of a benchmark: its `table` metrics in declaration order; a
    family gives one column per member the cell reports (in natural order), except members
    declared on their own."""
    out: list[str] = []
    for sp in specs:
        if not sp.table:
            continue
        if "*" in sp.name:
            members = [m for m in metrics if sp.matches(m) and find_spec(specs, m) is sp]
            out += sorted(members, key=_natural)
        else:
            out.append(sp.name)
    return list(dict.fromkeys(out))


@dataclass
class CellSummary:
    cell: str
    method: str
    backbone: str
    benchmark: str
    scripted: bool
    n_episodes: int
    n_tasks: int
    trials: int
    metrics: dict[str, float | None]
    table_metrics: list[str]
    specs: tuple[MetricSpec, ...] = ()  # the benchmark's metric declarations (Benchmark.metric_specs)
    outcome: str = "success"  # the score that is an episode's outcome (Benchmark.outcome)
    series: tuple[StepSeries, ...] = ()  # what the method's step log offers the report and plots (Method.step_series)
    views: tuple[StepView, ...] = ()  # (Method.step_views)
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    paraphrased: list[str] = field(default_factory=list)
    extra_on_disk: int = 0  # finished records outside the manifest's tasks × trials (kept, not counted)
    set_aside: list[str] = field(default_factory=list)  # notes on records that could not be aggregated
    codes: dict[str, int] = field(default_factory=dict)  # code fingerprint -> counted episodes
    text_sets: dict[str, int] = field(
        default_factory=dict
    )  # digest of an episode's text fingerprint (`texts`) -> counted episodes
    config: dict[str, Any] = field(default_factory=dict)
    sweep: dict[str, Any] = field(default_factory=dict)  # the sweep that last ran the cell
    ci: dict[str, tuple[float, float]] | None = (
        None  # 95% interval per rate (runners.analysis.stats.rate_interval), computed on demand
    )
    ci_kind: dict[str, str] = field(default_factory=dict)  # metric -> "wilson" | "bootstrap" | "wilson~"
    manifest: dict[str, Any] = field(default_factory=dict, repr=False)  # the cell's manifest (fidelity marks read it)
    episodes: list[dict[str, Any]] = field(
        default_factory=list, repr=False
    )  # the counted records (for intervals and paired tests)
    records: list[dict[str, Any]] = field(
        default_factory=list, repr=False
    )  # every finished record on disk, counted or not (the report lists them all; read once)
    metric_fn: Any = field(default=None, repr=False)  # the benchmark's metric function

    def spec(self, metric: str) -> MetricSpec:
        return metric_spec(self.specs, metric)

    @property
    def mixed_code(self) -> bool:
        return len(self.codes) > 1

    @property
    def mixed_texts(self) -> bool:
        """Counted episodes ran on different model-facing texts (e.g. some paraphrased, some upstream):
        the tables mark the cell [mixed]. Episodes without a recorded fingerprint are not compared."""
        return len(self.text_sets) > 1

    @property
    def partial(self) -> bool:
        """Fewer finished episodes than tasks × trials (infra errors, an interrupted sweep)."""
        return self.n_episodes < self.n_tasks * self.trials


TOK_NOTE = (
    "Tok = method-side roles (agent, tool, state, memory, sentinel; judge and user simulator apart); "
    "Tok_no_tool = the same without the `tool` role (MemoryArena's LLM `reasoning` tool, which upstream runs "
    "inside the environment on its own model): Tok_no_tool is the reading that matches the paper's #Tok "
    "(tokens the method spends on the evaluated backbone); both are shown where the tool was called"
)


def tok_without_tool(tokens: dict[str, int]) -> int:
    """#Tok without the `tool` role (see TOK_NOTE)."""
    return method_tokens({r: v for r, v in tokens.items() if r != "tool"})


def paraphrased_prompts(manifest: dict[str, Any]) -> list[str]:
    """Prompts of a cell that ran on the project's own wording instead of upstream's text (the
    `text_sources` the benchmark and the method record in the manifest)."""
    out = []
    for part in ("benchmark_notes", "method_notes"):
        ts = (manifest.get(part) or {}).get("text_sources") or {}
        out += [f"{part.split('_')[0]}:{k}" for k in ts.get("paraphrased", [])]
    return out


def _wanted(manifest: dict[str, Any], records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """(the records the manifest asks for: its task ids (when recorded) × trials 0..trials-1,
    number of other finished records on disk)."""
    trials = int(manifest.get("trials") or 1)
    ids = manifest.get("task_ids")
    ids = set(ids) if isinstance(ids, list) else None
    keep = [r for r in records if 0 <= r["trial"] < trials and (ids is None or r["task_id"] in ids)]
    return keep, len(records) - len(keep)


def _metrics(
    bench: Any, episodes: list[dict[str, Any]], notes: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The benchmark's metrics; records whose scores the benchmark cannot read are set aside."""
    if not episodes:
        return {}, episodes
    bad = (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError)
    try:
        return bench.metrics(episodes), episodes
    except bad:
        good = []
        for e in episodes:
            try:
                bench.metrics([e])
                good.append(e)
            except bad as err:
                notes.append(
                    f"{EPISODES} record {e['task_id']}#{e['trial']} set aside: wrong field types "
                    f"(its scores cannot be read: {type(err).__name__}: {err})"
                )
        return (bench.metrics(good) if good else {}), good


def summarize(cell_dir: Path) -> CellSummary:
    manifest, on_disk, notes = load_cell_checked(cell_dir)
    episodes, extra = _wanted(manifest, on_disk)
    # In (task, trial) order, not the order episodes finished: float sums, and so the tables, must
    # not depend on scheduling, kills and resumes.
    episodes.sort(key=lambda r: (r["task_id"], r["trial"]))
    try:
        cfg = manifest["config"]
        bench_cls = import_target(cfg["benchmark"]["_target_"], "benchmark")
        with reading_records():  # no download, no warning: the texts it ran on are in its manifest
            bench = bench_cls(name=cfg["benchmark"]["name"], **cfg["benchmark"].get("params", {}))
    except (KeyError, TypeError, ValueError, ConfigError) as e:  # an old or foreign manifest, a renamed adapter
        raise StoreError(
            f"{cell_dir}: cannot rebuild the benchmark from manifest.json ({type(e).__name__}: {e}); "
            "re-run the sweep for this cell or move the directory out of the experiment"
        ) from None
    metrics, episodes = _metrics(bench, episodes, notes)
    try:
        method_cls = import_target(cfg["method"]["_target_"], "method")
    except (KeyError, TypeError, ConfigError):  # the tables do not need it; the report then shows no method views
        method_cls = None
    table = table_columns(bench.metric_specs, metrics)
    tokens: dict[str, int] = {}
    for ep in episodes:
        for role, u in ep.get("usage_by_role", {}).items():
            tokens[role] = tokens.get(role, 0) + int(u.get("prompt_tokens", 0)) + int(u.get("completion_tokens", 0))
    metrics["Tok"] = (method_tokens(tokens) / 1e6) if episodes else None
    if tokens.get("tool"):  # the `tool` role (MemoryArena's LLM reasoning tool) is part of the environment upstream
        metrics["Tok_no_tool"] = tok_without_tool(tokens) / 1e6
    codes: dict[str, int] = {}
    for ep in episodes:
        codes[str(ep.get("code") or "unrecorded")] = codes.get(str(ep.get("code") or "unrecorded"), 0) + 1
    text_sets: dict[str, int] = {}
    for ep in episodes:
        if ep.get("texts") is not None:
            digest = hashlib.sha256(json.dumps(ep["texts"], sort_keys=True).encode()).hexdigest()[:12]
            text_sets[digest] = text_sets.get(digest, 0) + 1
    runs: Any = manifest.get("runs") if isinstance(manifest.get("runs"), list) else []
    sweep: dict[str, Any] = next(
        (r["sweep"] for r in reversed(runs) if isinstance(r, dict) and isinstance(r.get("sweep"), dict)), {}
    )
    trials = int(manifest.get("trials", 1))
    priced = has_prices(cfg)
    if priced:  # no episodes yet: no cost to show ("–"), not a misleading $0
        metrics["USD"] = cell_usd(episodes, cfg)
    return CellSummary(
        cell=cell_dir.name,
        method=cfg["method"]["name"],
        backbone=cfg["backbone"]["name"],
        benchmark=cfg["benchmark"]["name"],
        scripted=bool(manifest.get("scripted")),
        n_episodes=len(episodes),
        n_tasks=int(manifest.get("n_tasks", 0)),
        trials=trials,
        specs=tuple(bench.metric_specs),
        outcome=bench.outcome,
        series=tuple(getattr(method_cls, "step_series", ())),
        views=tuple(getattr(method_cls, "step_views", ())),
        metrics=metrics,
        table_metrics=table
        + ["Tok"]
        + (["Tok_no_tool"] if "Tok_no_tool" in metrics else [])
        + (["USD"] if priced else []),
        tokens_by_role=tokens,
        extra_on_disk=extra,
        set_aside=notes,
        codes=codes,
        text_sets=text_sets,
        config=cfg,
        sweep=sweep,
        paraphrased=paraphrased_prompts(manifest),
        episodes=episodes,
        records=on_disk,
        metric_fn=bench.metrics,
        manifest=manifest,
    )


# ------------------------------------------------------- uncertainty, cost (runners.analysis.stats, runners.cost)
def has_prices(config: dict[str, Any]) -> bool:
    """Whether any backbone of the cell has prices (then its tables have a USD column)."""
    return any(v for v in role_prices(config).values())


def cell_usd(episodes: list[dict[str, Any]], config: dict[str, Any]) -> float | None:
    """List-price dollars of a cell's episodes (every call priced, cache hits included, each role
    at its own backbone's prices by `runners.cost.role_prices`, the live budget's rule); None
    when no backbone of the cell has prices or the cell has no episodes (nothing was spent that
    the records show: the tables print "–", not $0), and None when a role that was called has no
    prices (a priced judge beside an unpriced agent would show a fraction of the cost as the cost)."""
    if not episodes or not has_prices(config):
        return None
    prices = role_prices(config)
    used = {
        r
        for e in episodes
        for r, u in (e.get("usage_by_role") or {}).items()
        if int((u or {}).get("prompt_tokens", 0) or 0) + int((u or {}).get("completion_tokens", 0) or 0)
    }
    if any(
        prices_for(r, prices) is None for r in used
    ):  # e.g. a priced judge beside an unpriced agent: a part is not a cost
        return None
    return sum(episode_usd(e, prices) or 0.0 for e in episodes)


def cell_ci(c: CellSummary, resamples: int = DEFAULT_RESAMPLES) -> dict[str, tuple[float, float]]:
    """The cell's 95% intervals of its table rates (computed once): Wilson for shares of episodes
    (never a point at 0 % or 100 %), else the task bootstrap (Wilson over tasks where that
    collapses); see runners.analysis.stats.rate_interval."""
    if c.ci is None:
        c.ci = {}
        if c.episodes and c.metric_fn and resamples:
            rates = [m for m in c.table_metrics if c.spec(m).kind == "rate"]
            boot = bootstrap_ci(c.episodes, c.metric_fn, resamples=resamples, metrics=rates)
            n_tasks = len({str(e.get("task_id")) for e in c.episodes})
            for m in rates:
                got = rate_interval(c.metrics.get(m), c.episodes, c.metric_fn, m, boot.get(m), n_tasks)
                if got:
                    c.ci[m], c.ci_kind[m] = got
    return c.ci


def fmt_ci(value: float | None, spec: MetricSpec, ci: dict[str, tuple[float, float]]) -> str:
    """A rate with its 95% interval: `66.67 [33.33, 100.00]`."""
    metric = spec.name
    text = fmt(value, spec.kind)
    if value is not None and metric in ci:
        lo, hi = ci[metric]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def paired_delta(
    c: CellSummary | None, r: CellSummary | None, metric: str, d: float | None, resamples: int = DEFAULT_RESAMPLES
) -> tuple[str, dict[str, Any]]:
    """The Δ cell for a rate: `+10.00pp [-5.0, +25.0] p=0.31` (paired bootstrap interval of the
    difference over the tasks both cells ran; exact sign-test p on per-task wins/losses) and the numbers."""
    spec = cr.spec(metric) if (cr := c or r) else metric_spec((), metric)
    text = fmt_delta(spec.kind, d)
    extra: dict[str, Any] = {}
    if d is None or c is None or r is None or spec.kind != "rate" or c.metric_fn is None or not resamples:
        return text, extra
    ci = paired_bootstrap(c.episodes, r.episodes, c.metric_fn, resamples=resamples, metrics=[metric]).get(metric)
    sign = paired_sign_test(c.episodes, r.episodes, c.metric_fn, metric, higher_is_better=spec.higher_is_better)
    if ci:
        text += f" [{ci[0]:+.1f}, {ci[1]:+.1f}]"
        extra.update(ci_low=ci[0], ci_high=ci[1])
    if sign:
        wins, losses, ties, p = sign
        extra.update(p_value=p, wins=wins, losses=losses, ties=ties)
    return text, extra


def token_unit(cells: list[CellSummary]) -> tuple[float, str]:
    """Tok is in millions; when every value is below 0.1M the table shows thousands instead
    (0.0061 reads worse than 6.1)."""
    vals = [v for c in cells if (v := c.metrics.get("Tok")) is not None]
    return (1000.0, "k") if vals and max(vals) < 0.1 else (1.0, "M")


TOK_PER_TASK = "Tok/task"  # mean method-side tokens per episode, in thousands (what a subset can compare)


def tok_per_task(c: CellSummary) -> float | None:
    """Mean #Tok per episode in millions, as the paper counts #Tok: Tok_no_tool where the `tool`
    role ran (TOK_NOTE), else Tok, over the episodes counted."""
    tok = c.metrics["Tok_no_tool"] if c.metrics.get("Tok_no_tool") is not None else c.metrics.get("Tok")
    return tok / c.n_episodes if tok is not None and c.n_episodes else None


def paper_text(
    c: CellSummary | None, method: str, backbone: str, benchmark: str, m: str, tok_scale: float
) -> str | None:
    """The paper's value for one column, in the unit our column shows: Tok (M in the paper) at the
    table's scale (M or k), also under Tok_no_tool (the reading the paper's #Tok matches);
    Tok/task = the paper's total / its task count, in k."""
    if m == TOK_PER_TASK:
        v, n = paper_value(method, backbone, benchmark, "Tok"), paper_task_count(benchmark)
        return f"{float(v) * 1000.0 / n:.1f}" if v and n else None
    v = _paper(c, method, backbone, benchmark, "Tok" if m == "Tok_no_tool" else m)
    if v and m.startswith("Tok") and tok_scale != 1.0:
        return f"{float(v) * tok_scale:.1f}"
    return v


def _cell_text(c: CellSummary | None, m: str, tok_scale: float, resamples: int) -> str:
    if c is None:
        return fmt(None, "other")
    if m == TOK_PER_TASK:
        v = tok_per_task(c)
        return f"{v * 1000.0:.1f}" if v is not None else fmt(None, "other")
    v, spec = c.metrics.get(m), c.spec(m)
    if spec.kind == "tokens" and v is not None and tok_scale != 1.0:
        return f"{v * tok_scale:.1f}"
    return fmt_ci(v, spec, cell_ci(c, resamples))


# Config parts that are not the cell's identity (runtime knobs), left out of readable names.
_RUNTIME_BACKBONE = (
    "max_inflight",
    "timeout_s",
    "max_retries",
    "backoff_cap_s",
    "refused_window_s",
    "base_url_env",
    "api_key_env",
)
_NOT_IDENTITY = {
    "runner",
    "experiment",
    "backbone.scripted.latency_s",
    "benchmark.params.limit",
    "method.name",
    "backbone.name",
    "benchmark.name",
    *(f"{b}.{k}" for b in ("backbone", "roles.judge", "roles.user_sim") for k in _RUNTIME_BACKBONE),
}


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        out: dict[str, Any] = {}
        for k, v in d.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if path not in _NOT_IDENTITY and not any(path.startswith(p + ".") for p in _NOT_IDENTITY):
                out.update(_flatten(v, path))
        return out
    return {prefix: d}


def _readable_labels(group: list[CellSummary]) -> dict[str, str]:
    """cell → `k=v,...` of the config values that differ inside a group of cells sharing method,
    backbone and benchmark (the shortest unambiguous key suffix); the cell hash if none differ."""
    flat = {c.cell: {**_flatten(c.config), "seed": (c.config.get("runner") or {}).get("seed")} for c in group}
    keys = sorted({k for f in flat.values() for k in f})
    differ = [k for k in keys if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in flat.values()}) > 1]

    def short(k: str) -> str:
        parts = k.split(".")
        for n in range(1, len(parts) + 1):
            s = ".".join(parts[-n:])
            if sum(1 for o in differ if o == s or o.endswith("." + s)) == 1:
                return s
        return k

    labels = {}
    for c in group:
        f = flat[c.cell]
        text = ",".join(
            f"{short(k)}="
            f"{json.dumps(f.get(k), default=str) if not isinstance(f.get(k), (str, int, float, bool)) else f.get(k)}"
            for k in differ
        )
        labels[c.cell] = text or c.cell.rsplit("__", 1)[-1]
    if len(set(labels.values())) < len(labels):  # values that print alike: fall back to the hash
        labels = {c: f"{t},{c.rsplit('__', 1)[-1]}" for c, t in labels.items()}
    return labels


def orphan_cells(root: Path) -> list[str]:
    """Warnings for directories of the experiment that hold results but no manifest.json."""
    out = []
    for d in sorted(
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name not in ("tables", "paper")
    ):
        if not (d / MANIFEST).exists() and any(
            p.exists() for p in (d / EPISODES, compacted(d / EPISODES), d / ERRORS, d / "DONE")
        ):
            n = sum(1 for _ in record_lines(d / EPISODES))
            out.append(
                f"{d.name}: no manifest.json ({n} episode lines on disk), so the cell is NOT in the tables. "
                "Fix: re-run "
                "the sweep for that cell (it rewrites the manifest and keeps the episodes), or move the directory out "
                f"of {root}"
            )
    return out


def _default_model(backbone: str) -> str | None:
    """The model conf/backbone/<name>.yaml names (None for a backbone defined elsewhere)."""
    from runners.config import CONF_DIR

    path = CONF_DIR / "backbone" / f"{backbone}.yaml"
    try:
        import yaml

        return (yaml.safe_load(path.read_text()) or {}).get("model") if path.is_file() else None
    except (OSError, ValueError, yaml.YAMLError):
        return None


def _served_models(cells: list[CellSummary]) -> None:
    """The served model in the Backbone column: a backbone whose model was set on the command line
    (`backbone=openai_compatible backbone.model=qwen3-8b`), or one name serving several models,
    reads `openai_compatible[qwen3-8b]`, not a `[model=…]` suffix on the method."""
    models: dict[str, set[str]] = {}
    for c in cells:
        models.setdefault(c.backbone, set()).add(str((c.config.get("backbone") or {}).get("model")))
    for c in cells:
        model = str((c.config.get("backbone") or {}).get("model"))
        if c.scripted or model in ("None", c.backbone):
            continue
        if len(models[c.backbone]) > 1 or model != str(_default_model(c.backbone)):
            c.backbone = f"{c.backbone}[{model}]"


def _grid_order(cells: list[CellSummary]) -> Callable[[CellSummary], tuple[Any, ...]]:
    """Sort key: each cell's method, backbone and benchmark by their place in the experiment grid
    the cells were run with (their manifests' `experiment.grid`, the preset's order or the command
    line's), names outside it after, alphabetically."""
    from runners.config import canonical_method

    order: dict[str, dict[str, int]] = {"method": {}, "backbone": {}, "benchmark": {}}
    for c in cells:
        grid = (c.config.get("experiment") or {}).get("grid") or {}
        for g, names in grid.items() if isinstance(grid, dict) else ():
            for n in names if g in order and isinstance(names, list) else ():
                order[g].setdefault(canonical_method(str(n)) if g == "method" else str(n), len(order[g]))

    def key(c: CellSummary) -> tuple[Any, ...]:
        parts = [
            (c.config.get("method") or {}).get("name", c.method),
            (c.config.get("backbone") or {}).get("name", c.backbone),
            c.benchmark,
        ]
        return tuple(order[g].get(str(n), len(order[g])) for g, n in zip(order, parts)) + (c.cell,)

    return key


def collect(
    root: Path, cell_names: set[str] | None = None, methods: set[str] | None = None, benchmarks: set[str] | None = None
) -> list[CellSummary]:
    if not root.is_dir():
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    cells = [
        summarize(d)
        for d in sorted(
            p for p in root.iterdir() if ((p / MANIFEST).exists() or shard_dirs(p)) and not p.name.startswith(".")
        )
    ]
    _served_models(cells)
    cells.sort(key=_grid_order(cells))  # the preset's (or command line's) order of methods, backbones, benchmarks
    # Cells that differ only in config details (same method/backbone/benchmark) stay apart, named
    # by what differs (labels are computed over the whole experiment, so filters do not rename).
    groups: dict[tuple[str, str, str], list[CellSummary]] = {}
    for c in cells:
        groups.setdefault((c.method, c.backbone, c.benchmark), []).append(c)
    for group in groups.values():
        if len(group) > 1:
            labels = _readable_labels(group)
            for c in group:
                c.method = f"{c.method}[{labels[c.cell]}]"
    return [
        c
        for c in cells
        if (cell_names is None or c.cell in cell_names)
        and (methods is None or c.method in methods or c.method.split("[", 1)[0] in methods)
        and (benchmarks is None or c.benchmark in benchmarks)
    ]


def build_tables(
    cells: list[CellSummary],
    reference: str,
    with_paper: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    marks_out: list[Any] | None = None,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    """Wide table rows (one per method × backbone, plus paper and Δ rows) and the long rows.
    Rates carry their 95% interval (runners.analysis.stats.rate_interval); Δ rows of rates carry
    the paired interval and the exact sign-test p, Holm-adjusted across the table's comparisons
    (`*` = significant); Tok is shown in thousands when millions would read as 0.00xx, and the
    `(paper)` row is printed in the same unit. Where the paper reports #Tok, a Tok/task column (k)
    sets our mean per episode beside the paper's total / its task count. A row that beside a
    `(paper)` row differs from the paper's setting carries its fidelity marks
    (runners.analysis.fidelity); `strict` drops those rows' `(paper)` rows. `marks_out` collects
    the marks for the footnotes. The metric function's per-task and per-episode numbers are
    computed once for all the intervals and tests (`stats.shared_evaluations`)."""
    with shared_evaluations():
        return _build_tables(cells, reference, with_paper, resamples, strict, marks_out)


def _build_tables(
    cells: list[CellSummary],
    reference: str,
    with_paper: bool,
    resamples: int,
    strict: bool,
    marks_out: list[Any] | None,
) -> tuple[list[str], list[list[str]], list[dict[str, Any]]]:
    scale, unit = token_unit(cells)
    benchmarks = list(dict.fromkeys(c.benchmark for c in cells))
    cols: list[tuple[str, str]] = []
    for b in benchmarks:
        ms = list(
            dict.fromkeys(m for c in cells if c.benchmark == b for m in c.table_metrics)
        )  # Tok_no_tool where any cell has it
        if (
            with_paper
            and "Tok" in ms
            and any(
                paper_value(c.method, c.backbone, b, "Tok") and paper_task_count(b) for c in cells if c.benchmark == b
            )
        ):
            ms.insert(ms.index("Tok") + 1, TOK_PER_TASK)
        cols += [(b, m) for m in ms]
    by = {(c.method, c.backbone, c.benchmark): c for c in cells}
    c: CellSummary | None  # one cell in the loops below (None where a Δ has no such cell)
    rows_keys = list(dict.fromkeys((c.method, c.backbone) for c in cells))
    rows_keys.sort(key=lambda mb: mb[0] != reference)  # the reference method first, as in the papers
    spec_of = {(c.benchmark, m): c.spec(m) for c in cells for m in c.table_metrics}
    spec_of.update(
        {(b, m): MetricSpec(name=m, kind="tokens", higher_is_better=False) for b, m in cols if m == TOK_PER_TASK}
    )

    def head(b: str, m: str) -> str:
        if m == TOK_PER_TASK:
            return f"{b}:{m}(k)"
        sp = spec_of[b, m]
        return f"{b}:{sp.display if sp.name == m else m}" + (f"({unit})" if sp.kind == "tokens" and unit != "M" else "")

    header = ["Method", "Backbone"] + [head(b, m) for b, m in cols]
    rows: list[list[str]] = []
    long: list[dict[str, Any]] = []
    tests: list[
        tuple[int, int, str, float | None, dict[str, Any] | None]
    ] = []  # (row, col, text, p, long row) of Δ rates
    for method, backbone in rows_keys:
        vals = [by.get((method, backbone, b)) for b, _ in cols]
        mine = [c for c in cells if (c.method, c.backbone) == (method, backbone)]
        scripted = any(c.scripted for c in mine)
        partial = any(c.partial for c in mine)
        para = any(c.paraphrased for c in mine)
        mixed = any(c.mixed_code for c in mine)
        mixed_texts = any(c.mixed_texts for c in mine)  # counted episodes ran on different texts (docs/texts.md)
        paper = (
            [
                paper_text(
                    by.get((method, backbone, b)) or by.get((reference, backbone, b)), method, backbone, b, m, scale
                )
                for b, m in cols
            ]
            if with_paper
            else []
        )
        labels, marks = row_marks(mine) if any(paper) else ([], [])
        labels = [x for x in labels if x != "[paraphrased]"]  # printed below for every row, paper or not
        if marks_out is not None:
            marks_out.extend(marks)
        rows.append(
            [
                method
                + (" [scripted]" if scripted else "")
                + (" [partial]" if partial else "")
                + (" [mixed code]" if mixed else "")
                + (" [paraphrased]" if para else "")
                + (" [mixed]" if mixed_texts and "[mixed]" not in labels else "")
                + "".join(" " + x for x in labels),
                backbone,
            ]
            + [_cell_text(c, m, scale, resamples) for c, (_, m) in zip(vals, cols)]
        )
        for c in mine:
            ci = cell_ci(c, resamples)
            for m, v in c.metrics.items():  # every metric, not only the table's columns
                lo_hi = ci.get(m)
                long.append(
                    {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": c.benchmark,
                        "metric": m,
                        "value": v,
                        "paper": _paper(c, method, backbone, c.benchmark, m),
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                        "ci_low": lo_hi[0] if lo_hi else None,
                        "ci_high": lo_hi[1] if lo_hi else None,
                    }
                )
            for role, n in sorted(c.tokens_by_role.items()):
                long.append(
                    {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": c.benchmark,
                        "metric": f"tokens_{role}",
                        "value": n,
                        "paper": None,
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                    }
                )
        if with_paper and any(paper) and not (strict and marks):
            rows.append([f"  {method} (paper)", backbone] + [p or "–" for p in paper])
        if method != reference and any((reference, backbone, b) in by for b, _ in cols):
            ds = []
            for j, (b, m) in enumerate(cols):
                c, r = by.get((method, backbone, b)), by.get((reference, backbone, b))
                if m == TOK_PER_TASK:
                    ds.append(
                        fmt_delta(
                            "tokens", delta("tokens", tok_per_task(c) if c else None, tok_per_task(r) if r else None)
                        )
                    )
                    continue
                d = delta(spec_of[b, m].kind, c.metrics.get(m) if c else None, r.metrics.get(m) if r else None)
                text, extra = paired_delta(c, r, m, d, resamples)
                ds.append(text)
                lrow = None
                if d is not None and c is not None:  # d is None without c
                    lrow = {
                        "method": method,
                        "backbone": backbone,
                        "benchmark": b,
                        "metric": f"delta_{m}",
                        "value": d,
                        "paper": None,
                        "n_episodes": c.n_episodes,
                        "scripted": c.scripted,
                        "ci_low": extra.get("ci_low"),
                        "ci_high": extra.get("ci_high"),
                        "p_value": extra.get("p_value"),
                    }
                    long.append(lrow)
                if "p_value" in extra:
                    tests.append((len(rows), 2 + j, text, extra["p_value"], lrow))
            rows.append([f"  Δ vs {reference}", backbone] + ds)
    for (i, j, text, _, lrow), adj in zip(tests, holm([t[3] for t in tests])):
        rows[i][j] = f"{text} p={adj:.2g}{significance_mark(adj)}"
        if lrow is not None:
            lrow["p_holm"] = adj
    return header, rows, long


def _paper(c: CellSummary | None, method: str, backbone: str, benchmark: str, metric: str) -> str | None:
    """The papers' value of `metric` under the paper's name for it (`MetricSpec.paper`)."""
    spec = c.spec(metric) if c else metric_spec((), metric)
    return paper_value(method, backbone, benchmark, spec.paper or metric)


def depth_table(cells: list[CellSummary]) -> tuple[list[str], list[list[str]]] | None:
    with_depth = [c for c in cells if c.metrics.get("nAUC") is not None or c.metrics.get("K")]
    if not with_depth:
        return None
    header = ["Method", "Backbone", "Benchmark", "K", "nAUC", "DR", "Acc_k (k=1..K)"]
    rows = []
    for c in with_depth:
        accs = [c.metrics[k] for k in sorted((k for k in c.metrics if k.startswith("Acc_")), key=lambda s: int(s[4:]))]
        rows.append(
            [
                c.method,
                c.backbone,
                c.benchmark,
                fmt(c.metrics.get("K"), c.spec("K").kind),
                fmt(c.metrics.get("nAUC"), c.spec("nAUC").kind),
                fmt(c.metrics.get("DR"), c.spec("DR").kind),
                " ".join(f"{a:.0f}" for a in accs),
            ]
        )
    return header, rows


def check_reference(reference: str, cells: Sequence[CellSummary] = (), root: Path | None = None) -> None:
    """An unknown reference method is an error naming the choices (it would drop the Δ rows): the
    methods of the experiment when its cells are given, else every configured method."""
    from runners.config import canonical_method

    if cells:
        if any(
            c.method in (reference, canonical_method(reference))
            or c.method.split("[", 1)[0] == canonical_method(reference)
            for c in cells
        ):
            return
        methods = list(dict.fromkeys(c.method for c in cells))
        raise ConfigError(
            f"reference method '{reference}' is not in {'experiment ' + str(root) if root else 'these cells'}; "
            "its methods: "
            f"{', '.join(methods)}. Fix: --reference <one of them>"
        )
    if reference.split("[", 1)[0] in available("method"):
        return
    raise ConfigError(f"unknown reference method '{reference}'; available: {', '.join(available('method'))}")


def _sweeps(cells: list[CellSummary]) -> list[str]:
    """One line per sweep that last ran some of these cells: when, the command line, which cells."""
    by: dict[str, list[CellSummary]] = {}
    for c in cells:
        by.setdefault(str(c.sweep.get("id") or "unrecorded"), []).append(c)
    lines = []
    for sid, cs in sorted(by.items(), key=lambda kv: str(kv[1][0].sweep.get("started_at") or "")):
        sw = cs[0].sweep
        what = (
            f"{sw.get('started_at', '?')} `{' '.join(sw.get('overrides') or []) or '(no overrides)'}`"
            if sw
            else "unrecorded sweep"
        )
        lines.append(f"- {what}: {', '.join(c.cell for c in cs)}")
    return lines


def _notes(root: Path, cells: list[CellSummary], orphans: list[str]) -> list[str]:
    out = []
    for c in cells:
        if c.extra_on_disk:
            out.append(
                f"{c.cell}: {c.extra_on_disk} more on disk outside this manifest's {c.n_tasks} tasks × "
                f"{c.trials} trials (an earlier run with more trials or a larger limit); kept, not counted"
            )
        out += [f"{c.cell}: {n}" for n in c.set_aside]
        if c.mixed_texts:
            out.append(
                f"{c.cell}: [mixed] counted episodes ran on {len(c.text_sets)} different sets of model-facing texts "
                f"({', '.join(f'{n} on {k}' for k, n in sorted(c.text_sets.items()))}: compare the episodes' `texts`); "
                "runner.fresh=true re-runs the cell on one"
            )
        if c.mixed_code:
            out.append(
                f"{c.cell}: [mixed code] episodes from {len(c.codes)} code fingerprints "
                f"({', '.join(f'{n} by {k}' for k, n in sorted(c.codes.items()))}); runner.fresh=true re-runs the cell"
            )
    return out + orphans


def _csv(rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerows(rows)
    return buf.getvalue()


def aggregate_dir(
    root: Path,
    reference: str = "full_context",
    cell_names: set[str] | None = None,
    out: TextIO | None = None,
    with_paper: bool = True,
    methods: set[str] | None = None,
    benchmarks: set[str] | None = None,
    err: TextIO | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    strict_reference: bool = False,
) -> list[dict[str, Any]]:
    """Write the tables of the whole experiment to `tables/` (atomically, under a lock so parallel
    jobs do not race: each reads every cell inside the lock) and print them, or, with filters,
    print the table of the matching cells only. `strict_reference` (a reference named on the
    command line): a reference method the experiment does not have is an error listing its methods.
    The garbage collector pauses meanwhile: the records stay alive to the end, and its passes over
    them cost more than the tables.

    The whole experiment's tables are cached in `tables/.cache.json` under `tables_key` (the
    records' files, the manifests without their run history, the code fingerprint, the options):
    when nothing of it changed (a resume with nothing to run) they are read from there; only the
    list of sweeps, which every run updates, is rebuilt from the manifests."""
    with paused_gc():
        return _aggregate_dir(
            root, reference, cell_names, out, with_paper, methods, benchmarks, err, resamples, strict, strict_reference
        )


def _aggregate_dir(
    root: Path,
    reference: str = "full_context",
    cell_names: set[str] | None = None,
    out: Any = None,
    with_paper: bool = True,
    methods: set[str] | None = None,
    benchmarks: set[str] | None = None,
    err: Any = None,
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
    strict_reference: bool = False,
) -> list[dict[str, Any]]:
    from runners.config import canonical_method

    out = out or sys.stdout
    err = err or sys.stderr
    root = Path(root)
    check_reference(reference)  # before any work; names of readable cells are checked after collecting
    reference = canonical_method(reference)  # raw_trajectory (PoS's name) is full_context
    if strict_reference and root.is_dir():
        found = collect(root)
        if found:
            check_reference(reference, found, root)
    if not root.is_dir():
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    tdir = root / "tables"
    tdir.mkdir(exist_ok=True)
    lock = os.open(tdir / ".lock", os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        key = tables_key(root, reference, with_paper, resamples, strict)
        hit = _cached(tdir, key)
        if hit is not None:  # the records, the code and the options are those the tables were built from
            everything, long = None, hit["long"]
            for w in hit["warnings"]:
                print(w, file=err)
            atomic_write(tdir / "summary.md", hit["md"] + _live_section(root, _sweep_cells(root)) + "\n")
        else:
            everything = collect(root)
            orphans = orphan_cells(root)
            warnings = [f"warning: {o}" for o in orphans] + [
                f"warning: {c.cell}: {n}" for c in everything for n in c.set_aside
            ]
            for w in warnings:
                print(w, file=err)
            long = (
                _write_tables(root, everything, reference, with_paper, orphans, resamples, strict) if everything else []
            )
            if everything:
                _store_cache(tdir, key, long, warnings)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    filtered = cell_names is not None or methods is not None or benchmarks is not None
    cells = collect(root, cell_names, methods, benchmarks) if filtered else (everything or [])
    if filtered and not cells:
        everything = everything if everything is not None else collect(root)
        raise StoreError(
            f"no cell of {root} matches the filters; the experiment has methods "
            f"{', '.join(sorted({c.method for c in everything})) or '-'}, benchmarks "
            f"{', '.join(sorted({c.benchmark for c in everything})) or '-'}, cells "
            f"{', '.join(sorted(c.cell for c in everything)) or '-'}"
        )
    if everything is not None and not everything:
        print(f"no finished cells under {root}", file=out)
        return []
    if filtered:
        marks: list = []
        header, rows, long = build_tables(
            cells, reference_for(cells, reference)[0], with_paper, resamples, strict, marks
        )
        md = _markdown(root, cells, header, rows, reference, [], marks)
    else:
        md = (tdir / "summary.md").read_text().rstrip("\n")
    print(md, file=out)
    print(
        f"\nTables of the whole experiment written to {tdir}/summary.{{md,csv,tex}} and metrics.csv"
        + (" (the filters narrowed only what is printed here)" if filtered else ""),
        file=out,
    )
    return long


def _markdown(
    root: Path,
    cells: list[CellSummary],
    header: list[str],
    rows: list[list[str]],
    reference: str,
    orphans: list[str],
    marks: list[Any] | None = None,
) -> str:
    title = _title(root, cells)
    why = reference_for(cells, reference)[1]
    md = f"### {title}" + (f" — {why}" if why else "") + "\n\n" + to_markdown(header, rows)
    md += "\n\n" + INTERVAL_NOTE
    if any(" p=" in x for row in rows for x in row):
        md += "\n\n" + SIGNIFICANCE_LEGEND + "."
    if any(h.endswith(f"{TOK_PER_TASK}(k)") for h in header):
        md += (
            "\n\nTok/task = our mean method-side tokens per episode (thousands; without the `tool` role where it ran, "
            "as the paper counts #Tok); its `(paper)` value is the paper's #Tok total divided by the paper's task "
            "count, so a subset compares per task (a total does not)."
        )
    for note in footnotes([m for m in (marks or []) if m.code != "paraphrased"]):
        md += "\n\n" + note
    if any("Tok_no_tool" in c.metrics for c in cells):
        md += f"\n\n{TOK_NOTE}."
    depth = depth_table(cells)
    if depth:
        md += (
            "\n\n### Depth retention (FlowState §4.2: Acc_k, nAUC, DR)\n\n" + to_markdown(*depth) + "\n\n" + DEPTH_NOTE
        )
    if any(c.partial for c in cells):
        md += (
            "\n\n[partial]: some episodes are missing (infra errors or an interrupted sweep; re-run the sweep to "
            "finish them). Rates cover the finished episodes only and Tok is a total, so its Δ is not comparable "
            "until the cell is complete."
        )
    if any(c.paraphrased for c in cells):
        md += (
            "\n\n[paraphrased]: some prompts ran on the project's own wording because the pinned upstream text was "
            "unavailable (see each cell's manifest `text_sources`): "
            + "; ".join(f"{c.cell}: {', '.join(c.paraphrased)}" for c in cells if c.paraphrased)
        )
    counts = "\n\n" + "\n".join(
        f"- {c.cell}: {c.n_episodes}/{c.n_tasks * c.trials} episodes; tokens by role {c.tokens_by_role}" for c in cells
    )
    notes = _notes(root, cells, orphans)
    if notes:
        counts += "\n\nNotes:\n" + "\n".join(f"- {n}" for n in notes)
    return md + counts + _live_section(root, cells)


def _live_section(root: Path, cells: list[Any]) -> str:
    """The end of summary.md that changes without the records changing (rebuilt on a cache hit):
    the sweeps the cells came from, the cells a sweep skipped."""
    text = "\n\nSweeps the cells came from (latest run of each cell):\n" + "\n".join(_sweeps(cells))
    skipped = skipped_note(root, cells)
    return text + ("\n\n" + skipped if skipped else "")


# ---------------------------------------------------------------- the tables' cache (tables/.cache.json)
CACHE = ".cache.json"
_UNTRACKED = {
    MANIFEST,
    DONE,
    INDEX,
    ".lock",
}  # the manifest is read without its run history; the rest is not read by the tables


def _dir_fingerprint(h: "hashlib._Hash", d: Path) -> None:
    h.update(b"\0dir\0" + d.name.encode())
    mpath = d / MANIFEST
    try:
        raw = mpath.read_bytes()
        try:
            m = json.loads(raw)
            if isinstance(m, dict):
                m.pop("runs", None)  # every resume adds a run; the sweep lines are rebuilt from it each time
            h.update(json.dumps(m, sort_keys=True, default=str).encode())
        except ValueError:
            h.update(raw)
    except FileNotFoundError:
        h.update(b"\0no manifest")
    h.update(b"\0done" if (d / DONE).exists() else b"\0open")
    for f in sorted(d.iterdir()):
        if f.is_file() and f.name not in _UNTRACKED and not f.name.startswith("transcripts."):
            st = f.stat()
            h.update(f"\0{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    for sub in shard_dirs(d):
        _dir_fingerprint(h, sub)


def tables_key(root: Path, reference: str, with_paper: bool, resamples: int, strict: bool = False) -> str:
    """What the tables of `root` are a function of: every cell's records and error files (size,
    modification time), its manifest without the run history, the code (`code_fingerprint`: the
    benchmarks' metric functions, this module, the papers' values) and the options."""
    h = hashlib.sha256(
        json.dumps(
            {
                "format": 1,
                "code": code_fingerprint(),
                "reference": reference,
                "with_paper": with_paper,
                "resamples": resamples,
                "strict": strict,
            }
        ).encode()
    )
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "tables"):
        _dir_fingerprint(h, d)
    return h.hexdigest()


def _cached(tdir: Path, key: str) -> dict[str, Any] | None:
    try:
        hit = json.loads((tdir / CACHE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(hit, dict) or hit.get("key") != key or not all((tdir / f).exists() for f in TABLE_FILES):
        return None
    return hit


def _store_cache(tdir: Path, key: str, long: list[dict[str, Any]], warnings: list[str]) -> None:
    md = (tdir / "summary.md").read_text()
    cut = md.rfind("\n\nSweeps the cells came from")
    atomic_write(
        tdir / CACHE,
        json.dumps(
            {"key": key, "md": md[:cut] if cut >= 0 else md.rstrip("\n"), "long": long, "warnings": warnings},
            default=str,
        ),
    )


def _sweep_cells(root: Path) -> list[Any]:
    """(cell, sweep) of every cell, from the manifests alone (what `_sweeps` needs)."""
    from types import SimpleNamespace

    out = []
    for d in sorted(
        p for p in root.iterdir() if ((p / MANIFEST).exists() or shard_dirs(p)) and not p.name.startswith(".")
    ):
        src = d / MANIFEST if (d / MANIFEST).exists() else shard_dirs(d)[0] / MANIFEST
        try:
            m = json.loads(src.read_bytes())
        except (OSError, ValueError):
            m = {}
        runs: list[Any] = m["runs"] if isinstance(m, dict) and isinstance(m.get("runs"), list) else []
        sweep: dict[str, Any] = next(
            (r["sweep"] for r in reversed(runs) if isinstance(r, dict) and isinstance(r.get("sweep"), dict)), {}
        )
        out.append(SimpleNamespace(cell=d.name, sweep=sweep))
    return out


def skipped_note(root: Path, cells: list[CellSummary]) -> str:
    """The footnote listing the cells a sweep skipped (runner.skip_unavailable=true) and have no
    results here, each with what it misses and the fix (from `<experiment>/skipped.json`)."""
    from runners.availability import read_skipped

    have = {c.cell for c in cells}
    entries = [e for e in read_skipped(root) if e["cell"] not in have]
    if not entries:
        return ""
    lines = [f"Skipped (not run: runner.skip_unavailable=true; {len(entries)} cell(s), listed in skipped.json):"]
    for e in entries:
        why = "; ".join(
            f"{m.get('what')}" + (f" (Fix: {m['fix']})" if m.get("fix") else "") for m in e.get("missing", [])
        )
        lines.append(f"- {e.get('method')} / {e.get('backbone')} / {e.get('benchmark')}: {why}")
    return "\n".join(lines)


DEPTH_NOTE = (
    "nAUC: the area under the retention curve R_k = Acc_k / Acc_1 (trapezoids over k = 1..K, divided by K − 1), "
    "in %: 100 = every later depth as accurate as the first, below 100 = accuracy lost with depth, above 100 = "
    "later depths more accurate than the first (e.g. Acc_k 33, 33, 100, 0 gives R_k 1, 1, 3, 0 and nAUC 150). "
    "DR: minus the least-squares slope of R_k, in % (positive = accuracy falls with depth)."
)


def reference_for(cells: Sequence[CellSummary], reference: str) -> tuple[str, str | None]:
    """The Δ rows' reference: `reference` when these cells have it, else the grid's first method (the
    cells are in grid order), with the words the table's title says it in (None: the reference as asked)."""
    if not cells or any(c.method.split("[", 1)[0] == reference for c in cells):
        return reference, None
    first = cells[0].method
    if all(c.method == first for c in cells):
        return reference, None  # one method: nothing to compare
    return first, f"Δ vs {first}, the grid's first method ({reference}, the reference method, is not in these cells)"


def _title(root: Path, cells: list[CellSummary]) -> str:
    _, unit = token_unit(cells)
    title = (
        f"Results: {root.name} (rates in % [95% interval], Tok = method-side tokens in "
        f"{'thousands' if unit == 'k' else 'millions'}"
        + (", USD = list-price cost" if any("USD" in c.metrics for c in cells) else "")
        + "; Δ: pp for rates [paired bootstrap interval] p = exact sign test over tasks, Holm-adjusted; "
        "relative % for Tok/USD)"
    )
    if any(c.scripted for c in cells):
        title += " — SCRIPTED backbone rows are a deterministic offline demo, not model results"
    notes = [n for n in dict.fromkeys(str((c.config.get("experiment") or {}).get("note") or "") for c in cells) if n]
    if notes:
        title += " — " + "; ".join(notes)
    return title


METRICS_FIELDS = [
    "method",
    "backbone",
    "benchmark",
    "metric",
    "value",
    "paper",
    "n_episodes",
    "scripted",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
]
INTERVAL_NOTE = (
    "[95% interval]: Wilson score interval over episodes for rates that are a share of episodes (SR, pass^1, "
    "task success: it never collapses at 0 % or 100 %); task bootstrap (tasks resampled, trials kept together) "
    "for the other rates, Wilson over tasks where the bootstrap collapses to a point"
)


def _write_tables(
    root: Path,
    cells: list[CellSummary],
    reference: str,
    with_paper: bool,
    orphans: list[str],
    resamples: int = DEFAULT_RESAMPLES,
    strict: bool = False,
) -> list[dict[str, Any]]:
    marks: list = []
    header, rows, long = build_tables(cells, reference_for(cells, reference)[0], with_paper, resamples, strict, marks)
    tdir = root / "tables"
    tdir.mkdir(exist_ok=True)
    md = _markdown(root, cells, header, rows, reference, orphans, marks)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=METRICS_FIELDS)
    w.writeheader()
    w.writerows(long)
    atomic_write(tdir / "summary.md", md + "\n")
    atomic_write(tdir / "summary.csv", _csv([header] + rows))
    atomic_write(tdir / "summary.tex", to_latex(header, rows, _title(root, cells)) + "\n")
    atomic_write(tdir / "metrics.csv", buf.getvalue())
    return long


TABLE_FILES = ("summary.md", "summary.csv", "summary.tex", "metrics.csv")
