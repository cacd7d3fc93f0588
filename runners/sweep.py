"""`python -m runners.sweep [group=name ...] [++experiment.grid.<group>=[a,b] ...] [experiment=<preset>]`

Composes the Hydra config, expands the experiment grid into cells (any group given on the
command line pins that axis), validates every cell before any work, runs them through one
scheduler, prints a completeness report and the paper-style table. Re-running resumes: finished
(task, trial) pairs are skipped, infra errors retried. The grid is the one way to run several
cells in one process; Hydra's `-m` is accepted only with a launcher that starts each job in its
own process (hydra/launcher=slurm or slurm_local), and refused with the grid command otherwise
(docs/contracts.md §6)."""
from __future__ import annotations

import asyncio
import itertools
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

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
    inner = value[len("choice("):-1] if value.startswith("choice(") and value.endswith(")") else value
    if value.startswith(("[", "{", "'", '"')) or "," not in inner:
        return None
    return [v.strip() for v in inner.split(",")]


def as_grid(argv: list[str]) -> tuple[list[str], list[str]]:
    """A `-m` command line as one sweep: group sweeps (`method=a,b`) become experiment-grid axes
    (`++experiment.grid.method=[a,b]`), other arguments stay; a swept key that is not a grid axis
    is shown as `key=<one of a,b>` and returned apart (one command per value, or a launcher)."""
    out, other = [], []
    for arg in argv:
        if arg in ("-m", "--multirun"):
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
    msg = ("`-m` with Hydra's basic launcher would run each job as a separate sweep, one after another. Several cells in "
           "one process are the experiment grid, run by one scheduler (cells overlap, one in-flight bound per endpoint, one "
           "report):\n  python -m runners.sweep " + redact_secrets(" ".join(shlex.quote(a) for a in args)))
    if other:
        msg += (f"\n{', '.join(other)} {'is' if len(other) == 1 else 'are'} not a grid axis (method, backbone, benchmark): run "
                "one command per value into the same experiment (its tables cover every cell)")
    return msg + ("\n`-m` is for launchers that start each job in its own process: hydra/launcher=slurm, or slurm_local "
                  "(docs/contracts.md §6)")


def expand_cells(cfg, overrides: list[str] | None = None) -> list[dict[str, Any]]:
    """Composed config → plain dicts, one per cell of the experiment grid. `overrides` are the
    command-line overrides (default: Hydra's, inside a running app)."""
    from hydra import compose
    from omegaconf import OmegaConf

    overrides = _cli_overrides() if overrides is None else list(overrides)
    pinned = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    grid = dict(OmegaConf.to_container(cfg.experiment.get("grid") or {}, resolve=True))
    axes = [(g, names) for g, names in grid.items() if g in GROUPS and g not in pinned]
    if not axes:
        return [OmegaConf.to_container(cfg, resolve=True)]
    cells = []
    for combo in itertools.product(*(names for _, names in axes)):
        extra = [f"{g}={n}" for (g, _), n in zip(axes, combo)]
        c = compose(config_name="config", overrides=overrides + extra)
        cells.append(OmegaConf.to_container(c, resolve=True))
    return cells


def print_report(reports, wall: float, out=None, budget_usd: float | None = None) -> None:
    out = out or sys.stdout
    tot = {k: sum(getattr(r, k) for r in reports) for k in ("total", "skipped", "ok", "infra_error", "harness_error", "calls", "cache_hits")}
    print(f"\nCompleteness ({wall:.1f}s): {tot['ok'] + tot['skipped']}/{tot['total']} episodes done "
          f"({tot['skipped']} from earlier runs, {tot['ok']} now), {tot['infra_error']} infra errors, "
          f"{tot['harness_error']} harness errors.", file=out)
    fresh = tot["calls"] - tot["cache_hits"]
    if tot["ok"] + tot["infra_error"] + tot["harness_error"] == 0:
        print("Nothing to run: every episode was already finished; 0 model calls made.", file=out)
    else:
        print(f"Model calls: {fresh} made, {tot['cache_hits']} served from the response cache.", file=out)
    spent = sum(r.usd for r in reports)
    if spent:
        print(f"Spent ${spent:.4f} in this run (list prices; cache hits cost nothing).", file=out)
    left = sum(r.not_started for r in reports)
    if left:
        budget = f" of ${budget_usd:g}" if budget_usd else ""
        print(f"Budget reached: ${spent:.4f}{budget} spent; {left} episodes not started. Finished episodes are kept: "
              "re-run the same command with a higher runner.budget_usd to continue.", file=out)
    for r in reports:
        for e in r.errors[:5]:
            print(f"  ! {r.cell}: {e}", file=out)
    if tot["infra_error"] or tot["harness_error"]:
        print("Re-run the same command to retry the failed episodes.", file=out)


def describe_os_error(e: OSError, root: Path) -> str:
    """An OS error while writing results as `what happened; Fix: what to do` (exit 3)."""
    import errno

    where = e.filename or root
    if e.errno == errno.ENOSPC or e.errno == errno.EDQUOT:
        return (f"the disk is full (writing {where}). Every finished episode up to this point is saved intact. "
                f"Fix: free space on the disk of {root} (or choose another runner.output_dir), then run the same command "
                "again to resume")
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return (f"cannot write results: {where} is not writable ({e.strerror}). Fix: make it writable, or choose a writable "
                "directory with runner.output_dir=<dir>")
    if e.errno in (errno.ENOTDIR, errno.EEXIST):
        return (f"cannot write results under {root}: {where} is a file, not a directory ({e.strerror}). Fix: point "
                "runner.output_dir at a directory (or move the file away)")
    return f"cannot write results under {root}: {e}. Fix: check that runner.output_dir is a writable directory with free space"


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
    return (f"a results database under {root} failed ({type(e).__name__}: {e}). Every finished episode is saved. Fix: check "
            "the disk of runner.output_dir, then run the same command again to resume")


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


