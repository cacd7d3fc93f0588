"""An experiment as data: each cell of `results/<experiment>/` read into a `CellSummary` (its
counted episodes, the benchmark's metrics, tokens by role, cost, the code and texts it ran on,
its config and the sweep that last ran it), and the experiment as the list of them in the grid's
order (`collect`). Every view reads this: the tables (runners.analysis.tables), the papers'
artefacts (runners.analysis.paper), the report, the plots and the W&B log.

A cell counts exactly the episodes its manifest asks for (its task ids × trials 0..trials-1);
other finished records on disk (an earlier run with more trials or a larger limit) are kept and
reported, not counted. Lines with wrong field types are set aside with a note. Cells that share
method, backbone and benchmark are named by the config values that differ
(`flowstate[max_resamples=2]`); cells whose episodes come from more than one code fingerprint
are marked [mixed code]."""

from __future__ import annotations

import hashlib
import json
import math
import re
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import orjson

from runners.api import MetricSpec, StepSeries, StepView, find_spec, method_tokens
from runners.config import ConfigError, TargetNotFound, available, import_target
from runners.upstream import reading_records
from runners.cost import episode_usd, prices_for, role_prices
from runners.analysis.stats import DEFAULT_RESAMPLES, binary_rate, bootstrap_ci, rate_interval
from runners.records.store import (
    EPISODES,
    ERRORS,
    MANIFEST,
    StoreError,
    cell_dirs,
    compressed_files,
    paused_gc,
    record_lines,
    shard_dirs,
    stream_cell_lines,
)
from runners.analysis.units import tok_without_tool


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
    manifest: dict[str, Any] = field(default_factory=dict, repr=False)  # the manifest but task_ids (fidelity marks)
    episodes: list[dict[str, Any]] = field(
        default_factory=list, repr=False
    )  # the counted records, compact (`compact_record`: for metrics, intervals, paired tests and paper figures)
    records: list[dict[str, Any]] = field(
        default_factory=list, repr=False
    )  # every finished record on disk, counted or not, compact (the report sees them whole through `on_record`)
    metric_fn: Any = field(default=None, repr=False)  # the benchmark's metric function
    kept_whole: str = ""  # why the records are kept in the fuller form (`summarize`), empty when compact

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


def paraphrased_prompts(manifest: dict[str, Any], provenance: dict[str, Any] | None = None) -> list[str]:
    """Prompts of a cell that ran on the project's own wording instead of upstream's text (the
    `text_sources` the benchmark and the method record in the manifest). With the cell's provenance
    map (`python -m runners.provenance --write`, `provenance`, taken when it covers the cell's episodes):
    only those whose fallback wording its calls actually sent."""
    sent = set(provenance["paraphrased_sent"]) if provenance is not None else None
    out = []
    for part in ("benchmark_notes", "method_notes"):
        ts = (manifest.get(part) or {}).get("text_sources") or {}
        out += [f"{part.split('_')[0]}:{k}" for k in ts.get("paraphrased", []) if sent is None or k in sent]
    return out


def stored_provenance(cell_dir: Path, n_episodes: int) -> dict[str, Any] | None:
    """The cell's stored provenance summary when it was computed over the episodes counted now."""
    try:  # written by `python -m runners.provenance --write` (runners/provenance.py PROVENANCE)
        p = json.loads((cell_dir / "provenance.json").read_text())
    except (OSError, ValueError):
        return None
    ok = p is not None and p.get("n_episodes") == n_episodes and isinstance(p.get("paraphrased_sent"), list)
    return p if ok else None


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


HEAVY_FIELDS = ("requests", "task_calls", "unfinished_calls")
"""A record's fields that hold its trajectory (requests, steps, calls, their texts): ~95% of its
bytes, read by the report's episode pages (`stream_cell`), not by the tables."""


_SHARED_VALUES = ("cell", "code", "status", "error", "calls_by_role", "hygiene", "texts")
"""Fields whose values repeat across a cell's episodes (its name, the code fingerprint, the call
counts of a fixed workflow, the text fingerprint): equal values share one object."""


