"""The import graph docs/contracts.md §1 describes, enforced (imports inside functions count too):
no cycles between top-level packages; methods and benchmarks reach the harness only through
`runners.api` and the declared public helpers (each named in docs/contracts.md); the kit only
through `runners.api` and `runners.tokens`; the run record (`runners.records`) imports only
`runners.api` and itself; the analysis wing never imports the engine's run, episode, sweep or
backbone modules; the engine imports no method package."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("runners", "kit", "flowstate", "pos", "baselines", "benchmarks")
METHODS = ("kit", "flowstate", "pos", "baselines")
PUBLIC_HELPERS = ("runners.tokens", "runners.upstream", "runners.netcheck", "runners.inputs", "runners.records.results")
"""What a method or benchmark may import from the harness besides `runners.api` (docs/contracts.md §1)."""
SHARED_INTERFACES = {"baselines": ("pos.release_react", "pos.protocols")}
"""Method modules another method package may import: PoS's baselines speak the PoS release's ReAct
interface (docs/contracts.md §1)."""
ENGINE_ONLY = (
    "runners.run",
    "runners.launch",
    "runners.pool",
    "runners.prepare",
    "runners.procs",
    "runners.episode",
    "runners.sweep",
    "runners.backbones",
)
"""What the analysis wing never imports."""


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
    bad = {
        (m, n)
        for m, names in imports().items()
        if m.startswith("kit.") or m == "kit"
        for n in names
        if n.split(".")[0] in PACKAGES
        and n.split(".")[0] != "kit"
        and not (n == "runners.api" or n.startswith("runners.api.") or _under(n, PUBLIC_HELPERS))
    }
    assert not bad, f"kit may import only runners.api and the declared public helpers {PUBLIC_HELPERS}: {sorted(bad)}"


def test_engine_imports_no_method_package():
    bad = {
        (m, n)
        for m, names in imports().items()
        if m.startswith("runners.")
        for n in names
        if n.split(".")[0] in METHODS
    }
    assert not bad, f"runners imports method code: {sorted(bad)}"


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(graph: dict[str, set[str]] | None = None) -> dict[str, list[tuple[str, str]]]:
    """Each layer rule -> the (module, import) pairs that break it."""
    graph = imports() if graph is None else graph
    out: dict[str, list[tuple[str, str]]] = {"methods and benchmarks": [], "records": [], "analysis": []}
    for m, names in graph.items():
        top = m.split(".")[0]
        for n in names:
            ntop = n.split(".")[0]
            if ntop not in PACKAGES:
                continue
            if (
                top in ("flowstate", "pos", "baselines", "benchmarks")
                and ntop not in (top, "kit")
                and not (n == "runners.api" or _under(n, PUBLIC_HELPERS) or _under(n, SHARED_INTERFACES.get(top, ())))
            ):
                out["methods and benchmarks"].append((m, n))
            if _under(m, ("runners.records",)) and not _under(n, ("runners.api", "runners.records")):
                out["records"].append((m, n))
            if _under(m, ("runners.analysis",)) and _under(n, ENGINE_ONLY):
                out["analysis"].append((m, n))
    return {k: sorted(v) for k, v in out.items()}


def test_layers_import_only_what_the_contract_allows():
    bad = {rule: pairs for rule, pairs in violations().items() if pairs}
    assert not bad, f"imports outside the layer rules of docs/contracts.md §1: {bad}"


def test_layer_check_catches_a_violation():
    graph = imports()
    graph["pos.method"] = graph["pos.method"] | {"runners.records.store"}
    graph["benchmarks.toy.benchmark"] = graph["benchmarks.toy.benchmark"] | {"runners.api._task"}  # private module
    graph["runners.records.store"] = graph["runners.records.store"] | {"runners.config"}
    graph["runners.analysis.tables"] = graph["runners.analysis.tables"] | {"runners.backbones.scripted"}
    v = violations(graph)
    assert v["methods and benchmarks"] == [
        ("benchmarks.toy.benchmark", "runners.api._task"),
        ("pos.method", "runners.records.store"),
    ]
    assert v["records"] == [("runners.records.store", "runners.config")]
    assert v["analysis"] == [("runners.analysis.tables", "runners.backbones.scripted")]


def test_every_public_helper_is_declared_in_the_contract_doc():
    doc = (REPO / "docs" / "contracts.md").read_text()
    assert all(f"`{h}`" in doc for h in PUBLIC_HELPERS), [h for h in PUBLIC_HELPERS if f"`{h}`" not in doc]
