"""Everything a sweep needs and cannot find, found before any work and reported all at once.

Before a sweep loads a model or runs an episode, every cell is surveyed (`runners.prepare.survey`):
its backbones (`backbone_missing`: the placeholder model `CHANGE-ME`, a `base_url` that is not an
http(s) URL, an unset API key variable), its method (`Method.missing(params)`: an optional extra)
and its benchmark (`Benchmark.missing()`: an extra, a database; then `load_tasks`: the data). One
message lists every missing piece with its fix and the cells it stops (`Unavailable`, the
project's `error: … Fix: …` form); with `runner.skip_unavailable=true` the cells that can run run,
and the skipped ones are listed on the console, in the tables' footnote and in
`<experiment>/skipped.json` (`SKIPPED`, format in `write_skipped`). A launcher given on the command
line (`hydra/launcher=slurm`) is checked before Hydra composes anything (`launcher_missing`).
docs/runner.md describes it for users; docs/contracts.md §8 the two `missing` hooks.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from runners.api import Missing, missing_modules

SKIPPED = "skipped.json"
PLACEHOLDER_MODEL = "CHANGE-ME"
SLURM_FIX = (
    "pip install -e '.[slurm]' (hydra-submitit-launcher); or run without hydra/launcher (one process, one scheduler)"
)
_SUBMITIT_LAUNCHERS = ("slurm", "slurm_local", "submitit_slurm", "submitit_local")


class Unavailable(RuntimeError):
    """Some cells cannot run here; the message lists every missing piece with its fix."""

    def __init__(self, missing: Mapping[str, list[Missing]], labels: Mapping[str, str], n_cells: int) -> None:
        self.missing, self.labels, self.n_cells = dict(missing), dict(labels), n_cells
        super().__init__(describe(self.missing, self.labels, n_cells))


def backbone_missing(
    cfg: Any, env: Mapping[str, str] | None = None, roles: list[str] | str | None = None
) -> list[Missing]:
    """What an endpoint backbone (a `BackboneCfg`) lacks before its first call: a real model name,
    an http(s) endpoint, its API key variable. A managed backbone: its server's package or program
    and its model file (`runners.backbones.managed.server_missing`). Scripted ones need nothing.
    `roles`: the roles it serves other than the agent (the fix then offers the agent's backbone)."""
    if cfg.kind == "managed":  # the server's package or program and its model file (runners/backbones/managed.py)
        from runners.backbones.managed import server_missing

        return server_missing(cfg)
    if cfg.kind != "openai":
        return []
    env = os.environ if env is None else env
    from runners.secrets import redact_url

    out: list[Missing] = []
    roles = [roles] if isinstance(roles, str) else list(roles or [])
    served = (
        (
            f" (it serves role {', '.join(roles)}; or run {'it' if len(roles) == 1 else 'them'} "
            "on the agent's backbone: " + " ".join(f"roles.{r}=agent" for r in roles) + ")"
        )
        if roles
        else ""
    )
    if PLACEHOLDER_MODEL in str(cfg.model):
        out.append(
            Missing(
                what=f"backbone '{cfg.name}' still has the placeholder model name '{cfg.model}'",
                fix="set backbone.model=<the model name the endpoint serves> (its GET <base_url>/models lists them)"
                + served,
            )
        )
    from_env = bool(cfg.base_url_env and env.get(cfg.base_url_env))
    url = env[cfg.base_url_env] if from_env else cfg.base_url
    if not url:
        hint = f" or export {cfg.base_url_env}=<URL>" if cfg.base_url_env else ""
        out.append(
            Missing(
                what=f"backbone '{cfg.name}' has no endpoint", fix=f"set backbone.base_url=<http(s) URL>{hint}" + served
            )
        )
    else:
        parts = urllib.parse.urlsplit(str(url))
        try:
            host = parts.hostname
            parts.port  # noqa: B018 - a bad port raises ValueError
        except ValueError:
            host = None
        if parts.scheme not in ("http", "https") or not host:
            where = f"${cfg.base_url_env}" if from_env else "base_url"
            out.append(
                Missing(
                    what=f"backbone '{cfg.name}': {where} {redact_url(str(url))!r} is not an http(s) URL",
                    fix=(
                        "give the endpoint's URL with its scheme, e.g. http://127.0.0.1:8000/v1 or "
                        "https://api.openai.com/v1 "
                        f"({'export ' + cfg.base_url_env + '=…' if from_env else 'backbone.base_url=…'})"
                    )
                    + served,
                )
            )
    if cfg.api_key_env and not env.get(cfg.api_key_env):
        out.append(
            Missing(
                what=f"backbone '{cfg.name}': the API key variable {cfg.api_key_env} is not set",
                fix=f"export {cfg.api_key_env}=<your key> (or set api_key_env: null for an endpoint without keys, "
                "e.g. a local vLLM)" + served,
            )
        )
    return out


def launcher_missing(argv: Iterable[str]) -> list[Missing]:
    """A Hydra launcher named on the command line whose plugin is not installed (Hydra itself
    would only print its raw search path)."""
    for arg in argv:
        key, _, value = arg.lstrip("+~").partition("=")
        if key == "hydra/launcher" and value in _SUBMITIT_LAUNCHERS:
            return missing_modules(
                ("hydra_plugins.hydra_submitit_launcher",),
                f"hydra/launcher={value} needs Hydra's submitit launcher plugin (the `slurm` extra)",
                SLURM_FIX,
            )
    return []


def cell_label(cfg: Any) -> str:
    """method/backbone/benchmark of a cell (its config names, readable in a list)."""
    return f"{cfg.method.name}/{cfg.backbone.name}/{cfg.benchmark.name}"


def _dedupe(items: Iterable[Missing]) -> list[Missing]:
    seen, out = set(), []
    for m in items:
        if str(m) not in seen:
            seen.add(str(m))
            out.append(m)
    return out


def describe(
    missing: Mapping[str, list[Missing]], labels: Mapping[str, str], n_cells: int, skipping: bool = False
) -> str:
    """One message: each distinct missing piece once, with its fix and the cells it stops."""
    stopped = [c for c, ms in missing.items() if ms]
    by: dict[str, tuple[Missing, list[str]]] = {}
    for cell in stopped:
        for m in missing[cell]:
            by.setdefault(str(m), (m, []))[1].append(labels.get(cell, cell))
    lines = []
    for m, cells in by.values():
        shown = ", ".join(cells[:6]) + (f", … ({len(cells)} cells)" if len(cells) > 6 else "")
        lines.append(f"  - {m.what}\n      Fix: {m.fix or 'as the message says'}\n      cells: {shown}")
    runnable = n_cells - len(stopped)
    head = (
        f"{len(stopped)} of {n_cells} cell(s) cannot run here"
        + (": skipped (runner.skip_unavailable=true)" if skipping else "; nothing was run")
        + ". Missing:\n"
    )
    if skipping:
        return head + "\n".join(lines)
    tail = "\nFix: provide each missing piece (its Fix above), then run the same command again" + (
        f"; or add runner.skip_unavailable=true to run the {runnable} cell(s) that can run now (the skipped ones are "
        "listed in the tables and in <experiment>/skipped.json)"
        if runnable
        else ""
    )
    return head + "\n".join(lines) + tail


def write_skipped(
    root: Path, skipped: Mapping[str, list[Missing]], cfgs: Mapping[str, Any], ran: Iterable[str]
) -> Path | None:
    """Record the cells this run skipped in `<root>/skipped.json` and drop the ones it ran:

        {"format": 1, "cells": [{"cell": <cell directory name>, "method": .., "backbone": ..,
          "benchmark": .., "missing": [{"what": .., "fix": ..}], "skipped_at": <UTC ISO time>}, ...]}

    Entries of other cells (another job of the same experiment) are kept; the file is removed
    when no entry is left. Returns its path, or None when there is none."""
    from runners.records.store import atomic_write

    path = Path(root) / SKIPPED
    entries = {e["cell"]: e for e in read_skipped(root)}
    for cell in ran:
        entries.pop(cell, None)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for cell, ms in skipped.items():
        c = cfgs[cell]
        entries[cell] = {
            "cell": cell,
            "method": c.method.name,
            "backbone": c.backbone.name,
            "benchmark": c.benchmark.name,
            "missing": [m.model_dump() for m in ms],
            "skipped_at": now,
        }
    if not entries:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(
        path, json.dumps({"format": 1, "cells": sorted(entries.values(), key=lambda e: e["cell"])}, indent=1) + "\n"
    )
    return path


def read_skipped(root: Path) -> list[dict[str, Any]]:
    """The entries of `<root>/skipped.json` ([] when absent or unreadable)."""
    try:
        data = json.loads((Path(root) / SKIPPED).read_text())
        return [e for e in data.get("cells", []) if isinstance(e, dict) and "cell" in e]
    except (OSError, ValueError, AttributeError):
        return []