def _shared_value(shared: dict[Any, Any], k: str, v: Any) -> Any:
    """`v`, or the equal value of field `k` already kept (equal JSON): one object for both."""
    try:
        raw = orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # what orjson cannot write (ints beyond 64 bits): kept as it is
        return v
    if b"null" in raw and not _finite(v):  # orjson writes NaN and infinities as null: not the same value
        return v
    return shared.setdefault((k, getattr(v, "dropped", None), raw), v)


def _finite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return all(_finite(x) for x in v.values())
    if isinstance(v, list):
        return all(_finite(x) for x in v)
    return True


def _skeleton(reqs: Any) -> Any:
    """The requests' step logs only (PoS's health, the methods' step series)."""
    return [
        {"steps": [{"method": s.get("method")} for s in (rr.get("steps") or []) if isinstance(s, dict)]}
        for rr in reqs
        if isinstance(rr, dict)
    ]


def slim_record(r: dict[str, Any], shared: dict[Any, Any]) -> dict[str, Any]:
    """What the tables, intervals and paper figures read of a record: every field but the
    trajectory's (`HEAVY_FIELDS`), and of each step only its method log (PoS's health, the
    methods' step series). Values that repeat across episodes (`_SHARED_VALUES`, and the
    requests' skeleton of step logs, alike in every episode of a fixed workflow) are one object
    through `shared`, keyed by their JSON: a summary holds ~2.5 KB per episode, never the records'
    ~35 KB. The shared values are read, never changed (callers copy a record before changing it).
    `compact_record` keeps less; this is the form a cell falls back to (`summarize`)."""
    out = {k: v for k, v in r.items() if k not in HEAVY_FIELDS}
    reqs = r.get("requests")
    if isinstance(reqs, list):
        out["requests"] = _skeleton(reqs)
    for k in (*_SHARED_VALUES, "requests"):
        v = out.get(k)
        if v is not None:
            out[k] = _shared_value(shared, k, v)
    return out


# ---------------------------------------------------------------- the compact form of a summary's record
COMPACT_FIELDS = ("task_id", "trial", "status", "scores", "requests", "usage_by_role", "code", "texts")
"""The fields of a record a summary keeps (`compact_record`): what the benchmarks' metric functions
read (`runners.api.EpisodeRow`: task id, trial, status, scores, requests, usage), the tables' token
and cost sums (usage), the code and text fingerprints (the [mixed code] and [mixed] marks), the
step logs (plots, PoS's trapping figure). Older records' text fingerprints (`EPISODE_TEXT_FIELDS`
of runners.analysis.fidelity) are kept too. Not kept: the cell's name, seed, error text, flags,
call and retry counts, times, hygiene notes."""

_KEPT = frozenset((*COMPACT_FIELDS, "text_fingerprint", "text_sources"))

_USAGE_KEYS = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens", "source")


class DroppedField(LookupError):
    """A reader asked a compact record (`compact_record`) for a field it left out. Not a KeyError,
    so no reader's `except KeyError` turns it into a default: `summarize` catches it and keeps the
    cell's records in their fuller form (`slim_record`)."""


class _Compact(dict[str, Any]):
    """A record or its scores without some fields (`dropped`, fixed per class): reading one of them
    (`[]`, `get`, `in`) raises `DroppedField` instead of answering "absent", in its copies too
    (`copy()`: the bootstrap's resamples); everything else is a plain dict (JSON, `{**e}`, pickles)."""

    __slots__ = ()
    dropped: frozenset[str] = frozenset()

    def __missing__(self, k: Any) -> Any:
        if k in self.dropped:
            raise DroppedField(k)
        raise KeyError(k)

    def get(self, k: Any, default: Any = None) -> Any:
        if k in self.dropped:
            raise DroppedField(k)
        return dict.get(self, k, default)

    def __contains__(self, k: Any) -> bool:
        if k in self.dropped:
            raise DroppedField(k)
        return dict.__contains__(self, k)

    def copy(self) -> Any:
        return type(self)(self)

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


_compact_classes: dict[frozenset[str], type[_Compact]] = {}


def _compact_dict(d: dict[str, Any], dropped: frozenset[str]) -> dict[str, Any]:
    """`d` (already without `dropped`) as a `_Compact` whose class names what was left out."""
    if not dropped:
        return d
    cls = _compact_classes.get(dropped)
    if cls is None:
        cls = _compact_classes[dropped] = type("Compact", (_Compact,), {"__slots__": (), "dropped": dropped})
    return cls(d)


