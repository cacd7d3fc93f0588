"""`python -m runners.sweep [-m] [group=name[,name…] ...] [++experiment.grid.<group>=[a,b] ...] [experiment=<preset>]`

Composes the Hydra config, expands the experiment grid into cells (any group given on the
command line pins that axis), validates every cell before any work, runs them through one
scheduler, prints a completeness report and the paper-style table. Re-running resumes: finished
(task, trial) pairs are skipped, infra errors retried. Several cells in one process are one
grid: `++experiment.grid.method=[a,b]`, or Hydra's `-m method=a,b`, whose default launcher
(hydra_plugins/harness_grid_launcher, `run_grid`) hands all jobs to the one scheduler; launchers
that start each job in its own process (hydra/launcher=slurm or slurm_local) run `run` per job.
A custom grid without `experiment.name` gets its own experiment folder (`grid_name`)."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Callable, TextIO

CONF_PATH = str(Path(__file__).resolve().parent.parent / "conf")
GROUPS = ("method", "backbone", "benchmark")


def _cli_overrides() -> list[str]:
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task)


def _multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        return HydraConfig.get().mode == RunMode.MULTIRUN
    except Exception:  # not inside a Hydra app (tests compose configs directly)
        return False


def _basic_launcher() -> bool:
    """Whether this multirun job was started by Hydra's basic launcher (all jobs in this process,
    one after another) rather than a launcher that gives each job its own process."""
    from hydra.core.hydra_config import HydraConfig

    return str(HydraConfig.get().launcher.get("_target_", "")).endswith(".BasicLauncher")


def _sweep_values(value: str) -> list[str] | None:
    """The values of a Hydra sweep argument (`a,b` or `choice(a,b)`); None for a single value."""
    inner = value[len("choice(") : -1] if value.startswith("choice(") and value.endswith(")") else value
    if value.startswith(("[", "{", "'", '"')) or "," not in inner:
        return None
    return [v.strip() for v in inner.split(",")]


def as_grid(argv: list[str]) -> tuple[list[str], list[str]]:
    """A `-m` command line as one sweep: group sweeps (`method=a,b`) become experiment-grid axes
    (`++experiment.grid.method=[a,b]`), other arguments stay; a swept key that is not a grid axis
    is shown as `key=<one of a,b>` and returned apart (one command per value, or a launcher)."""
    out, other = [], []
    for arg in argv:
        if arg in ("-m", "--multirun") or arg.startswith("hydra/launcher="):
            continue
        key, sep, value = arg.partition("=")
        values = _sweep_values(value) if sep else None
        if values and key.lstrip("+~") in GROUPS:
            out.append(f"++experiment.grid.{key.lstrip('+~')}=[{','.join(values)}]")
            continue
        if values:
            other.append(key)
            arg = f"{key}=<one of {','.join(values)}>"
        out.append(arg)
    return out, other


_REFUSED: list[bool] = []  # the basic launcher calls `run` once per job: say it once


def refuse_basic_multirun(argv: list[str]) -> str:
    """Why `-m` without a launcher is refused, and the one-process command that does it."""
    import shlex

    from runners.secrets import redact_secrets

    args, other = as_grid(argv)
    msg = (
        "`-m` with Hydra's basic launcher would run each job as a separate sweep, one after another. Several cells "
        "in one process are the experiment grid, run by one scheduler (cells overlap, one in-flight bound per "
        "endpoint, one report):\n  python -m runners.sweep " + redact_secrets(" ".join(shlex.quote(a) for a in args))
    )
    if other:
        msg += (
            f"\n{', '.join(other)} {'is' if len(other) == 1 else 'are'} not a grid axis "
            "(method, backbone, benchmark): run one command per value, into the same experiment for a key that "
            "changes the cell (benchmark.params.*, method.params.*: its tables cover every cell), into its own "
            "experiment.name for a runtime knob (runner.limit, runner.trials)"
        )
    return msg + (
        "\n`-m` without hydra/launcher=basic does the same (the default launcher, grid); one process per job: "
        "hydra/launcher=slurm, or slurm_local (docs/contracts.md §6)"
    )


def expand_cells(cfg: Any, overrides: list[str] | None = None) -> list[dict[str, Any]]:
    """Composed config → plain dicts, one per cell of the experiment grid. `overrides` are the
    command-line overrides (default: Hydra's, inside a running app)."""
    from hydra import compose
    from omegaconf import OmegaConf

    overrides = _cli_overrides() if overrides is None else list(overrides)
    pinned = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    grid = dict(OmegaConf.to_container(cfg.experiment.get("grid") or {}, resolve=True))  # type: ignore[arg-type]  # a DictConfig: to_container gives a dict
    axes = [(g, names) for g, names in grid.items() if g in GROUPS and g not in pinned]
    if not axes:
        return _replaced_maps([OmegaConf.to_container(cfg, resolve=True)], overrides)  # type: ignore[list-item]  # a DictConfig: to_container gives a dict
    cells: list[Any] = []
    for combo in itertools.product(*(names for _, names in axes)):
        extra = [f"{g}={n}" for (g, _), n in zip(axes, combo)]
        c = compose(config_name="config", overrides=overrides + extra)
        cells.append(OmegaConf.to_container(c, resolve=True))
    return _replaced_maps(cells, overrides)


REPLACED_MAPS = ("experiment.scripted_noise",)
"""Mappings that a command-line `key={}` empties (the documented `experiment.scripted_noise={}`, the noiseless
demo): Hydra merges `{}` into the preset's mapping, which leaves it as it was."""


def _replaced_maps(cells: list[dict[str, Any]], overrides: list[str]) -> list[dict[str, Any]]:
    for o in overrides:
        key, _, value = o.partition("=")
        if key.lstrip("+~") in REPLACED_MAPS and value.strip() == "{}":
            parent, _, leaf = key.lstrip("+~").rpartition(".")
            for c in cells:
                node = c
                for part in parent.split("."):
                    node = node.setdefault(part, {})
                node[leaf] = {}
    return cells


def print_report(reports: list[Any], wall: float, out: TextIO | None = None, budget_usd: float | None = None) -> None:
    out = out or sys.stdout
    tot = {
        k: sum(getattr(r, k) for r in reports)
        for k in ("total", "skipped", "ok", "infra_error", "harness_error", "calls", "cache_hits")
    }
    print(
        f"\nCompleteness ({wall:.1f}s): {tot['ok'] + tot['skipped']}/{tot['total']} episodes done "
        f"({tot['skipped']} from earlier runs, {tot['ok']} now), {tot['infra_error']} infra errors, "
        f"{tot['harness_error']} harness errors.",
        file=out,
    )
    fresh = tot["calls"] - tot["cache_hits"]
    if tot["ok"] + tot["infra_error"] + tot["harness_error"] == 0:
        print("Nothing to run: every episode was already finished; 0 model calls made.", file=out)
    else:
        print(f"Model calls: {fresh} made, {tot['cache_hits']} served from the response cache.", file=out)
    spent = sum(r.usd for r in reports)
    if spent:
        print(f"Spent ${spent:.4f} in this run (list prices; cache hits cost nothing).", file=out)
    garbage = sum(getattr(r, "usage_estimated", 0) for r in reports)
    if garbage:
        print(
            f"warning: {garbage} model call(s) got unusable usage from the endpoint (a count that is not a "
            "non-negative whole number, or above what the call can have: more prompt tokens than the request had "
            "bytes, more completion tokens than its limit); their tokens are estimated (source: estimated), the "
            "budget counts the estimate, and each call's `hygiene` says what was sent.",
            file=out,
        )
    redacted = sum(getattr(r, "redacted", 0) for r in reports)
    if redacted:
        print(
            f"warning: {redacted} model repl(y/ies) echoed a configured secret (API key or URL password); "
            "it was replaced by *** before anything was stored, and the call's `hygiene` records it. "
            "Check the endpoint or proxy (a reply from an older response cache is redacted as it is read; "
            "`python -m runners.cache scrub <output dir>` rewrites the cache).",
            file=out,
        )
    left = sum(r.not_started for r in reports)
    from runners import budget as ledger

    acct = ledger.LAST if budget_usd is not None and ledger.LAST.get("budget") == budget_usd else {}
    if acct:
        total = acct["spent_before"] + acct["spent"]
        cut = f", {acct['cut_short']} cut short at the cap (run again on resume)" if acct["cut_short"] else ""
        if left or acct["cut_short"] or acct["finishing"] or acct["unknown"]:
            if acct["unknown"]:
                rest = (
                    f"more than {ledger.usd_text(acct['finishing'])} (known for some cells; "
                    if acct["finishing"]
                    else "an unknown amount ("
                ) + f"{acct['unknown']} cell(s) have no finished episode to estimate from yet)"
                advice = "re-run the same command with a higher runner.budget_usd to continue"
            else:
                rest = f"about {ledger.usd_text(acct['finishing'])} more at each cell's estimate"
                need = f"{total + acct['finishing']:.4f}".rstrip("0").rstrip(".")
                advice = f"re-run the same command with runner.budget_usd={need} or more to finish"
            print(
                f"Budget reached: {ledger.usd_text(total)} of ${budget_usd:g} spent by the experiment in all "
                f"({ledger.usd_text(acct['spent_before'])} before this run, {ledger.usd_text(acct['spent'])} in it; "
                f"cache hits cost nothing); {left} episodes not started{cut}. Finishing the experiment would cost "
                f"{rest}: {advice}. Finished episodes are kept.",
                file=out,
            )
        else:
            print(
                f"Budget: {ledger.usd_text(total)} of ${budget_usd:g} spent by the experiment in all "
                f"({ledger.usd_text(acct['spent'])} in this run).",
                file=out,
            )
    elif left:
        budget = f" of ${budget_usd:g}" if budget_usd else ""
        print(
            f"Budget reached: ${spent:.4f}{budget} spent; {left} episodes not started. Finished episodes are kept: "
            "re-run the same command with a higher runner.budget_usd to continue.",
            file=out,
        )
    for r in reports:
        for e in r.errors[:5]:
            print(f"  ! {r.cell}: {e}", file=out)
    if tot["infra_error"] or tot["harness_error"]:
        print("Re-run the same command to retry the failed episodes.", file=out)


def apply_budget(cells: list[Any], root: Path) -> None:
    """The experiment's budget (runners/budget.py): runner.budget_usd when given, recorded in
    `<root>/budget.json`; else the one recorded there, applied to this run (a ConfigError when a
    backbone then lacks prices). Said on the console either way."""
    from runners import budget as ledger
    from runners.run import check_budget

    ledger.LAST.clear()  # the account of this run only (a multirun job runs after another in one process)
    if cells[0].runner.executor == "ray":  # refused with a budget (check_budget)
        kept = ledger.recorded_budget(root)
        if kept is not None and cells[0].runner.budget_usd is None:
            print(f"warning: the experiment's recorded budget ${kept:g} is not kept with runner.executor=ray")
        return
    given = cells[0].runner.budget_usd
    budget, where = ledger.record_budget(root, given)
    if budget is None:
        return
    if given is None:
        for c in cells:
            c.runner.budget_usd = budget
        check_budget(cells)
    print(
        f"Budget: ${budget:g} for the whole experiment ({where}); what its stored records spent counts against it."
        + (" A higher runner.budget_usd raises it; delete that file to lift it." if given is None else "")
    )


def _tokens(n: float) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def _table_columns(tdir: Path) -> tuple[dict[str, list[str]], list[str]]:
    """(benchmark -> its table's metrics in column order, the row marks like [paraphrased]) from
    `tables/summary.csv`: the terminal summary shows the columns the full table shows."""
    import csv
    import re

    cols: dict[str, list[str]] = {}
    marks: list[str] = []
    try:
        with open(tdir / "summary.csv", newline="") as f:
            rows = list(csv.reader(f))
    except OSError:
        return cols, marks
    for h in rows[0][2:] if rows else []:
        bench, _, metric = h.partition(":")
        metric = re.sub(r"\(.*\)$", "", metric)
        if metric and "/" not in metric:  # Tok/task sits beside the paper's total: in the full table only
            cols.setdefault(bench, []).append(metric)
    for r in rows[1:]:
        for m in re.findall(r"\[[^\]=]+\]", r[0] if r else ""):
            if m not in marks and m != "[scripted]":
                marks.append(m)
    return cols, marks


def compact_summary(root: Path, long: list[dict[str, Any]], reference: str, width: int | None = None) -> str:
    """The end of a run at the terminal: one line per cell (benchmark, method, the table's headline metrics,
    each with its Δ against the reference), fitted to the terminal's width, then where the full tables are
    (intervals, p-values, depth retention, notes: tables/summary.md, printed whole by `runners.aggregate`)."""
    import shutil
    import textwrap
    from types import SimpleNamespace

    from runners.analysis.tables import reference_for

    if not long:
        return f"No finished cells under {root} yet: no tables."
    width = max(40, width or shutil.get_terminal_size((80, 24)).columns)
    tdir = root / "tables"
    cols, marks = _table_columns(tdir)
    vals: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
    for r in long:
        vals.setdefault((r["benchmark"], r["method"], r["backbone"]), {})[r["metric"]] = r
    keys = list(vals)
    methods = list(dict.fromkeys(m for _, m, _ in keys))
    named: list[Any] = [SimpleNamespace(method=m) for m in methods]  # reference_for reads `.method` only
    ref, _ = reference_for(named, reference)
    several_backbones = len({b for _, _, b in keys}) > 1
    scripted = any(r.get("scripted") in (True, "True") for r in long)

    def item(metric: str, row: dict[str, Any] | None, delta: dict[str, Any] | None) -> str | None:
        if row is None or row.get("value") in (None, ""):
            return None
        v = float(row["value"])
        tok = metric.startswith("Tok")
        text = f"{metric} " + (_tokens(v * 1e6) if tok else f"${v:.4f}" if metric == "USD" else f"{v:.1f}")
        if delta is not None and delta.get("value") not in (None, ""):
            d = float(delta["value"])
            p = delta.get("p_holm")
            star = "*" if p not in (None, "") and float(p) < 0.05 else ""
            text += f"({d:+.0f}%)" if tok or metric == "USD" else f"({d:+.1f}{star})"
        return text

    bw = max((len(b) for b, _, _ in keys), default=0)
    mw = max((len(m + (f" {bb}" if several_backbones else "")) for _, m, bb in keys), default=0)
    lines = textwrap.wrap(
        f"Results: {root.name}{' [scripted]: offline demo, not model results' if scripted else ''}. Rates in %; "
        f"(Δ vs {ref}: pp for rates, * significant after Holm; % for Tok)",
        width,
    )
    benches = list(dict.fromkeys(b for b, _, _ in keys))
    keys.sort(key=lambda k: (benches.index(k[0]), methods.index(k[1]) if k[1] != ref else -1))
    for bench, method, bb in keys:
        ms = cols.get(bench) or [m for m in vals[bench, method, bb] if not m.startswith(("delta_", "tokens_"))][:3]
        d = vals[bench, method, bb]
        items = [x for m in ms if (x := item(m, d.get(m), d.get(f"delta_{m}") if method != ref else None))]
        line = f"{bench:<{bw}} {(method + (f' {bb}' if several_backbones else '')):<{mw}}"
        first = True
        for x in items:  # wrapped under the metrics where the terminal is narrow
            if not first and len(line) + 2 + len(x) > width:
                lines.append(line)
                line = " " * min(bw + mw + 1, width // 3)
            line += "  " + x
            first = False
        lines.append(line)
    if marks:
        lines += textwrap.wrap(f"Marks {', '.join(marks)}: explained below the full table.", width)
    lines.append(f"Full tables (intervals, p-values, depth retention, notes): {tdir}/summary.md")
    lines.append(f"  (also .csv, .tex, metrics.csv); printed whole by: python -m runners.aggregate {root}")
    return "\n".join(lines)


def cache_only_note(reports: list[Any]) -> str | None:
    """When episodes ran but every model call was served from the response cache: the plain
    statement that no endpoint was called (a wrong key or a dead model goes unnoticed)."""
    calls = sum(r.calls for r in reports)
    hits = sum(r.cache_hits for r in reports)
    if not calls or hits < calls or not sum(r.ran for r in reports):
        return None
    return (
        f"Note: every model call of this run ({hits}) was served from the response cache: no endpoint was called, so "
        "neither the key nor the model was checked. runner.fresh=true re-samples every call "
        "(cache reads off, writes on); runner.cache=false turns the cache off."
    )


def describe_os_error(e: OSError, root: Path) -> str:
    """An OS error while writing results as `what happened; Fix: what to do` (exit 3)."""
    import errno

    where = e.filename or root
    if e.errno == errno.ENOSPC or e.errno == errno.EDQUOT:
        return (
            f"the disk is full (writing {where}). Every finished episode up to this point is saved intact. "
            f"Fix: free space on the disk of {root} (or choose another runner.output_dir), then run the same command "
            "again to resume"
        )
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (
            f"cannot write results: {where} is not writable ({e.strerror}). Fix: make it writable, "
            "or choose a writable directory with runner.output_dir=<dir>"
        )
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        return (
            f"cannot write results under {root}: {where} is a file, not a directory ({e.strerror}). Fix: point "
            "runner.output_dir at a directory (or move the file away)"
        )
    return (
        f"cannot write results under {root}: {e}. "
        "Fix: check that runner.output_dir is a writable directory with free space"
    )


def describe_sqlite_error(e: Exception, root: Path) -> str:
    """A results database (transcripts, response cache) failed: the disk-full / read-only fix, or the error itself."""
    import errno
    import shutil

    msg = str(e).lower()
    try:
        nearly_full = shutil.disk_usage(root).free < 1 << 20  # a failed write can surface as another SQLite error
    except OSError:
        nearly_full = False
    if "full" in msg or nearly_full:
        return describe_os_error(OSError(errno.ENOSPC, "No space left on device", None), root)
    if "readonly" in msg or "read-only" in msg:
        return describe_os_error(OSError(errno.EROFS, "Read-only file system", None), root)
    return (
        f"a results database under {root} failed ({type(e).__name__}: {e}). Every finished episode is saved. "
        "Fix: check the disk of runner.output_dir, then run the same command again to resume"
    )


def check_output_dir(root: Path) -> None:
    """Before any work: the results directory can be created and written (a file in its place, a
    read-only disk fail here with the fix, not as a traceback in the middle of a cell)."""
    import os

    for p in (root, *root.parents):
        if p.exists() and not p.is_dir():
            raise OSError(20, "Not a directory", str(p))
        if p.exists():
            break
    root.mkdir(parents=True, exist_ok=True)
    probe = root / f".write-probe.{os.getpid()}"
    try:
        with open(probe, "wb") as f:
            f.write(b"ok")
            f.flush()
            os.fsync(f.fileno())
    finally:
        try:
            probe.unlink(missing_ok=True)
        except OSError:
            pass


def scrub_multirun_files(sweep_dir: Path | None = None) -> None:
    """Hydra writes the sweep's overrides and config to `<sweep dir>/multirun.yaml` (under the
    output dir): cut URL credentials and Authorization values out of it, in place, atomically."""
    if sweep_dir is None:
        try:
            from hydra.core.hydra_config import HydraConfig

            sweep_dir = Path(HydraConfig.get().sweep.dir)
        except Exception:  # not inside a Hydra multirun
            return
    from runners.records.store import atomic_write
    from runners.secrets import redact_secrets

    for f in sweep_dir.rglob("*.yaml") if sweep_dir.is_dir() else ():
        try:
            text = f.read_text()
            clean = redact_secrets(text)
            if clean != text:
                atomic_write(f, clean)
        except OSError:
            pass


def run(cfg: Any) -> int:
    """One Hydra job (a plain run, or one job of a launcher that gives each job its own process);
    SIGINT and SIGTERM in any phase end it with 130 / 143 and a message that says what state the
    run is in (runners/interrupts.py)."""
    return _guarded(_run, cfg)


def _guarded(fn: Callable[..., int], *args: Any, **kwargs: Any) -> int:
    """`fn(*args, **kwargs)` with the project's signal handling (runners/interrupts.py)."""
    import signal

    from runners import interrupts

    previous = interrupts.install()
    try:
        return fn(*args, **kwargs)
    except KeyboardInterrupt:
        return interrupts.report(signal.SIGINT)
    except interrupts.Interrupted as e:
        return interrupts.report(e.signum)
    finally:
        interrupts.restore(previous)  # a caller that runs sweeps in-process (tests, notebooks) gets its handler back


def _run(cfg: Any) -> int:
    from runners import interrupts

    interrupts.set_phase("startup")
    if _multirun():
        scrub_multirun_files()
        if _basic_launcher():
            if not _REFUSED:
                _REFUSED.append(True)
                print(f"error: {refuse_basic_multirun(sys.argv[1:])}", file=sys.stderr)
            return 2
    overrides = _cli_overrides()
    try:
        raw = expand_cells(cfg, overrides)
    except _config_error() as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return run_cells(raw, overrides, per_job=_multirun())


def _config_error() -> type[Exception]:
    """runners.config.ConfigError, imported late (runners.config imports pydantic)."""
    from runners.config import ConfigError

    return ConfigError


_RC: list[int] = []
"""Exit codes of the grid launcher's sweeps (`run_grid`): Hydra does not pass them back to main."""


def _named(overrides: list[str]) -> bool:
    """Whether the command line names the experiment (`experiment=<preset>` or `experiment.name=`)."""
    return any(o.split("=", 1)[0].lstrip("+~") in ("experiment", "experiment.name") for o in overrides if "=" in o)


def grid_name(cells: list[Any]) -> str:
    """The experiment folder of a custom grid: the swept names, e.g.
    `full_context+flowstate__memoryarena_math+memoryarena_phys` (the groups with more than one
    value; all three for a single cell), cut to 80 characters with a hash when longer."""
    import hashlib

    values = {g: list(dict.fromkeys(getattr(c, g).name for c in cells)) for g in GROUPS}
    swept = [g for g in GROUPS if len(values[g]) > 1] or list(GROUPS)
    name = "__".join("+".join(values[g]) for g in swept)
    if len(name) > 80:
        name = name[:70] + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return name


def run_grid(jobs: list[tuple[Any, list[str]]], sweep_dir: str | None = None, cli: list[str] | None = None) -> int:
    """Hydra's `-m` jobs (composed config, the job's overrides) as one sweep: every job's cells in
    one scheduler (hydra_plugins/harness_grid_launcher). Jobs that name the same cell run it once.
    `cli`: the command line's overrides as typed (`method=a,b`), recorded with the sweep."""
    raw: list[dict[str, Any]] = []
    seen: set[str] = set()
    all_overrides: list[str] = []
    try:
        for cfg, overrides in jobs:
            for c in expand_cells(cfg, overrides):
                key = repr(sorted((k, repr(v)) for k, v in c.items() if k != "hydra"))
                if key not in seen:
                    seen.add(key)
                    raw.append(c)
            all_overrides += [o for o in overrides if o not in all_overrides]
    except _config_error() as e:
        print(f"error: {e}", file=sys.stderr)
        _RC.append(2)
        return 2
    cli = all_overrides if cli is None else cli
    grid = any(
        o.split("=", 1)[0].lstrip("+~").startswith("experiment.grid")
        or (o.split("=", 1)[0].lstrip("+~") in GROUPS and _sweep_values(o.split("=", 1)[1]))
        for o in cli
        if "=" in o
    )
    rc = _guarded(run_cells, raw, cli, custom_grid=grid, sweep_dir=sweep_dir)
    _RC.append(rc)
    return rc


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _differing(a: Any, b: Any) -> dict[str, list[Any]]:
    """The keys (dotted) whose values differ between two validated configs of the same cell, with both
    values: a swept key that is not part of the cell's identity (runner.limit, runner.trials, …)."""
    fa, fb = _flat(a.model_dump(by_alias=True)), _flat(b.model_dump(by_alias=True))
    return {k: [fa.get(k), fb.get(k)] for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)}


def refuse_runtime_sweep(clashes: dict[str, list[Any]], overrides: list[str], experiment: str) -> str:
    """Why a `-m` over keys that leave the cells the same is refused before any work, and the commands
    that run every value (one experiment each)."""
    import shlex

    from runners.secrets import redact_secrets

    def show(v: Any) -> str:
        return "null" if v is None else str(v)

    keys = ", ".join(f"{k}={','.join(show(v) for v in vals)}" for k, vals in clashes.items())
    k0, vals0 = next(iter(clashes.items()))
    leaf = k0.rsplit(".", 1)[-1]
    rest = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in (k0, "experiment.name")]
    name = next((o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0].lstrip("+~") == "experiment.name"), None)
    multi = any("=" in o and _sweep_values(o.split("=", 1)[1]) for o in rest)
    examples = "\n".join(
        "  python -m runners.sweep "
        + redact_secrets(
            " ".join(
                shlex.quote(a)
                for a in (["-m"] if multi else [])
                + rest
                + [f"{k0}={show(v)}", f"experiment.name={name or experiment}_{leaf}{show(v)}"]
            )
        )
        for v in vals0
    )
    return (
        f"the sweep over {keys} would run the same cells with each value: "
        f"{'that key does' if len(clashes) == 1 else 'those keys do'} not change a cell's identity (runtime knobs "
        "such as the episode limit and the trials are not in the cell key), so all values but one would be dropped. "
        "Fix: run one command per value, each into its own experiment, e.g.\n"
        f"{examples}\n(a sweep over a group (method=a,b) or a param that changes the cell (benchmark.params.*, "
        "method.params.*) runs every value as its own cell; docs/contracts.md §6)"
    )


