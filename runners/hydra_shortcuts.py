"""Two shortcuts through Hydra's start, each giving what Hydra gives on its own.

Hydra composes the whole config from its files every time it is asked: twice at a sweep's start
(`hydra.main` composes once only to read `hydra.mode`, then again to run), then once per cell of
the experiment's grid (`runners.sweep.expand_cells`), and once per job of a `-m` multirun. Each
composition parses every YAML file on the way again (~18 files, PyYAML's pure-Python loader:
about a fifth of a composition's ~100 ms; scripts/perf/README.md, "The default suite and a sweep's
start on a slower machine").

- `install()` replaces `OmegaConf.load`, which Hydra's config sources (files and package resources)
  call for each file, by `load`, which keeps each parsed text: a text seen before is not parsed
  again, only made into a config by `OmegaConf.create`, as `OmegaConf.load` does after parsing
  (every caller gets a config of its own, built afresh). The cache is keyed by the file's whole
  text, so an edited file is parsed afresh (nothing is keyed by path or time), and a text that
  fails to parse is parsed from the open file as before (the same error, naming the file) and
  never kept.
- `skip_mode_probe(argv)` makes `Hydra.get_mode` answer None at once where nothing can set
  `hydra.mode`, which is what its composition would give.

`HARNESS_HYDRA_SHORTCUTS=0` leaves Hydra as it is (`enabled()`)."""

from __future__ import annotations

import io
import os
import pathlib
import re
from typing import IO, Any

_MISSING = object()
_PARSED: dict[str, Any] = {}  # a config file's text -> what the YAML loader made of it (plain containers)
MAX_TEXTS = 2048  # texts kept (~18 a composition; a project with more config files parses the rest each time)
_ORIGINAL: list[Any] = []  # OmegaConf.load as omegaconf defines it, once replaced


def load(file_: Any) -> Any:
    """`OmegaConf.load(file_)` (a path or an open file), each distinct text parsed once per process."""
    if isinstance(file_, (str, pathlib.Path)):
        with io.open(os.path.abspath(file_), "r", encoding="utf-8") as f:
            return _load(f)
    if getattr(file_, "read", None):
        return _load(file_)
    return _ORIGINAL[0](file_)  # what omegaconf does with anything else (a TypeError)


def _load(f: IO[Any]) -> Any:
    from omegaconf import OmegaConf

    text = f.read()
    if isinstance(text, bytes):  # a zipped package's resource reads bytes
        text = text.decode("utf-8")
    obj = _PARSED.get(text, _MISSING)
    if obj is _MISSING:
        import yaml
        from omegaconf._utils import get_yaml_loader

        f.seek(0)
        obj = yaml.load(f, Loader=get_yaml_loader())  # from the file itself: a mistake is reported as before
        if obj is not None and not isinstance(obj, (list, dict, str)):
            raise IOError(f"Invalid loaded object type: {type(obj).__name__}")  # as OmegaConf.load says it
        if len(_PARSED) < MAX_TEXTS:
            _PARSED[text] = obj
    # OmegaConf.create copies what it is given into its own nodes and changes nothing in it (the parsed
    # texts are checked against fresh parses after whole compositions: tests/runners/test_hydra_shortcuts.py)
    return OmegaConf.create() if obj is None else OmegaConf.create(obj)


def enabled() -> bool:
    """False where `HARNESS_HYDRA_SHORTCUTS=0` asks for Hydra as it is."""
    return os.environ.get("HARNESS_HYDRA_SHORTCUTS", "1") != "0"


def install() -> bool:
    """Replace `OmegaConf.load` by `load` (once); False where the shortcuts are switched off.
    Hydra's config sources call `OmegaConf.load` through the class (they import the class, and
    Hydra re-executes their modules when it scans its plugins), so the class's own attribute is
    what is replaced; every caller gets the same configs as before, built afresh each call."""
    if not enabled():
        return False
    from omegaconf import OmegaConf

    if not _ORIGINAL:
        _ORIGINAL.append(OmegaConf.load)
        OmegaConf.load = staticmethod(load)  # type: ignore[method-assign]
    return True


_OWN_CONFIG_OPTIONS = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn")


def skip_mode_probe(argv: list[str], conf_dir: pathlib.Path) -> bool:
    """Spare `hydra.main`'s first composition when it cannot change anything: it is made only to read
    `hydra.mode` (`Hydra.get_mode`), and gives None (run, or multirun with `-m`) unless a config or
    the command line sets the mode. When none can (no `hydra.mode` or `hydra.searchpath` override,
    no other config folder or primary config named in `argv`, and no file of `conf_dir` with a
    top-level `hydra:` that mentions a mode: ~70 small files read, ~4 ms), `get_mode` answers None
    at once (~90 ms of a sweep's start). Returns whether it did."""
    if not enabled():
        return False
    for a in argv:
        key = a.split("=", 1)[0].lstrip("+~")
        if key in ("hydra.mode", "hydra.searchpath") or a.startswith(_OWN_CONFIG_OPTIONS):
            return False
    for f in conf_dir.rglob("*.yaml"):
        text = f.read_text(encoding="utf-8", errors="replace")
        if re.search(r"(?m)^hydra\s*:", text) and re.search(r"\bmode\b", text):
            return False
    from hydra._internal.hydra import Hydra

    def get_mode(self: Any, config_name: str | None, overrides: list[str]) -> None:
        return None

    Hydra.get_mode = get_mode  # type: ignore[method-assign]
    return True
