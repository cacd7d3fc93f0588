"""Hydra's config files parsed once per process.

Hydra composes the whole config from its files every time it is asked: twice at a sweep's start
(`hydra.main` reads `hydra.mode` from one composition, then runs on another), then once per cell
of the experiment's grid (`runners.sweep.expand_cells`), and once per job of a `-m` multirun.
Each composition parses every YAML file on the way again (~18 files, PyYAML's pure-Python
loader: about a fifth of a composition's ~120 ms; scripts/perf/README.md, "The default suite
on a slower machine"). `install()` replaces `OmegaConf.load`, which Hydra's config sources (files
and package resources) call for each file, by `load`, which keeps each parsed text: a text seen
before is not parsed again, only made into a config by `OmegaConf.create`, as `OmegaConf.load`
does after parsing (every caller gets a config of its own, built afresh).

The cache is keyed by the file's whole text, so an edited file is parsed afresh (nothing is
keyed by path or time), and a text that fails to parse is parsed from the open file as before
(the same error, naming the file) and never kept. `HARNESS_HYDRA_SHORTCUTS=0` leaves Hydra as
it is."""

from __future__ import annotations

import io
import os
import pathlib
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
    # texts are checked against fresh parses after whole compositions: tests/runners/test_hydra_yaml.py)
    return OmegaConf.create() if obj is None else OmegaConf.create(obj)


def install() -> bool:
    """Replace `OmegaConf.load` by `load` (once); False where it is switched off
    (`HARNESS_HYDRA_SHORTCUTS=0`). Hydra's config sources call `OmegaConf.load` through the
    class (they import the class, and Hydra re-executes their modules when it scans its plugins),
    so the class's own attribute is what is replaced; every caller gets the same configs as
    before, built afresh each call."""
    if os.environ.get("HARNESS_HYDRA_SHORTCUTS", "1") == "0":
        return False
    from omegaconf import OmegaConf

    if not _ORIGINAL:
        _ORIGINAL.append(OmegaConf.load)
        OmegaConf.load = staticmethod(load)  # type: ignore[method-assign]
    return True