def _move_sweep_files(sweep_dir: str | None, root: Path) -> None:
    """Hydra wrote `multirun.yaml` under the experiment name the config had before a custom grid
    got its own: move it into `<root>/.multirun/` and drop the folders it created, if empty."""
    import os

    if not sweep_dir:
        return
    src = Path(sweep_dir)
    dst = root / ".multirun"
    if not src.is_dir() or src.resolve() == dst.resolve():
        return
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.yaml"):
        os.replace(f, dst / f.name)
    for d in (src, src.parent):
        try:
            d.rmdir()  # only if empty: another experiment's folder is never removed
        except OSError:
            break


def run_cells(
    raw: list[dict[str, Any]],
    overrides: list[str],
    per_job: bool = False,
    custom_grid: bool | None = None,
    sweep_dir: str | None = None,
) -> int:
    """Validate the cells (composed plain dicts), run them through one scheduler, report, tabulate.
    A custom grid (`++experiment.grid.*` on the command line, or `-m` over a group) without an
    experiment name gets its own experiment folder (`grid_name`), not the preset's."""
    import os
    from datetime import datetime, timezone

    from runners import interrupts
    from runners.availability import Unavailable
    from runners.config import ConfigError, FatalRunError, validate
    from runners.records import store
    from runners.records.store import StoreError
    from runners.launch import run_all
    from runners.run import TERMINATED, check_budget
    from runners.secrets import redact_secrets

    interrupts.set_phase("startup")
    try:
        cells, seen = [], {}
        clashes: dict[str, list[Any]] = {}
        for c in map(validate, raw):  # an alias (method=raw_trajectory) names the same cell as its method: run it once
            if c.cell_name not in seen:
                seen[c.cell_name] = c
                cells.append(c)
            else:
                for k, vals in _differing(seen[c.cell_name], c).items():
                    clashes.setdefault(k, [])
                    clashes[k] += [v for v in vals if v not in clashes[k]]
        if clashes:  # a sweep over a key that does not change a cell: one of its values would be dropped
            raise ConfigError(refuse_runtime_sweep(clashes, overrides, cells[0].experiment.name))
        if cells[0].runner.plan:  # the bill before launch: no model call, nothing written (runners/plan.py)
            from runners.plan import print_plan

            return print_plan(cells)
        check_budget(cells)
        from runners.procs import processes_for

        processes_for(cells)  # an explicit runner.processes that cannot apply is refused before any work
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if any(c.runner.wandb for c in cells):
        from runners.analysis.wandb_log import WandbUnavailable, require

        try:
            require()  # before any work
        except WandbUnavailable as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if custom_grid is None:
        custom_grid = any(o.split("=", 1)[0].lstrip("+~").startswith("experiment.grid") for o in overrides)
    if custom_grid and not _named(overrides):
        for c in cells:
            c.experiment.name = grid_name(cells)
    order = {g: list(dict.fromkeys(getattr(c, g).name for c in cells)) for g in GROUPS}
    for c in cells:  # the grid as run, in the order given: the tables keep it (runners.analysis.cells._grid_order)
        c.experiment.grid = order
    exp = cells[0].experiment.name
    root = Path(cells[0].runner.output_dir) / exp
    scripted = any(c.scripted for c in cells)
    overrides = [redact_secrets(o) for o in overrides]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.SWEEP.update(id=f"{started}/{os.getpid()}", started_at=started, overrides=overrides)
    noise = ", ".join(
        f"{k}={v}"
        for k, v in (cells[0].experiment.scripted_noise or {}).items()
        if any(c.scripted and c.backbone.scripted.get(k) == v for c in cells)
    )
    print(
        f"Experiment '{exp}': {len(cells)} cell(s) → {root}"
        + (
            "  [SCRIPTED backbone: offline demo, not model results" + (f"; seeded noise {noise}" if noise else "") + "]"
            if scripted
            else ""
        )
    )
    if cells[0].experiment.note:
        print(f"Note: {cells[0].experiment.note}")
    t0 = time.perf_counter()
    counted_before = counted_asks(root, cells)
    try:
        check_output_dir(root)
        from runners.config import adopt_stored_cells

        for adopted in adopt_stored_cells(root, cells):  # a cell stored when its key held the endpoint address
            print(adopted)
        if cells[0].runner.prune == "failed":  # failed tries moved aside before the run (runners/prune.py)
            from runners.prune import prune_failed, report

            report(prune_failed(root))
        apply_budget(cells, root)
        if sweep_dir:
            _move_sweep_files(sweep_dir, root)
            scrub_multirun_files(root / ".multirun")
        fold = None
        if cells[0].runner.executor == "ray":  # every cell a Ray task (runners/ray_exec.py)
            from runners.ray_exec import run_cells

            reports = run_cells(cells, root, cells[0].runner.ray_address)
        else:
            from runners.heap import returned_heap
            from runners.run import TableFold

            fold = TableFold()  # the tables' numbers kept as episodes finish: the end need not read them back
            import gc

            # What is loaded by now (modules, configs, the tasks' index) is kept out of the collector's passes to the
            # end of the process, not only while the episodes run (`few_collections` thaws nothing frozen before
            # it): the collection before the tables (`release`) then walks only what the run made (25-35 ms -> 1 ms
            # a small sweep; tests/runners/test_sweep_overhead.py)
            gc.collect()
            gc.freeze()
            try:
                with returned_heap():  # freed episodes' memory back to the system: RSS flat in episodes
                    reports = asyncio.run(run_all(cells, root, cells[0].runner.display, fold=fold))
            finally:
                interrupts.install()  # closing the event loop reset SIGTERM to the default (die with no message)
            if TERMINATED:  # the cancellation was absorbed on the way out: still a terminated run
                raise asyncio.CancelledError()
    except (FatalRunError, StoreError, ConfigError, Unavailable) as e:
        print(f"error: {redact_secrets(str(e))}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"error: {describe_os_error(e, root)}", file=sys.stderr)
        return 3
    except sqlite3.Error as e:  # the transcript store or cache on a full or read-only disk
        print(f"error: {describe_sqlite_error(e, root)}", file=sys.stderr)
        return 3
    except asyncio.CancelledError:
        if not TERMINATED:
            raise
        raise interrupts.Interrupted(TERMINATED[0]) from None  # reported by `run`, with the state of the run
    interrupts.set_phase("report", reports=reports, root=root)
    print_report(reports, time.perf_counter() - t0, budget_usd=cells[0].runner.budget_usd)
    kept = keep_larger_asks(counted_before, root)
    if kept:
        print(kept)
    from runners.analysis.tables import aggregate_dir

    from runners.records.store import short_process_gc

    interrupts.set_phase("tables")
    from runners.heap import census, release

    census("tables start")  # HARNESS_MEMORY_CENSUS: what the process holds as its tables start
    release(collect=True)  # the run's freed pages (and its cycles) back before the tables read the records
    census("tables start, collected and trimmed", reset_peak=True)  # "tables written": their own VmHWM
    try:
        with short_process_gc():  # no collector pass over the records read for the tables (the run is ending)
            import io

            long = aggregate_dir(  # the whole experiment, not this job's; the full tables go to their files
                root,
                reference=cells[0].runner.reference_method,
                out=io.StringIO(),
                folded=fold.cells() if fold is not None else None,  # this run's cells: not read back
            )
        print("\n" + compact_summary(root, long, cells[0].runner.reference_method))
        census("tables written")
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"error: {describe_os_error(e, root)}", file=sys.stderr)
        return 3
    if cells[0].runner.wandb:
        interrupts.set_phase("wandb")
        from runners.analysis.wandb_log import log_experiment

        ids = log_experiment(
            root, [c.cell_name for c in cells], cells[0].runner.wandb_project, cells[0].runner.reference_method
        )
        print(f"W&B: logged {len(ids) - 1} cell run(s) and the report artifact (runs {', '.join(ids)})")
    from runners.upstream import download_failures

    for note in (download_failures(), cache_only_note(reports)):
        if note:
            print("\n" + note)
    if per_job:
        print(
            f"(multirun job: the tables above cover every cell of {root} so far; "
            f"`python -m runners.aggregate {root} --method <m>` narrows them)"
        )
    return 0 if all(r.infra_error == r.harness_error == r.not_started == 0 for r in reports) else 1