class UsageByRole(Mapping[str, dict[str, Any]]):
    """A record's `usage_by_role` in ~100 bytes instead of ~1.5 KB: the roles and sources (one
    shared tuple per distinct set) and the four counts per role in an int32 array (int64 once a
    count needs it) from `start` on (one array for a whole cell's records: `_compact_usage`).
    Reading a role gives its usage dict as stored (a new dict each time: callers read it, they do
    not keep it)."""

    __slots__ = ("_roles", "_counts", "_start")

    def __init__(self, roles: tuple[tuple[str, Any], ...], counts: array, start: int = 0) -> None:
        self._roles, self._counts, self._start = roles, counts, start

    def __getitem__(self, role: str) -> dict[str, Any]:
        for i, (r, source) in enumerate(self._roles):
            if r == role:
                c, at = self._counts, self._start + 4 * i
                return dict(zip(_USAGE_KEYS, (c[at], c[at + 1], c[at + 2], c[at + 3], source)))
        raise KeyError(role)

    def __iter__(self) -> Iterator[str]:
        return (r for r, _ in self._roles)

    def __len__(self) -> int:
        return len(self._roles)

    def __reduce__(self) -> Any:
        return (dict, (dict(self.items()),))


_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)


def _compact_usage(u: Any, shared: dict[Any, Any]) -> Any:
    """`UsageByRole` for a usage map in the stored shape (each role's dict with `_USAGE_KEYS` in
    that order, int counts, a string or null source); anything else is kept as it is."""
    if not isinstance(u, dict) or not u:
        return u
    roles, counts = [], []
    for role, v in u.items():
        if not isinstance(v, dict) or tuple(v) != _USAGE_KEYS:
            return u
        nums = [v[k] for k in _USAGE_KEYS[:4]]
        if any(type(n) is not int or not _INT64[0] <= n <= _INT64[1] for n in nums):
            return u
        if not (v["source"] is None or isinstance(v["source"], str)):
            return u
        roles.append((role, v["source"]))
        counts += nums
    key = ("usage roles", tuple(roles))
    block = shared.setdefault(("usage counts",), array("i"))  # every record's counts in one array
    if block.typecode == "i" and not all(_INT32[0] <= n <= _INT32[1] for n in counts):
        # A count beyond 32 bits: this record and the next in a 64-bit array (the records before
        # keep theirs, whose counts all fit; 4 bytes a count instead of 8 while they do)
        block = shared[("usage counts",)] = array("q")
    start = len(block)
    block.extend(counts)
    return UsageByRole(shared.setdefault(key, key[1]), block, start)


def _is_text(v: Any) -> bool:
    """A score value that is text: a string of more than 64 characters, or a list holding strings
    (per-subtask answers, judge replies). Short strings stay (categories: a subset, a task type)."""
    if isinstance(v, str):
        return len(v) > 64
    return isinstance(v, list) and any(isinstance(x, str) for x in v)


def compact_record(r: dict[str, Any], shared: dict[Any, Any]) -> dict[str, Any]:
    """The form of a record a summary keeps: `COMPACT_FIELDS` only, the scores without their texts
    (`_is_text`), usage as a `UsageByRole`, and every value that repeats across episodes (the
    scores of a fixed outcome, the step logs, the fingerprints, the status) one object through
    `shared`. ~0.7 KB per episode on a real memoryarena_math record (`slim_record`: ~3 KB).
    Reading a field it left out raises `DroppedField` (`_Compact`), never a silent absence."""
    return compact_from_parts(*compact_parts(r), shared)


def compact_parts(r: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str], frozenset[str]]:
    """What `compact_record` keeps of `r`, as plain values (picklable, nothing shared): (the kept
    fields in `r`'s order, the step logs only of its requests, its scores without their texts;
    the fields left out; the score fields left out). `compact_from_parts` makes the compact
    record of it (runners.run.TableFold keeps these, packed, while a sweep runs)."""
    out: dict[str, Any] = {}
    texts: frozenset[str] = frozenset()
    for k, v in r.items():
        if k not in _KEPT:
            continue
        if k == "requests" and isinstance(v, list):
            v = _skeleton(v)
        elif k == "scores" and isinstance(v, dict):
            texts = frozenset(sk for sk, sv in v.items() if _is_text(sv))
            v = {sk: sv for sk, sv in v.items() if sk not in texts}
        out[k] = v
    return out, frozenset(r) - _KEPT, texts


