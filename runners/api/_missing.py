"""What a benchmark or method needs and cannot find on this machine (an optional extra, a data
directory, a database), declared so that a sweep finds every missing piece of every cell before
any work and names each fix (docs/contracts.md §8)."""

from __future__ import annotations

import importlib.util

from pydantic import BaseModel


class Missing(BaseModel):
    """One missing piece: `what` is missing (for the reader) and the `fix` that provides it."""

    what: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.what}. Fix: {self.fix}" if self.fix else self.what


def missing_modules(modules: tuple[str, ...] | list[str], what: str, fix: str) -> list[Missing]:
    """`[Missing(what, fix)]` when one of `modules` cannot be imported here (found without
    importing it; a module blocked as `sys.modules[name] = None` counts as missing), else []."""
    for m in modules:
        try:
            if importlib.util.find_spec(m) is None:
                return [Missing(what=f"{what} (module '{m}' is not installed)", fix=fix)]
        except (ImportError, ValueError):
            return [Missing(what=f"{what} (module '{m}' is not importable)", fix=fix)]
    return []