def _stores(root: Path, cells: list[Any]) -> list[Path]:
    from runners.records.store import shard_dirs

    return [d for c in cells for d in (root / c.cell_name, *shard_dirs(root / c.cell_name))]


def counted_asks(root: Path, cells: list[Any]) -> dict[Path, dict[str, Any]]:
    """Before a run: what each existing store of these cells counts in the tables (its manifest's task ids,
    task count and trials)."""
    import json

    from runners.records.store import MANIFEST

    out = {}
    for d in _stores(root, cells):
        try:
            m = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and isinstance(m.get("task_ids"), list):
            out[d] = {"task_ids": m["task_ids"], "n_tasks": m.get("n_tasks"), "trials": int(m.get("trials") or 1)}
    return out


def keep_larger_asks(before: dict[Path, dict[str, Any]], root: Path) -> str | None:
    """After a run that asked for a subset of what a finished store had counted (a smaller runner.limit or
    fewer runner.trials on a finished experiment): the store's manifest keeps counting the larger set, so the
    experiment's tables are not replaced by the subset's. Returns the one line that says so (None: nothing
    kept)."""
    import json

    from runners.records.store import MANIFEST, atomic_write

    kept: list[tuple[int, int, int, int]] = []  # (tasks now, trials now, tasks kept, trials kept)
    for d, old in before.items():
        try:
            m = json.loads((d / MANIFEST).read_text())
        except (OSError, ValueError):
            continue
        ids, trials = m.get("task_ids"), int(m.get("trials") or 1)
        if not isinstance(ids, list) or not set(ids) <= set(old["task_ids"]) or trials > old["trials"]:
            continue
        if len(set(ids)) == len(set(old["task_ids"])) and trials == old["trials"]:
            continue  # the same ask
        kept.append((len(ids), trials, len(old["task_ids"]), old["trials"]))
        m.update(old)
        atomic_write(d / MANIFEST, json.dumps(m, indent=2, sort_keys=True, default=str))
    if not kept:
        return None

    def sizes(pairs: list[tuple[int, int]], form: str) -> str:  # the distinct sizes, in the cells' order
        return ", ".join(dict.fromkeys(form.format(n, t) for n, t in pairs))

    asked = sizes([k[:2] for k in kept], "{} task(s) × {} trial(s)")
    had = sizes([k[2:] for k in kept], "{} × {}")
    return (
        f"Note: this run asked for a subset ({asked}) of {len(kept)} cell(s) that had asked for "
        f"more ({had}): the tables of {root} keep counting the larger set, not the subset. For a table "
        "of the subset alone, run it into its own experiment (experiment.name=<name>)."
    )


