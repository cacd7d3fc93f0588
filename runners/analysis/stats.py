"""Uncertainty for the tables: task-level bootstrap confidence intervals and paired comparisons.

- `bootstrap_ci`: a percentile bootstrap that resamples **tasks** with replacement, keeping all
  trials of a drawn task together (a cluster bootstrap: trials of one task are not independent
  samples), and recomputes the benchmark's own metric function on each resample, so every
  metric the benchmark reports (rates, pass^k, depth curves) gets an interval the same way.
- `paired_bootstrap`: the same resampling over the tasks two cells share, applied to the
  difference method − reference, so the interval reflects that both were run on the same tasks.
- `sign_test`: the exact two-sided sign test on per-task wins and losses (ties dropped). With one
  binary outcome per task this is the exact McNemar test on the discordant pairs.
- `wilson_interval`: the Wilson score interval of a single rate k/n. Unlike the bootstrap it does
  not collapse to a point at 0 % or 100 % (0/150 successes still leaves [0, 2.5] %), so the
  tables use it for every rate that is a share of episodes (SR, pass^1, task success) and for any
  rate whose bootstrap interval collapses (see `rate_interval`).
- `holm`: Holm's step-down adjustment of the p-values of the comparisons in one table (family-wise
  error at the table's level), `significance_mark` the mark the tables print with it.

Resampled copies get distinct task ids (`<id>~<draw>`), so metric functions that group episodes
by task (pass^k) see a drawn-twice task as two tasks. Random draws come from a seeded numpy
generator: the same records always give the same intervals (tables stay reproducible).
numpy does the resampling and percentiles. The exact binomial tail is an integer sum (each
coefficient from the one before: exact, and it spares every sweep the ~2 s import of
scipy.stats); the tests check it against scipy's `binomtest` where scipy is installed. numpy is
imported at the first interval that needs it (`np` below), not with this module: a sweep whose
tables bootstrap nothing (one episode a cell, rates only) never loads it. Its import (~0.2-0.26 s
of CPU on 2 cores, half of it OpenBLAS's threads starting) was about a fifth of a small sweep's CPU.
"""

from __future__ import annotations

import math
import threading
from array import array
from contextlib import contextmanager, nullcontext
from statistics import NormalDist
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import orjson

if TYPE_CHECKING:
    import numpy as np
else:

    class _LazyNumpy:
        """Stands for numpy until a function here first reads an attribute of `np`: numpy is
        imported then, and the module's `np` becomes numpy itself (no lookup through this
        afterwards)."""

        def __getattr__(self, name: str) -> Any:
            import numpy

            globals()["np"] = numpy
            return getattr(numpy, name)

    np = _LazyNumpy()

Episodes = list[dict[str, Any]]
MetricFn = Callable[[Episodes], dict[str, Any]]

DEFAULT_RESAMPLES = 1000
LEVEL = 0.95


def by_task(episodes: Iterable[dict[str, Any]]) -> dict[str, Episodes]:
    """Episodes grouped by task id, in first-seen order."""
    out: dict[str, Episodes] = defaultdict(list)
    for e in episodes:
        out[str(e.get("task_id"))].append(e)
    return dict(out)


_local = threading.local()  # each thread's open `shared_evaluations` blocks


def _shared() -> list[dict[tuple[Any, ...], Any]]:
    """The open blocks' memos: (fn, packed ids) → (group, numbers); ("singles", fn) → (id → numbers,
    the episodes); ("numbers", JSON) → (unused, the one dict of those numbers)."""
    stack: list[dict[tuple[Any, ...], Any]] = _local.__dict__.setdefault("shared", [])
    return stack


@contextmanager
def shared_evaluations() -> Iterator[None]:
    """Within the block, the metric function's numbers on one list of records (a task's trials, a
    single episode, a whole cell) are computed once and reused by every interval, Wilson check and
    paired test that asks for them (a table asks for each cell's, then for each Δ: the same
    per-task and per-episode values several times). Kept with the records they were computed on,
    so their ids stay theirs, and dropped at the end of the block (`build_tables` opens one), with
    the decompositions `_parts` kept meanwhile."""
    stack = _shared()
    stack.append(stack[-1] if stack else {})  # inside another block: the same numbers
    try:
        yield
    finally:
        stack.pop()
        if not stack:
            _memo.clear()  # nor do the decompositions keep the records alive past the table