def scrub_multirun_files(out=None) -> None:
    """Hydra writes the sweep's overrides and config to `<sweep dir>/multirun.yaml` (under the
    output dir): cut URL credentials and Authorization values out of it, in place, atomically."""
    try:
        from hydra.core.hydra_config import HydraConfig

        sweep_dir = Path(HydraConfig.get().sweep.dir)
    except Exception:  # not inside a Hydra multirun
        return
    from runners.secrets import redact_secrets
    from runners.records.store import atomic_write

    for f in sweep_dir.rglob("*.yaml") if sweep_dir.is_dir() else ():
        try:
            text = f.read_text()
            clean = redact_secrets(text)
            if clean != text:
                atomic_write(f, clean)
        except OSError:
            pass


def run(cfg) -> int:
    import os
    from datetime import datetime, timezone

    from runners.records import store
    from runners.secrets import redact_secrets
    from runners.config import ConfigError, validate
    from runners.availability import Unavailable
    from runners.run import TERMINATED, FatalRunError, check_budget, run_all
    from runners.records.store import StoreError

    if _multirun():
        scrub_multirun_files()
        if _basic_launcher():
            if not _REFUSED:
                _REFUSED.append(True)
                print(f"error: {refuse_basic_multirun(sys.argv[1:])}", file=sys.stderr)
            return 2
    try:
        cells = [validate(c) for c in expand_cells(cfg)]
        if cells[0].runner.plan:  # the bill before launch: no model call, nothing written (runners/plan.py)
            from runners.plan import print_plan

            return print_plan(cells)
        check_budget(cells)
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
    exp = cells[0].experiment.name
    root = Path(cells[0].runner.output_dir) / exp
    scripted = any(c.scripted for c in cells)
    try:
        overrides = [redact_secrets(o) for o in _cli_overrides()]
    except Exception:  # not inside a Hydra app
        overrides = []
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.SWEEP.update(id=f"{started}/{os.getpid()}", started_at=started, overrides=overrides)
    print(f"Experiment '{exp}': {len(cells)} cell(s) → {root}" + ("  [SCRIPTED backbone: offline demo, not model results]" if scripted else ""))
    t0 = time.perf_counter()
    try:
        check_output_dir(root)
        if cells[0].runner.executor == "ray":  # every cell a Ray task (runners/ray_exec.py)
            from runners.ray_exec import run_cells

            reports = run_cells(cells, root, cells[0].runner.ray_address)
        else:
            reports = asyncio.run(run_all(cells, root, cells[0].runner.display))
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
    except KeyboardInterrupt:
        print("\ninterrupted: finished episodes are saved; run the same command again to resume.", file=sys.stderr)
        return 130
    except asyncio.CancelledError:
        if not TERMINATED:
            raise
        print("\nterminated (SIGTERM): finished episodes are saved; run the same command again to resume.", file=sys.stderr)
        return 128 + TERMINATED[0]
    print_report(reports, time.perf_counter() - t0, budget_usd=cells[0].runner.budget_usd)
    from runners.analysis.tables import aggregate_dir

    try:
        aggregate_dir(root, reference=cells[0].runner.reference_method)  # the whole experiment, not only this job's cells
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"error: {describe_os_error(e, root)}", file=sys.stderr)
        return 3
    if cells[0].runner.wandb:
        from runners.analysis.wandb_log import log_experiment

        ids = log_experiment(root, [c.cell_name for c in cells], cells[0].runner.wandb_project, cells[0].runner.reference_method)
        print(f"W&B: logged {len(ids) - 1} cell run(s) and the report artifact (runs {', '.join(ids)})")
    if _multirun():
        print(f"(multirun job: the tables above cover every cell of {root} so far; "
              f"`python -m runners.aggregate {root} --method <m>` narrows them)")
    return 0 if all(r.infra_error == r.harness_error == r.not_started == 0 for r in reports) else 1


def register_resolvers() -> None:
    """Resolvers the default experiment uses so that the same command line is the offline demo
    with the scripted backbone and a real run with a real backbone (conf/experiment/default.yaml)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("if_scripted"):
        OmegaConf.register_new_resolver("if_scripted", lambda kind, a, b: a if kind == "scripted" else b)


def check_launcher(argv: list[str]) -> int:
    """A launcher named on the command line whose plugin is missing: the error with its fix
    (exit 2) before Hydra composes anything (Hydra would print its raw search path); else 0."""
    from runners.availability import launcher_missing

    missing = launcher_missing(argv)
    for m in missing:
        print(f"error: {m.what}. Fix: {m.fix}", file=sys.stderr)
    return 2 if missing else 0


def main() -> None:
    if check_launcher(sys.argv[1:]):
        sys.exit(2)
    try:
        import hydra

        register_resolvers()

        rc = {"code": 0}

        @hydra.main(version_base="1.3", config_path=CONF_PATH, config_name="config")
        def _app(cfg) -> None:
            rc["code"] = run(cfg)

        _app()
    except KeyboardInterrupt:  # Ctrl-C while starting up or composing the config: nothing was run yet
        print("\ninterrupted before any episode ran; run the same command again.", file=sys.stderr)
        sys.exit(130)
    sys.exit(rc["code"])


if __name__ == "__main__":
    main()