def register_resolvers() -> None:
    """Resolvers the default experiment uses so that the same command line is the offline demo
    with the scripted backbone and a real run with a real backbone (conf/experiment/default.yaml).
    Also gives Hydra's config sources the parsing cache (runners/hydra_shortcuts.py): a sweep composes
    its config several times, each from the same files."""
    from omegaconf import OmegaConf

    from runners import hydra_shortcuts

    hydra_shortcuts.install()

    if not OmegaConf.has_resolver("if_scripted"):
        OmegaConf.register_new_resolver("if_scripted", lambda kind, a, b: a if kind == "scripted" else b)


def describe_hydra_error(e: Exception) -> str | None:
    """A Hydra-level mistake on the command line (unknown group option, a key that does not exist,
    override syntax) in the project's `what; Fix: what to do` form; None for other errors."""
    import difflib
    import re

    from hydra.errors import (
        ConfigCompositionException,
        MissingConfigException,
        OverrideParseException,
    )

    from runners.config import (
        ROLE_NAMES,
        BackboneCfg,
        ExperimentCfg,
        RunnerCfg,
        available,
    )

    text = str(e).strip() or type(e).__name__  # never empty: its first line is quoted below
    if isinstance(e, OverrideParseException):
        return (
            f"cannot parse a command-line override: {text.splitlines()[0]}. Fix: write overrides as key=value or "
            "group=name (a sweep: group=a,b with -m); quote lists and shell characters, e.g. "
            "'++experiment.grid.method=[full_context,flowstate]' (Hydra's override grammar: "
            "https://hydra.cc/docs/advanced/override_grammar/basic)"
        )
    if isinstance(e, MissingConfigException):
        m = re.search(r"Could not (?:find|load) '([\w/]+)/([^'/]+)'", text)
        if m:
            group, name = m.groups()
            if group in ("method", "backbone", "benchmark", "experiment", "runner"):
                close = difflib.get_close_matches(name, available(group), n=3)
                return (
                    f"unknown {group} '{name}'"
                    + (f" (did you mean {', '.join(close)}?)" if close else "")
                    + f"; available: {', '.join(available(group))}. "
                    f"Fix: pick one of them, or add conf/{group}/{name}.yaml"
                )
            return (
                f"unknown option '{name}' of '{group}'. "
                "Fix: check the spelling (python -m runners.sweep --help lists the groups)"
            )
        return (
            f"{text.splitlines()[0]}. "
            "Fix: check the group names and options on the command line (python -m runners.sweep --help)"
        )
    if isinstance(e, ConfigCompositionException):
        m = re.search(r"^(?:Ambiguous value for argument|Sweep parameters) '([^']+)'", text)
        if m:  # a sweep (a,b / choice / range) without -m
            arg = m.group(1)
            key, _, value = arg.partition("=")
            group = key.lstrip("+~")
            values = _sweep_values(value)
            if group in GROUPS:
                alt = f", or name the grid: '++experiment.grid.{group}=[{','.join(values or [value])}]'"
            else:
                alt = f" (one value that is a list or a string: {key}=[…] or {key}='\"{value}\"')"
            return (
                f"'{arg}' gives several values, which is a sweep, but -m is missing. "
                f"Fix: add -m (python -m runners.sweep -m {arg} …){alt}"
            )
        m = re.search(r"Could not override '([^']+)'", text)
        cause = e.__cause__
        if m and (cause is None or "not in struct" in str(cause) or "Key" in str(cause)):
            key = m.group(1)
            parent, _, leaf = key.rpartition(".")
            fields = {
                "runner": list(RunnerCfg.model_fields),
                "backbone": list(BackboneCfg.model_fields),
                "experiment": list(ExperimentCfg.model_fields),
                "roles": list(ROLE_NAMES),
                "": ["method", "backbone", "benchmark", "runner", "experiment", "roles"],
            }.get(parent, [])
            if leaf in fields:  # a key of the schema that this config (its preset) does not set
                return (
                    f"'{key}' is a configuration key, but the composed config (this experiment preset) does not set "
                    f"it, so it cannot be overridden. Fix: add it with ++{key}=<value>"
                )
            close = difflib.get_close_matches(leaf, fields, n=1)
            hint = f" (did you mean {parent + '.' if parent else ''}{close[0]}?)" if close else ""
            return (
                f"unknown configuration key '{key}'{hint}. Fix: check its spelling (python -m runners.sweep --cfg job "
                f"prints every key), or add a new key on purpose with +{key}=<value>"
            )
        return f"{text.splitlines()[0]}. Fix: check that override" + (f" ({cause})" if cause else "")
    return None


