"""Helpers for the text-conformance tests: read an upstream constant straight from the shared pinned
copy (independently of the project's loader), match a sent message against a `str.format`
template whose fields may hold anything, and read back the messages a scripted run sent."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from tests.conftest import upstream_src

PINNED = {
    "PoS": "PoS@506558c48565317569e117c40feeb6eb57313305",
    "ZipAct": "ZipAct@8d57023d48e3b5f8ddf7a77892a22a3ad02e8e9d",
    "MemoryArena": "MemoryArena@6cd9de14b71915e39ac742a20dc33785e14b6aab",
}


def upstream_file(repo: str, path: str) -> Path:
    return upstream_src() / PINNED[repo] / path


def upstream_constant(repo: str, path: str, name: str) -> Any:
    """The literal assigned to module-level `name` (evaluated with ast.literal_eval)."""
    tree = ast.parse(upstream_file(repo, path).read_text(encoding="utf-8"))
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not assigned in {repo}:{path}")


def template_regex(template: str) -> re.Pattern[str]:
    """`template` (str.format syntax) as a regex: literal parts byte for byte, each field anything."""
    out, pos = [], 0
    for m in re.finditer(r"\{\{|\}\}|\{[A-Za-z_][A-Za-z0-9_]*\}", template):
        out.append(re.escape(template[pos : m.start()]))
        tok = m.group()
        out.append(re.escape(tok[0]) if tok in ("{{", "}}") else "(.*?)")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.DOTALL)


def fills(text: str, template: str) -> bool:
    """True when `text` is `template` with its fields filled (every literal part byte for byte)."""
    return template_regex(template).fullmatch(text) is not None


def sent_calls(out: Path, role: str | None = None) -> list:
    """Every recorded call (runners.records.results) of every cell under `out`, optionally of one role."""
    from runners.records.results import open_experiment
    from runners.records.store import MANIFEST

    calls = []
    for exp_dir in sorted({p.parent.parent for p in Path(out).rglob(MANIFEST)}):
        for cell in open_experiment(exp_dir).cells:
            for ep in cell.episodes():
                calls += [c for c in ep.calls() if role is None or c.role == role]
    return calls


def manifests(out: Path) -> list[dict]:
    import json

    from runners.records.store import MANIFEST

    return [json.loads(p.read_text()) for p in sorted(Path(out).rglob(MANIFEST))]


def cell_calls(cell_dir: Path, role: str | None = None) -> list:
    """The recorded calls of one cell (runners.records.results), optionally of one role."""
    from runners.records.results import Cell

    return [c for ep in Cell(Path(cell_dir)).episodes() for c in ep.calls() if role is None or c.role == role]
