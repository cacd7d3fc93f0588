"""The import graph of the top-level packages: no cycles, the kit depends only on the contracts,
and the engine imports no method package (imports inside functions count too)."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("runners", "kit", "flowstate", "pos", "baselines", "benchmarks")
METHODS = ("kit", "flowstate", "pos", "baselines")


def imports() -> dict[str, set[str]]:
    """module path -> the modules it imports (absolute names)."""
    out: dict[str, set[str]] = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            mod = ".".join(f.relative_to(REPO).with_suffix("").parts)
            names: set[str] = set()
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.Import):
                    names |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module)
            out[mod] = names
    return out


def package_graph() -> dict[str, set[str]]:
    g: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for mod, names in imports().items():
        src = mod.split(".")[0]
        g[src] |= {n.split(".")[0] for n in names if n.split(".")[0] in PACKAGES and n.split(".")[0] != src}
    return g


def test_no_cycle_between_top_level_packages():
    g = package_graph()
    state: dict[str, int] = {}

    def visit(p: str, path: list[str]) -> None:
        state[p] = 1
        for q in sorted(g[p]):
            assert state.get(q) != 1, f"import cycle: {' -> '.join(path + [p, q])}"
            if q not in state:
                visit(q, path + [p])
        state[p] = 2

    for p in PACKAGES:
        if p not in state:
            visit(p, [])


def test_kit_depends_only_on_the_contracts():
    bad = {(m, n) for m, names in imports().items() if m.startswith("kit.") or m == "kit"
           for n in names if n.split(".")[0] in PACKAGES and n.split(".")[0] != "kit"
           and not (n == "runners.api" or n.startswith("runners.api.") or n == "runners.tokens")}
    assert not bad, f"kit may import only runners.api and runners.tokens: {sorted(bad)}"


def test_engine_imports_no_method_package():
    bad = {(m, n) for m, names in imports().items() if m.startswith("runners.")
           for n in names if n.split(".")[0] in METHODS}
    assert not bad, f"runners imports method code: {sorted(bad)}"