def check_launcher(argv: list[str]) -> int:
    """A launcher named on the command line whose plugin is missing: the error with its fix
    (exit 2) before Hydra composes anything (Hydra would print its raw search path); else 0."""
    from runners.availability import launcher_missing

    missing = launcher_missing(argv)
    for m in missing:
        print(f"error: {m.what}. Fix: {m.fix}", file=sys.stderr)
    return 2 if missing else 0


IGNORED_HYDRA_KEYS = ("hydra.run.dir",)
"""Hydra's output folder of a plain run: the harness writes nothing there (results go to
<runner.output_dir>/<experiment>). hydra.sweep.dir stays settable: it holds `multirun.yaml` and a Slurm
launcher's logs."""


def check_hydra_dirs(argv: list[str]) -> int:
    """`hydra.run.dir=…` would be accepted and silently ignored: refused (exit 2) with the key that
    chooses where results go."""
    given = [a for a in argv if a.split("=", 1)[0].lstrip("+~") in IGNORED_HYDRA_KEYS]
    for a in given:
        key, _, value = a.partition("=")
        print(
            f"error: {key.lstrip('+~')} is Hydra's own output folder, which this harness does not use: results go to "
            f"<runner.output_dir>/<experiment name>. Fix: runner.output_dir={value or '<dir>'} (and "
            "experiment.name=<name> for the folder inside it)",
            file=sys.stderr,
        )
    return 2 if given else 0