def compact_from_parts(
    kept: dict[str, Any], dropped: frozenset[str], texts: frozenset[str], shared: dict[Any, Any]
) -> dict[str, Any]:
    """`compact_record` of the record `compact_parts` gave these of (the same record, the same
    objects shared through `shared`)."""
    out: dict[str, Any] = {}
    for k, v in kept.items():
        if k == "scores" and isinstance(v, dict):
            v = _compact_dict(v, texts)
        elif k == "usage_by_role":
            out[k] = _compact_usage(v, shared)
            continue
        elif k == "task_id" or v is None or isinstance(v, (bool, int)):
            out[k] = v
            continue
        out[k] = _shared_value(shared, k, v)
    return _compact_dict(out, dropped)


def _not_on_path(cell_dir: Path, e: TargetNotFound) -> str:
    return (
        f"{cell_dir}: cannot rebuild the benchmark from manifest.json: {e}. The cell's records are intact "
        "(re-running the sweep would not help: the package is missing here, not the results)"
    )


def check_targets(root: Path) -> None:
    """The error `summarize` raises for a cell of `root` whose benchmark `_target_` cannot be
    imported here (its package not on the path), from the manifests alone: the tables' cache
    checks it before it serves tables that could not be rebuilt now."""
    for d in cell_dirs(root):
        src = d / MANIFEST if (d / MANIFEST).exists() else shard_dirs(d)[0] / MANIFEST
        try:
            target = json.loads(src.read_bytes())["config"]["benchmark"]["_target_"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # an unreadable manifest changes the cache key; `summarize` reports it
        try:
            import_target(str(target), "benchmark")
        except TargetNotFound as e:
            raise StoreError(_not_on_path(d, e)) from None
        except ConfigError:
            continue


RecordHook = Callable[[str, dict[str, Any], bytes | None], None]
"""`(cell name, whole record, its line)`: called once for every finished record on disk as
`summarize` reads it (the report packs its episode pages in that one pass instead of reading the
records again). The line is the record as stored, without its newline, where it is standard JSON
(`store.stream_cell_lines`), else None."""


def summarize(
    cell_dir: Path,
    on_record: RecordHook | None = None,
    compact: bool = True,
    folded: list[dict[str, Any]] | None = None,
) -> CellSummary:
    """The cell's summary. Each record is kept in its compact form (`compact_record`; with
    `compact=False`, `slim_record`); when the benchmark's metric function reads a field the compact
    form leaves out (`DroppedField`), the cell is read again and kept in the fuller form, with a
    warning (`CellSummary.kept_whole`), so no number depends on the form. `folded`: the cell's every
    finished record in compact form as the sweep kept it when it wrote it (runners.run.TableFold),
    instead of reading them back (not with `on_record`, which needs them whole)."""
    manifest, stream, notes = stream_cell_lines(cell_dir)
    shared: dict[Any, Any] = {}
    on_disk = []
    keep = compact_record if compact else slim_record
    if folded is not None and on_record is None and compact:
        on_disk = list(folded)
    else:
        with paused_gc():  # the slim records stay alive: no collector pass over them while they are built
            for r, line in stream:  # one whole record in memory at a time
                if on_record is not None:
                    on_record(cell_dir.name, r, line)
                on_disk.append(keep(r, shared))
    episodes, extra = _wanted(manifest, on_disk)
    # In (task, trial) order, not the order episodes finished: float sums, and so the tables, must
    # not depend on scheduling, kills and resumes.
    episodes.sort(key=lambda r: (r["task_id"], r["trial"]))
    try:
        cfg = manifest["config"]
        bench_cls = import_target(cfg["benchmark"]["_target_"], "benchmark")
        with reading_records():  # no download, no warning: the texts it ran on are in its manifest
            bench = bench_cls(name=cfg["benchmark"]["name"], **cfg["benchmark"].get("params", {}))
    except TargetNotFound as e:  # an external benchmark whose package is not on the path here
        raise StoreError(_not_on_path(cell_dir, e)) from None
    except (KeyError, TypeError, ValueError, ConfigError) as e:  # an old or foreign manifest, a renamed adapter
        raise StoreError(
            f"{cell_dir}: cannot rebuild the benchmark from manifest.json ({type(e).__name__}: {e}); "
            "re-run the sweep for this cell or move the directory out of the experiment"
        ) from None
    try:
        metrics, episodes = _metrics(bench, episodes, notes)
    except DroppedField as e:
        fuller = summarize(cell_dir, None, compact=False)  # the hook already saw every record
        fuller.kept_whole = (
            f"the benchmark's metrics read the record field {e} that the compact summary leaves out "
            "(runners.analysis.cells.COMPACT_FIELDS): this cell's records are kept in the fuller form "
            "(~3 KB per episode instead of ~0.7)"
        )
        return fuller
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
    digests: dict[int, str] = {}  # equal fingerprints are one object (`slim_record`): each digested once
    for ep in episodes:
        texts = ep.get("texts")
        if texts is not None:
            if id(texts) not in digests:
                digests[id(texts)] = hashlib.sha256(json.dumps(texts, sort_keys=True).encode()).hexdigest()[:12]
            digest = digests[id(texts)]
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
        paraphrased=paraphrased_prompts(manifest, stored_provenance(cell_dir, len(episodes))),
        episodes=episodes,
        records=on_disk,
        metric_fn=bench.metrics,
        # kept for the fidelity marks and the W&B log, without its task ids: counted above (`_wanted`),
        # read by nothing after, and 8 MB at 100,000 tasks
        manifest={k: v for k, v in manifest.items() if k != "task_ids"},
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
            # The bootstrap only when some rate prints its interval (`rate_interval`: a share of
            # episodes takes Wilson's, an undefined rate none): else its resamples and per-task
            # structures (~60 MB at 100,000 tasks) serve nothing. When it runs, it runs on every
            # rate as before: its matrix products, and so their last bits, depend on the set.
            binary = {m: binary_rate(c.episodes, c.metric_fn, m) for m in rates if c.metrics.get(m) is not None}
            needs_boot = any(b is None for b in binary.values())
            boot = bootstrap_ci(c.episodes, c.metric_fn, resamples=resamples, metrics=rates) if needs_boot else {}
            n_tasks = len({str(e.get("task_id")) for e in c.episodes})
            for m in rates:
                got = rate_interval(
                    c.metrics.get(m), c.episodes, c.metric_fn, m, boot.get(m), n_tasks, binary=binary.get(m)
                )
                if got:
                    c.ci[m], c.ci_kind[m] = got
    return c.ci


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


def reader_warnings(root: Path, cells: list[CellSummary], orphans: list[str] | None = None) -> list[str]:
    """What every reader of an experiment (aggregate, view, paper) prints on stderr: folders that
    are not in the tables and why, records set aside or unreadable (a damaged records file)."""
    orphans = orphan_cells(root) if orphans is None else orphans
    return (
        [f"warning: {o}" for o in orphans]
        + [f"warning: {c.cell}: {n}" for c in cells for n in c.set_aside]
        + [f"warning: {c.cell}: {c.kept_whole}" for c in cells if c.kept_whole]
    )


def orphan_cells(root: Path) -> list[str]:
    """Warnings for directories of the experiment that hold results but no manifest.json, names
    that are not UTF-8 (ignored) and symlinked copies of a cell (counted once)."""
    out: list[str] = []
    for d in cell_dirs(root, out, every=True):
        if not (d / MANIFEST).exists() and any(
            p.exists() for p in (d / EPISODES, *compressed_files(d / EPISODES), d / ERRORS, d / "DONE")
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
    root: Path,
    cell_names: set[str] | None = None,
    methods: set[str] | None = None,
    benchmarks: set[str] | None = None,
    hide_failed: bool = True,
    on_record: RecordHook | None = None,
    folded: dict[str, list[dict[str, Any]]] | None = None,
) -> list[CellSummary]:
    """The cells of the experiment folder `root`; `hide_failed`: without the failed tries (cells
    that never finished an episode because of a configuration error, runners/prune.py); `folded`:
    cell name → its compact records kept by the sweep (`summarize`)."""
    from runners.prune import failed_cells

    if not root.is_dir():
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    hidden = failed_cells(root) if hide_failed else {}
    cells = [
        summarize(d, on_record, folded=(folded or {}).get(d.name)) for d in cell_dirs(root) if d.name not in hidden
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