def _fn_key(metric_fn: MetricFn) -> tuple[Any, int]:
    return getattr(metric_fn, "__func__", metric_fn), id(getattr(metric_fn, "__self__", None))


def _value(metric_fn: MetricFn, group: Episodes) -> dict[str, float]:
    """The numeric metrics of `group` (reused inside `shared_evaluations`; callers must not change them)."""
    stack = _shared()
    if not stack:
        return _numeric(metric_fn(group))
    memo = stack[-1]
    if len(group) == 1:
        # One episode (a task's single trial, `binary_rate`'s episodes): its numbers under its id in
        # the function's own table, the episode kept alive beside them so the id stays its own
        # (~90 bytes an episode; a key tuple and a list per episode took ~370, 37 MB at 100,000).
        by_id, held = memo.setdefault(("singles", _fn_key(metric_fn)), ({}, []))
        numbers = by_id.get(id(group[0]))
        if numbers is None:
            numbers = by_id[id(group[0])] = _same_numbers(memo, _numeric(metric_fn(group)))
            held.append(group[0])
        return numbers
    key = (_fn_key(metric_fn), array("Q", map(id, group)).tobytes())  # packed: 8 bytes a record, not ~40
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (group, _same_numbers(memo, _numeric(metric_fn(group))))
    return hit[1]


def _same_numbers(memo: dict[tuple[Any, ...], Any], numbers: dict[str, float]) -> dict[str, float]:
    """Equal numbers as one dict (most tasks of a cell score alike: ~0.8 KB per task at 100,000
    tasks otherwise); keyed by their exact JSON (orjson writes floats round-trip, -0.0 too)."""
    return memo.setdefault(("numbers", orjson.dumps(numbers)), ([], numbers))[1]


def _resample(groups: list[Episodes], draw: np.ndarray, tag: int) -> Episodes:
    """The episodes of the tasks `draw` names, in its order, a task drawn again standing as a task
    of its own: its records copied under another id. A task's first draw is its records as they
    are (their ids are distinct from every copy's), so a resample copies only ~37 % of them, not
    every one (36 MB less at 100,000 tasks; the same groups, so the same numbers)."""
    out: Episodes = []
    seen: set[int] = set()
    for j, i in enumerate(draw.tolist()):
        if i not in seen:
            seen.add(i)
            out += groups[i]
            continue
        for e in groups[i]:
            c = e.copy()  # of the record's own class (a compact record's left-out fields keep raising)
            c["task_id"] = f"{e.get('task_id')}~{tag}.{j}"
            out.append(c)
    return out


def _numeric(d: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in d.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }


def _interval(values: list[float] | np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo, hi = np.percentile(np.asarray(values, dtype=float), [100 * a, 100 * (1 - a)])
    return float(lo), float(hi)


BLOCK_DRAWS = 1 << 18
"""Task draws held at once by the bootstrap (2 MB of indices, a few times that in counts): the
resamples are drawn a block of rows at a time, so memory stays flat in the number of tasks and
resamples (a tasks × resamples matrix would be 0.8 GB at 100,000 tasks)."""


def _draw_blocks(seed: int, n: int, resamples: int) -> Iterator[np.ndarray]:
    """The resamples' task indices, a block of rows at a time: row b overall is the draw the b-th
    resample takes, the same numbers as `np.random.default_rng(seed).integers(0, n, (resamples, n))`
    (numpy's generator fills a matrix row after row from one stream, whatever the blocks;
    `tests/runners/test_bootstrap_memory.py` checks it)."""
    rng = np.random.default_rng(seed)
    rows = max(1, min(resamples, BLOCK_DRAWS // max(n, 1)))
    for start in range(0, resamples, rows):
        yield rng.integers(0, n, (min(rows, resamples - start), n))


def _draws(seed: int, n: int, resamples: int) -> Iterator[np.ndarray]:
    """Each resample's draw (a row of task indices) in order, from `_draw_blocks`."""
    for block in _draw_blocks(seed, n, resamples):
        yield from block


class _Ratio:
    """A metric that is a ratio of per-task sums, m(S) = Σ_t c_t·a_t / Σ_t c_t·d_t over a resample
    drawing task t c_t times (a rate over episodes, over tasks, or pooled over sub-items: every
    benchmark rate so far). `a`, `d` are per-task arrays; d_t = 0 for a task on which the metric
    is undefined alone (it then adds nothing)."""

    __slots__ = ("a", "d")

    def __init__(self, a: np.ndarray, d: np.ndarray) -> None:
        self.a, self.d = a, d

    def predict(self, draw: np.ndarray) -> float | None:
        den = float(self.d[draw].sum())
        return float(self.a[draw].sum()) / den if den > 0 else None


_PROBES = 2  # random resamples (besides the full set) on which a decomposition must reproduce the metric
_RTOL = 1e-9
_MEMO_SIZE = 8


class _Parts:
    """What the decomposition learns about one metric function on one list of task groups: each
    task's metrics alone, the pairs evaluated, the checks' true values, and each metric's
    decomposition (None: not a ratio). Kept for the next call on the same records (a table asks
    for a cell's intervals, then for each paired Δ); it holds the records, so their ids stay theirs."""

    def __init__(self, groups: list[Episodes], metric_fn: MetricFn) -> None:
        self.groups, self.metric_fn = groups, metric_fn
        self.singles = [_value(metric_fn, g) for g in groups]
        self.pairs: dict[tuple[int, int], dict[str, float]] = {}
        self.checks: list[tuple[np.ndarray, dict[str, float]]] = []
        self.ratios: dict[str, _Ratio | None] = {}

    def pair(self, i: int, j: int) -> dict[str, float]:
        i, j = min(i, j), max(i, j)
        if (i, j) not in self.pairs:
            self.pairs[i, j] = _numeric(self.metric_fn(self.groups[i] + self.groups[j]))
        return self.pairs[i, j]

    def check(self, i: int) -> tuple[np.ndarray, dict[str, float]]:
        while len(self.checks) <= i:
            n = len(self.groups)
            draw = (
                np.arange(n) if not self.checks else np.random.default_rng([0x5EED, len(self.checks)]).integers(0, n, n)
            )
            self.checks.append((draw, _numeric(self.metric_fn(_resample(self.groups, draw, -1 - len(self.checks))))))
        return self.checks[i]


_memo: "dict[tuple[Any, ...], _Parts]" = {}


def _parts(groups: list[Episodes], metric_fn: MetricFn) -> _Parts:
    key = (  # the records' ids and the groups' sizes as packed bytes (a tuple of ints: ~40 bytes a record)
        *_fn_key(metric_fn),
        array("Q", [id(e) for g in groups for e in g]).tobytes(),
        array("Q", [len(g) for g in groups]).tobytes(),
    )
    p = _memo.get(key)
    if p is None:
        while len(_memo) >= _MEMO_SIZE:
            _memo.pop(next(iter(_memo)), None)
        p = _memo[key] = _Parts(groups, metric_fn)
    return p


def _reproduces(p: _Parts, k: str, ratio: _Ratio) -> bool:
    """Whether `ratio` gives the metric function's value of `k` (to `_RTOL`) on the full set and
    on `_PROBES` random resamples built the way the bootstrap builds them."""
    for i in range(1 + _PROBES):
        draw, truth = p.check(i)
        want, got = truth.get(k), ratio.predict(draw)
        if want is None or got is None:
            if (want is None) != (got is None):
                return False
            continue
        if abs(want - got) > _RTOL * max(1.0, abs(want)):
            return False
    return True


def _infer(p: _Parts, k: str) -> _Ratio | None:
    n = len(p.groups)
    vals = np.array([s.get(k, np.nan) for s in p.singles], dtype=float)
    defined = np.flatnonzero(~np.isnan(vals))
    if not len(defined):
        return None
    on = ~np.isnan(vals)
    for weights in (np.array([len(g) for g in p.groups], dtype=float), np.ones(n)):
        # The usual shapes first: a mean over episodes (weight: the task's episodes) or over tasks
        # (weight 1), kept only if it reproduces the metric function like any decomposition; this
        # spares the pair evaluations (one metric call per task) for every benchmark rate so far
        # but the pooled ones.
        d = np.where(on, weights, 0.0)
        guess = _Ratio(np.where(on, np.nan_to_num(vals) * d, 0.0), d)
        if _reproduces(p, k, guess):
            return guess
    r = int(defined[0])
    d = np.zeros(n)
    d[r] = 1.0
    far = int(defined[np.argmax(np.abs(vals[defined] - vals[r]))])  # the second reference: the value farthest from r's
    tol = _RTOL * max(1.0, float(np.max(np.abs(vals[defined]))))
    other = far if abs(vals[far] - vals[r]) > tol else None
    if other is not None:
        m = p.pair(r, other).get(k)
        if m is None or m == vals[other]:
            return None
        d[other] = (vals[r] - m) / (m - vals[other])
        if not (np.isfinite(d[other]) and d[other] > 0):
            return None
    for t_ in defined:
        t = int(t_)
        if t in (r, other):
            continue
        if other is None:  # every value equal (to rounding): the weights do not matter
            d[t] = 1.0
            continue
        ref = r if abs(vals[t] - vals[r]) >= abs(vals[t] - vals[other]) else other
        m = p.pair(ref, t).get(k)
        if m is None or m == vals[t]:
            return None
        d[t] = d[ref] * (vals[ref] - m) / (m - vals[t])
        if not (np.isfinite(d[t]) and d[t] > 0):
            return None
    ratio = _Ratio(np.where(d > 0, np.nan_to_num(vals) * d, 0.0), d)
    return ratio if _reproduces(p, k, ratio) else None


def _decompose(groups: list[Episodes], metric_fn: MetricFn, keys: Iterable[str]) -> dict[str, _Ratio]:
    """The metrics among `keys` that are ratios of per-task sums, with their per-task arrays.

    Generic, from the metric function alone: each task's value m_t = a_t/d_t is the metric on that
    task's episodes; its weight d_t (relative to a reference task r, d_r = 1) follows from the
    metric on the two tasks together, m_rt = (a_r + a_t)/(d_r + d_t), so d_t = (m_r − m_rt)/(m_rt − m_t)
    (a second reference, the value farthest from r's, serves the tasks whose value is near r's;
    when all values are equal the weights do not matter). A decomposition is kept only when it
    reproduces the metric function (to 1e-9) on the full set and on random resamples built the way
    the bootstrap builds them; any other metric (counts, curves' summaries, pass^k over tasks with
    unequal trial counts) is left to the metric function on every resample. The metric function
    runs about twice per task, once per check, instead of once per resample."""
    p = _parts(groups, metric_fn)
    for k in keys:
        if k not in p.ratios:
            p.ratios[k] = _infer(p, k)
    return {k: r for k in keys if (r := p.ratios[k]) is not None}


def _count_block(draws: np.ndarray, n: int) -> np.ndarray:
    """How often each resample (row) of a block of draws draws each task (column), as floats."""
    rows = len(draws)
    return (
        np.bincount((draws + n * np.arange(rows)[:, None]).ravel(), minlength=rows * n).reshape(rows, n).astype(float)
    )


_blas: list[Any] = []


def _one_blas_thread() -> Any:
    """The matrix products on one BLAS thread: they take milliseconds, and OpenBLAS's other threads
    then spin for a while after each one (on two cores, as much CPU again as the whole table). The
    product is the same number either way (the threads split the output, not the sums)."""
    if not _blas:
        try:
            from threadpoolctl import ThreadpoolController

            _blas.append(ThreadpoolController())
        except ImportError:  # pragma: no cover - a declared dependency
            _blas.append(None)
    return _blas[0].limit(limits=1, user_api="blas") if _blas[0] is not None else nullcontext()


def _ratio_values(ratios: dict[Any, _Ratio], seed: int, n: int, resamples: int) -> dict[Any, np.ndarray]:
    """Every resample's value of each ratio metric (NaN where undefined), from the per-task arrays:
    the sums over each resample's draw are one matrix product with its per-task counts, a block of
    resamples at a time (`_draw_blocks`); only `resamples` values per metric are kept. Each value
    is a sum over the tasks of one resample, so it does not depend on the blocks."""
    if not ratios:
        return {}
    keys = list(ratios)
    a = np.stack([ratios[k].a for k in keys], axis=1)
    d = np.stack([ratios[k].d for k in keys], axis=1)
    top, bottom = np.empty((resamples, len(keys))), np.empty((resamples, len(keys)))
    start = 0
    with _one_blas_thread():
        for draws in _draw_blocks(seed, n, resamples):
            counts = _count_block(draws, n)
            del draws
            top[start : start + len(counts)] = counts @ a
            bottom[start : start + len(counts)] = counts @ d
            start += len(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)
    return {k: out[:, i] for i, k in enumerate(keys)}


def _keys(metric_fn: MetricFn, wanted: set[str] | None, full: Episodes) -> list[str]:
    return sorted(wanted) if wanted is not None else list(_numeric(metric_fn(full)))


def bootstrap_ci(
    episodes: Episodes,
    metric_fn: MetricFn,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
    metrics: Iterable[str] | None = None,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of every numeric metric `metric_fn` returns, resampling tasks
    (trials nested). Metrics undefined on some resamples get an interval from the others; a cell
    with fewer than two tasks gets no intervals (nothing to resample). Without `metrics`, the
    metrics are those `metric_fn` names on the whole cell (a number, or None where undefined).

    Metrics that are ratios of per-task sums (`_decompose`: checked against `metric_fn`) are
    computed from per-task arrays, a block of resamples at a time (`_draw_blocks`); the others
    by `metric_fn` on each resample. Both give the numbers the per-resample computation gives (to float rounding)."""
    groups = list(by_task(episodes).values())
    if len(groups) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    fast = _ratio_values(
        _decompose(groups, metric_fn, _keys(metric_fn, wanted, episodes)), seed, len(groups), resamples
    )
    values: dict[str, np.ndarray] = {k: v[~np.isnan(v)] for k, v in fast.items()}
    if wanted is None:  # every metric the whole cell's `metric_fn` names, undefined ones included
        named = metric_fn(episodes).items()
        wanted = {k for k, v in named if v is None or (isinstance(v, int | float) and not isinstance(v, bool))}
    if wanted - fast.keys():  # only those not vectorised: one metric_fn call per resample
        slow: dict[str, list[float]] = defaultdict(list)
        for b, draw in enumerate(_draws(seed, len(groups), resamples)):
            for k, v in _numeric(metric_fn(_resample(groups, draw, b))).items():
                if k not in fast and k in wanted:
                    slow[k].append(v)
        values.update({k: np.asarray(v, dtype=float) for k, v in slow.items()})
    return {k: _interval(v, level) for k, v in values.items() if len(v) >= max(2, resamples // 2)}


def per_task(episodes: Episodes, metric_fn: MetricFn) -> dict[str, dict[str, float]]:
    """Each task's metrics computed over that task's episodes (its trials) alone."""
    return {tid: _value(metric_fn, eps) for tid, eps in by_task(episodes).items()}


def paired_bootstrap(
    ours: Episodes,
    ref: Episodes,
    metric_fn: MetricFn,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
    metrics: Iterable[str] | None = None,
) -> dict[str, tuple[float, float]]:
    """Interval of metric(ours) − metric(ref) over the tasks both have, resampling those tasks
    jointly (the same draw for both sides); ratio metrics vectorised as in `bootstrap_ci`."""
    a, r = by_task(ours), by_task(ref)
    common = [t for t in a if t in r]
    if len(common) < 2 or resamples <= 0:
        return {}
    wanted = set(metrics) if metrics is not None else None
    ga, gr = [a[t] for t in common], [r[t] for t in common]
    if wanted is not None:
        keys = sorted(wanted)
    else:
        full_a, full_r = [e for g in ga for e in g], [e for g in gr for e in g]
        keys = list(_numeric(metric_fn(full_a)).keys() & _numeric(metric_fn(full_r)).keys())
    da = _decompose(ga, metric_fn, keys)
    dr = _decompose(gr, metric_fn, [k for k in keys if k in da])
    both = [k for k in keys if k in da and k in dr]
    v = _ratio_values(
        {**{("a", k): da[k] for k in both}, **{("r", k): dr[k] for k in both}}, seed, len(common), resamples
    )  # one pass over the draws for both sides
    values: dict[str, np.ndarray] = {}
    for k in both:
        diff = v["a", k] - v["r", k]
        values[k] = diff[~np.isnan(diff)]
    if wanted is None or wanted - set(both):
        slow: dict[str, list[float]] = defaultdict(list)
        for b, draw in enumerate(_draws(seed, len(common), resamples)):
            sa, sr = _numeric(metric_fn(_resample(ga, draw, b))), _numeric(metric_fn(_resample(gr, draw, b)))
            for k in sa.keys() & sr.keys():
                if k not in values and (wanted is None or k in wanted):
                    slow[k].append(sa[k] - sr[k])
        values.update({k: np.asarray(v, dtype=float) for k, v in slow.items()})
    return {k: _interval(v, level) for k, v in values.items() if len(v) >= max(2, resamples // 2)}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value for `wins` vs `losses` (ties already dropped): the
    probability under p = 1/2 of a split at least as uneven. 1.0 when there is no decided pair."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    return min(1.0, 2 * _binomial_head(n, k) / 2**n)


def _binomial_head(n: int, k: int) -> int:
    """C(n, 0) + C(n, 1) + ... + C(n, k), exactly: each term from the one before (C(n, i+1) =
    C(n, i)·(n−i)/(i+1), an exact integer division), not k separate `math.comb` calls."""
    total, term = 0, 1
    for i in range(k + 1):
        total += term
        term = term * (n - i) // (i + 1)
    return total


def paired_sign_test(
    ours: Episodes, ref: Episodes, metric_fn: MetricFn, metric: str, *, higher_is_better: bool = True
) -> tuple[int, int, int, float] | None:
    """Per shared task, compare `metric` of ours vs ref (each over that task's trials):
    (wins, losses, ties, exact sign-test p); a win is the better side by the metric's declared
    direction. None when no shared task defines the metric."""
    a, r = per_task(ours, metric_fn), per_task(ref, metric_fn)
    pairs = [(a[t][metric], r[t][metric]) for t in a if t in r and metric in a[t] and metric in r[t]]
    if not pairs:
        return None
    if not higher_is_better:
        pairs = [(-x, -y) for x, y in pairs]
    wins = sum(x > y for x, y in pairs)
    losses = sum(x < y for x, y in pairs)
    return wins, losses, len(pairs) - wins - losses, sign_test(wins, losses)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar test on the discordant counts b (ours right, ref wrong) and c (the reverse):
    the sign test on b vs c."""
    return sign_test(b, c)


def wilson_interval(k: float, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval of a proportion with `k` successes out of `n`, in % (None for n = 0).
    Closed form (Wilson 1927); equal to statsmodels' / scipy's `method="wilson"` without the import."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = min(1.0, max(0.0, k / n))
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    if k <= 0:  # exact bounds at the edges (the float formula leaves ~1e-17 there)
        lo = 0.0
    if k >= n:
        hi = 1.0
    return 100.0 * lo, 100.0 * hi


def binary_rate(episodes: Episodes, metric_fn: MetricFn, metric: str) -> tuple[int, int] | None:
    """(successes, episodes) when `metric` is a share of episodes: every single episode scores 0 or
    100 on it and the cell's value is their mean. None for any other kind of rate (progress scores,
    pooled ratios, depth curves), which keep the task bootstrap."""
    if not episodes:
        return None
    try:
        whole = _value(metric_fn, episodes).get(metric)
        single = [_value(metric_fn, [e]).get(metric) for e in episodes]
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, ZeroDivisionError):
        return None
    if whole is None or any(v is None or v not in (0.0, 100.0) for v in single):
        return None
    k = sum(1 for v in single if v == 100.0)
    return (k, len(single)) if abs(100.0 * k / len(single) - whole) < 1e-6 else None


def rate_interval(
    value: float | None,
    episodes: Episodes,
    metric_fn: MetricFn,
    metric: str,
    bootstrap: tuple[float, float] | None,
    n_tasks: int,
    level: float = LEVEL,
    binary: Any = ...,
) -> tuple[tuple[float, float], str] | None:
    """The interval a table prints for one rate and how it was made:
    - a share of episodes (`binary_rate`): the Wilson interval over the episodes ("wilson"), over
      the tasks when a task ran several trials (trials of one task are not independent: n = tasks,
      k = rate × tasks; `INTERVAL_LEGEND` says so wherever an interval is printed);
    - otherwise the task bootstrap ("bootstrap"), unless it collapses to a point (every resample
      equal, e.g. a progress score of 0 on every task): then the Wilson interval of value/100 over
      the tasks ("wilson~"), a conservative reading that does not claim certainty from a few tasks.
    `binary`: `binary_rate(episodes, metric_fn, metric)` when the caller has it already (it walks
    every episode); by default it is asked here."""
    if value is None:
        return None
    b = (binary_rate(episodes, metric_fn, metric) if metric_fn is not None else None) if binary is ... else binary
    if b is not None:
        if b[1] > n_tasks > 0:  # several trials per task are not independent draws: n = tasks (conservative)
            ci = wilson_interval(n_tasks * value / 100.0, n_tasks, level)
        else:
            ci = wilson_interval(b[0], b[1], level)
        return (ci, "wilson") if ci else None
    if bootstrap is not None and bootstrap[1] - bootstrap[0] > 1e-9:
        return bootstrap, "bootstrap"
    ci = wilson_interval(n_tasks * value / 100.0, n_tasks, level) if n_tasks > 0 else None
    return (ci, "wilson~") if ci else None


INTERVAL_LEGEND = (
    "[95% interval]: for a rate that is a share of episodes (SR, pass^1, task success), the Wilson score interval "
    "of k successes out of n: with one trial per task n = episodes = tasks; with several trials per task n = tasks "
    "and k = the rate × tasks, because the trials of one task share its prompt and data and are not independent "
    "draws (treating them as n = episodes would narrow the interval as if each trial were a new task; n = tasks is "
    "the conservative reading). Every other rate (progress scores, pooled accuracies, depth curves): the percentile "
    "bootstrap over tasks (a task's trials are drawn together), or, where that collapses to a point, the Wilson "
    "interval over tasks"
)


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values (step-down; monotone; capped at 1), in the input order.
    None entries (no test) stay None and do not count in the family."""
    idx = sorted((i for i, p in enumerate(p_values) if p is not None), key=lambda i: p_values[i])  # type: ignore[arg-type, return-value]
    m = len(idx)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(idx):
        adj = min(1.0, (m - rank) * float(p_values[i]))  # type: ignore[arg-type]
        running = max(running, adj)
        out[i] = running
    return out


ALPHA = 0.05
SIGNIFICANCE_LEGEND = (
    "* = significant at 5 % after Holm's correction across this table's comparisons "
    "(exact sign test over the tasks both cells ran); p shown is the Holm-adjusted p"
)


def significance_mark(p_adjusted: float | None, alpha: float = ALPHA) -> str:
    return "*" if p_adjusted is not None and p_adjusted < alpha else ""