def main() -> None:
    import os
    import signal

    from runners import interrupts

    interrupts.install()  # SIGTERM while Hydra composes the config: the same orderly exit as Ctrl-C
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises composition errors (reworded below) instead of printing them
    try:
        if check_launcher(sys.argv[1:]) or check_hydra_dirs(sys.argv[1:]):  # inside: Ctrl-C while they import
            sys.exit(2)  # (the launchers' plugins, pydantic) is an interrupted start-up too
        import hydra

        from runners import hydra_shortcuts

        register_resolvers()
        hydra_shortcuts.skip_mode_probe(sys.argv[1:], Path(CONF_PATH))

        rc = {"code": 0}

        @hydra.main(version_base="1.3", config_path=CONF_PATH, config_name="config")
        def _app(cfg: Any) -> None:
            rc["code"] = run(cfg)

        _app()
        launched = (
            getattr(sys.modules.get("runners.sweep"), "_RC", None) or _RC
        )  # the launcher's module (this file may run as __main__)
        if launched:  # `-m` with the grid launcher: the sweep's exit code
            rc["code"] = max(launched)
    except KeyboardInterrupt:  # Ctrl-C while starting up or composing the config: nothing was run yet
        sys.exit(interrupts.report(signal.SIGINT))
    except interrupts.Interrupted as e:
        sys.exit(interrupts.report(e.signum))
    except Exception as e:
        from hydra.errors import HydraException

        signum = interrupts.signal_inside(e)
        if signum is not None:  # Ctrl-C (or SIGTERM) while Hydra composed the config: it wrapped the interrupt
            sys.exit(interrupts.report(signum))
        why = describe_hydra_error(e) if isinstance(e, HydraException) else None
        if why is None:
            raise
        print(f"error: {why}", file=sys.stderr)
        sys.exit(2)  # a configuration error, like every other (runners.config.ConfigError)
    sys.exit(rc["code"])


if __name__ == "__main__":
    main()
