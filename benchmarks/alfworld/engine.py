"""The real ALFWorld text engine: TextWorld's PDDL environment wrapped with ALFWorld's
`AlfredDemangler` (THOR ids → `desk 2`, `shuffle=False` as in evaluation) and `AlfredInfos`
(docs/alfworld.md §3.1). `alfworld`/`textworld` are imported only inside `_engine()`.

Pitfalls handled here (docs/alfworld.md §7): fast-downward overwrites `sys.argv` on every load and
reset, so it is saved and restored; importing `alfworld.info` writes $ALFWORLD_DATA, so the
variable is set to our data root first; TextWorld parses grammar text with a shared `tatsu`
parser that is not thread-safe (concurrent steps raised `IndexError: pop from empty list`), so
every load, reset and step of every game holds one process-wide lock (the GIL allows no parallel
speed-up here anyway; callers run them in a worker thread to keep the event loop free). `textworld.start`
imposes no step limit: the caller enforces it.

Every new `PddlEnv` loads a private copy of fast-downward's shared library that is never
unloaded (≈4 MB a game; a 134-game run grew one process to 450 MB). Closed games therefore return
their wrapped env to a pool and the next game re-`load`s it, which keeps a process near 110 MB;
the pool holds at most as many envs as games ever ran at once.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = (
    "install the ALFWorld extra: pip install 'alfworld==0.4.2' 'textworld[pddl]==1.7.0' (or the project's "
    "[alfworld] extra)"
)
_ENGINE = threading.Lock()
_POOL: list[Any] = []
_POOL_LOCK = threading.Lock()


def available() -> bool:
    """Whether the `alfworld` and `textworld` packages are importable (without importing them)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in ("alfworld", "textworld"))
    except (ImportError, ValueError):  # e.g. a module blocked as sys.modules[name] = None
        return False


def _engine(data_root: Path | None) -> tuple[Any, Any, Any, Any]:
    if data_root is not None:
        os.environ.setdefault("ALFWORLD_DATA", str(data_root))  # before alfworld.info runs
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv
    except ImportError as e:
        raise RuntimeError(f"ALFWorld engine not importable ({e}); {INSTALL_HINT}") from e
    return textworld, PddlEnv, AlfredDemangler, AlfredInfos


@dataclass(frozen=True)
class Frame:
    """What the engine says after a reset or a step. `feedback` is raw engine text."""

    feedback: str
    admissible: list[str]
    won: bool


class Game:
    """One live game, loaded from an in-memory game dict (so the grammar may be patched)."""

    def __init__(self, game: dict[str, Any], *, data_root: Path | None = None) -> None:
        self._env: Any = _acquire(data_root)
        self._game = game
        self._loaded = False

    def _locked(self, fn: Any, *args: Any) -> Any:
        with _ENGINE:
            argv = list(sys.argv)
            try:
                return fn(*args)
            finally:
                sys.argv = argv

    @staticmethod
    def _frame(state: Any) -> Frame:
        return Frame(
            feedback=str(state.feedback), admissible=list(state["admissible_commands"]), won=bool(state["won"])
        )

    def reset(self) -> Frame:
        """Load (first time) and reset; 1–5 s, mostly fast-downward grounding."""
        if self._env is None:
            raise RuntimeError("ALFWorld game reset after close")
        if not self._loaded:
            self._locked(self._env.load, self._game)
            self._loaded = True
        return self._frame(self._locked(self._env.reset))

    def step(self, command: str) -> Frame:
        """One engine step (35–80 ms). A non-admissible command yields `Nothing happens.`."""
        if self._env is None or not self._loaded:
            raise RuntimeError("ALFWorld game stepped before reset or after close")
        state, _score, _done = self._locked(self._env.step, command)
        return self._frame(state)

    def close(self) -> None:
        """Hand the engine back to the pool (the next game's `load` resets it). Idempotent."""
        env, self._env = getattr(self, "_env", None), None
        if env is not None:
            with _POOL_LOCK:
                _POOL.append(env)

    def __del__(self) -> None:  # a game abandoned by an error still returns its engine
        self.close()


def _acquire(data_root: Path | None) -> Any:
    """A wrapped PddlEnv: a pooled one if free, else a new one."""
    with _POOL_LOCK:
        if _POOL:
            return _POOL.pop()
    textworld, PddlEnv, AlfredDemangler, AlfredInfos = _engine(data_root)
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    return AlfredInfos(AlfredDemangler(PddlEnv(infos), shuffle=False))
