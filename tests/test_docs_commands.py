"""Every command the README and docs/*.md show must work (docs/testing.md, "Commands in the docs are
tested").

- Each `python -m <module> …` line of a shell block (```bash, ```sh, ```console or a bare ```) names
  a module that exists and can be run with -m, and every `--flag` it uses appears in the source of
  that module's package; a `python -m runners.sweep` line without placeholders is composed with
  Hydra and every cell of its grid validated, as the sweep does before any work (nothing runs).
- The blocks marked ```bash runnable are run, line by line, with the project's Python in a
  temporary folder per page: they are the offline, quick ones (scripted backbone, tiny limits);
  then the page's ```python runnable blocks, in the same folder.
- Every relative link of those pages points at a file of the repository.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
PLACEHOLDER = re.compile(r"<[^>]*>|\.\.\.|…|\bDIR\b|\bKEYS\b")
# Hydra's own command-line flags (runners.sweep is a Hydra app), with whether they take a value
HYDRA_FLAGS = {
    "--help": False,
    "-h": False,
    "--hydra-help": False,
    "--cfg": True,
    "-c": True,
    "--resolve": False,
    "--package": True,
    "-p": True,
    "--info": True,
    "-i": True,
    "--multirun": False,
    "-m": False,
    "--run": False,
    "-r": False,
    "--config-path": True,
    "-cp": True,
    "--config-name": True,
    "-cn": True,
    "--config-dir": True,
    "-cd": True,
    "--shell-completion": False,
    "-sc": True,
}


@dataclass
class Command:
    page: Path
    line: int
    text: str
    runnable: bool
    python: bool = False  # a ```python runnable block (else one shell line)

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}: {self.text}"


def blocks(page: Path):
    text = page.read_text()
    for m in FENCE.finditer(text):
        info = m.group(1).strip().split()
        lang = info[0] if info else ""
        if lang in SHELL:
            yield text[: m.start(2)].count("\n") + 1, m.group(2), "runnable" in info[1:]


def commands(page: Path) -> list[Command]:
    out = []
    for first, body, runnable in blocks(page):
        pending, start = "", None
        for k, raw in enumerate(body.splitlines()):
            if start is None:
                start = first + k
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            line, pending = (pending + raw).strip(), ""
            if line and not line.startswith("#"):
                out.append(Command(page, start, line, runnable))
            start = None
    return out


def python_m(cmd: Command) -> tuple[str, list[str]] | None:
    """(module, arguments) of a `[VAR=x ...] [path/]python -m module args` line; None otherwise."""
    if not re.match(r"(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?python3? -m ", cmd.text):
        return None
    try:
        tokens = shlex.split(cmd.text, comments=True)
    except ValueError as e:
        raise AssertionError(f"{cmd}: not a valid shell line ({e})") from None
    for i, t in enumerate(tokens[:-2]):
        if re.fullmatch(r"(?:\S*/)?python3?", t) and tokens[i + 1] == "-m":
            return tokens[i + 2], tokens[i + 3 :]
    return None


ALL = [c for p in PAGES for c in commands(p)]
STATIC = [c for c in ALL if python_m(c)]


def test_the_pages_show_commands():
    assert len(STATIC) >= 30, len(STATIC)
    assert any(c.runnable for c in ALL) and any(c.page.name == "README.md" and c.runnable for c in ALL)


@pytest.mark.parametrize("cmd", STATIC, ids=str)
def test_module_exists_and_flags_are_its_own(cmd):
    module, args = python_m(cmd)
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"{cmd}: no module {module}"
    if spec.submodule_search_locations is not None:  # a package: -m runs its __main__
        assert importlib.util.find_spec(module + ".__main__"), f"{cmd}: package {module} has no __main__"
    top = REPO / module.split(".")[0]
    if not top.is_dir():
        return  # a library's module (pytest, pip): its flags are its own business
    source = package_source(top)
    for a in args:
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            if module == "runners.sweep":
                assert flag in HYDRA_FLAGS, f"{cmd}: {flag} is not a flag of the Hydra app"
            else:
                assert f'"{flag}"' in source or f"'{flag}'" in source, f"{cmd}: {flag} is not a flag {module} declares"


@functools.lru_cache(maxsize=None)
def package_source(top: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in top.rglob("*.py") if ".venv" not in p.parts)


def sweep_overrides(args: list[str]) -> list[str] | None:
    """The Hydra overrides of a sweep line that can be composed here; None when it has placeholders
    or needs a launcher (`-m`, hydra/…)."""
    if PLACEHOLDER.search(" ".join(args)) or any(a in ("-m", "--multirun") or "hydra" in a for a in args):
        return None
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = HYDRA_FLAGS.get(a, False)
        else:
            out.append(a)
    return out


SWEEPS = [c for c in STATIC if python_m(c)[0] == "runners.sweep" and sweep_overrides(python_m(c)[1]) is not None]


def cells_of(compose, overrides: list[str]) -> list[dict]:
    """The cells the sweep would validate for these overrides; of a grid larger than 6 cells its first
    and last cell only (tests/runners/test_presets.py validates every preset cell)."""
    from omegaconf import OmegaConf

    from runners.sweep import GROUPS, expand_cells

    cfg = compose(config_name="config", overrides=overrides)
    pinned = {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}
    grid = OmegaConf.to_container(cfg.experiment.get("grid") or {}, resolve=True)
    axes = [(g, names) for g, names in grid.items() if g in GROUPS and g not in pinned]
    if len(list(itertools.product(*(n for _, n in axes)))) <= 6:
        return expand_cells(cfg, overrides)
    out = []
    for end in (0, -1):
        pins = overrides + [f"{g}={names[end]}" for g, names in axes]
        out += expand_cells(compose(config_name="config", overrides=pins), pins)
    return out


def test_sweep_lines_compose_and_validate():
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from runners.config import validate
    from runners.sweep import CONF_PATH, register_resolvers

    assert len(SWEEPS) >= 8, [str(c) for c in SWEEPS]
    register_resolvers()
    GlobalHydra.instance().clear()
    failures, seen = [], set()
    with initialize_config_dir(config_dir=CONF_PATH, version_base="1.3"):
        for cmd in SWEEPS:
            overrides = sweep_overrides(python_m(cmd)[1])
            if tuple(overrides) in seen:
                continue
            seen.add(tuple(overrides))
            try:
                cells = [validate(c) for c in cells_of(compose, overrides)]
                assert cells
            except Exception as e:  # the project's ConfigError, Hydra's override and config errors
                failures.append(f"{cmd}\n    {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)


RUNNABLE: dict[Path, list[Command]] = {}
for c in ALL:
    if c.runnable:
        RUNNABLE.setdefault(c.page, []).append(c)
for _page in PAGES:  # ```python runnable blocks run after the page's shell lines, in the same folder
    _text = _page.read_text()
    for _m in FENCE.finditer(_text):
        if _m.group(1).split()[:2] == ["python", "runnable"]:
            RUNNABLE.setdefault(_page, []).append(
                Command(_page, _text[: _m.start(2)].count("\n") + 1, _m.group(2), True, python=True)
            )


@pytest.mark.parametrize("page", sorted(RUNNABLE), ids=lambda p: str(p.relative_to(REPO)))
def test_runnable_blocks_run(page, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the venv's python, as `python`
    (bin_dir / "python").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
        "HARNESS_UPSTREAM_OFFLINE": "1",
    }
    for cmd in RUNNABLE[page]:
        assert not PLACEHOLDER.search(cmd.text), f"{cmd}: a runnable line has a placeholder"
        argv = [sys.executable, "-c", cmd.text] if cmd.python else ["bash", "-c", cmd.text]
        p = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
        assert p.returncode == 0, f"{cmd}\nexit {p.returncode}\n{p.stdout[-1500:]}\n{p.stderr[-1500:]}"


LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def test_relative_links_point_at_files():
    broken = []
    for page in PAGES:
        for m in LINK.finditer(page.read_text()):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert not broken, broken
