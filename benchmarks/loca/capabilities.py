"""PoS's declared LOCA tool capabilities (upstream `benchmarks/loca_capabilities.py`,
LOCA_TOOL_CAPABILITIES: per stable tool, its effect — read, inspect, transform, create, write,
finish — and what it consumes and provides), read at run time from the pinned file and attached
to the tools the catalog shows, as upstream's `attach_loca_capabilities` does. Unlisted tools stay
without a capability. Without the upstream file the table is empty and the manifest says so."""

from __future__ import annotations

import ast
from typing import Any

from runners.upstream import TextSources, UpstreamFile, file_text, parse_python

CAPABILITIES = UpstreamFile("PoS", "benchmarks/loca_capabilities.py")
SYMBOL = "LOCA_TOOL_CAPABILITIES"


def _table(src: str | None) -> dict[str, dict[str, Any]] | None:
    if src is None:
        return None
    for node in parse_python(src).body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign)
            else node.target
            if isinstance(node, ast.AnnAssign)
            else None
        )
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign))
            and isinstance(target, ast.Name)
            and target.id == SYMBOL
            and node.value is not None
        ):
            value = ast.literal_eval(node.value)
            return value if isinstance(value, dict) else None
    return None


def capability_table(sources: TextSources) -> dict[str, dict[str, Any]]:
    """{tool name: capability} from upstream (recorded in `sources`), or {} when unavailable."""
    table = _table(file_text(CAPABILITIES))
    sources.use("loca.tool_capabilities", CAPABILITIES, None if table is None else "", "", symbol=SYMBOL)
    return table or {}
