"""LOCA's action view as the PoS release shows it (`prompts/react_prompt.py`:
`build_loca_tool_catalog`): the tool definitions grouped by interface role, with a count of tools
per MCP server. The logic is the project's own; every name the model sees (the role names and
their order, the catalog's keys) and the words each role is recognised by are read at run time
from the pinned release by `catalog_rules`, never written here. Without the release the plain list
of tool schemas is shown (recorded paraphrased)."""

from __future__ import annotations

import ast
import copy
import functools
import re
from typing import Any

from runners.upstream import TextSources, UpstreamFile, file_text, parse_python

__all__ = ["catalog_rules", "record_catalog", "tool_catalog", "view"]

_SERVER = re.compile(r"\s*\[([^\]]+)\]")  # the server label LOCA puts at the head of each description


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _rule(test: ast.expr) -> dict[str, list[str]]:
    """What one role test of the release checks: substrings of the lower-cased name, server labels,
    name tokens (any one of them matching selects the role)."""
    rule: dict[str, list[str]] = {"substrings": [], "servers": [], "tokens": []}
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
    for part in parts:
        if isinstance(part, ast.Compare) and isinstance(part.ops[0], ast.In):
            if isinstance(part.left, ast.Constant):
                rule["substrings"] += _strings(part.left)
            elif isinstance(part.left, ast.Name):
                rule["servers"] += _strings(part.comparators[0])
        elif isinstance(part, ast.Compare) and isinstance(part.ops[0], ast.Eq):
            rule["servers"] += _strings(part.comparators[0])
        elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitAnd):
            rule["tokens"] += _strings(part.right) + _strings(part.left)
        else:
            raise ValueError(ast.unparse(part))
    return rule


@functools.lru_cache(maxsize=4)
def _parse(src: str) -> dict[str, Any] | None:
    tree = parse_python(src)
    order = next(
        (
            _strings(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_LOCA_TOOL_CATEGORY_ORDER" for t in n.targets)
        ),
        None,
    )
    category, build = _function(tree, "_tool_category"), _function(tree, "build_loca_tool_catalog")
    if not order or category is None or build is None:
        return None
    rules: list[tuple[dict[str, list[str]], str]] = []
    default = None
    for stmt in category.body:
        if isinstance(stmt, ast.If) and isinstance(stmt.body[-1], ast.Return):
            rules += [(_rule(stmt.test), _strings(stmt.body[-1].value)[0])]  # type: ignore[arg-type]
        elif isinstance(stmt, ast.Return):
            default = _strings(stmt.value)[0]  # type: ignore[arg-type]
    result = next((n.value for n in ast.walk(build) if isinstance(n, ast.Return)), None)
    if not isinstance(result, ast.Dict) or len(result.keys) != 2 or default is None:
        return None
    counts = next((n.elt for n in ast.walk(result.values[0]) if isinstance(n, ast.ListComp)), None)
    if not isinstance(counts, ast.Dict) or len(counts.keys) != 2:
        return None
    keys = [s for k in [*result.keys, *counts.keys] if k is not None for s in _strings(k)]
    if len(keys) != 4 or not {c for _, c in rules} | {default} <= set(order):
        return None
    return {"order": order, "rules": rules, "default": default, "keys": keys}


def catalog_rules(f: UpstreamFile) -> dict[str, Any] | None:
    """The catalog's names and role tests read from the release file, or None when unavailable."""
    src = file_text(f)
    if src is None:
        return None
    try:
        return _parse(src)
    except (ValueError, IndexError, AttributeError):
        return None  # the release's role tests changed shape: the plain list, recorded paraphrased


def record_catalog(sources: TextSources, f: UpstreamFile) -> dict[str, Any] | None:
    """`catalog_rules`, recorded in `sources` (paraphrased when the release is unavailable)."""
    return sources.use(
        "pos.release.build_loca_tool_catalog", f, catalog_rules(f), None, symbol="build_loca_tool_catalog"
    )


def _role(rules: dict[str, Any], name: str, server: str) -> str:
    lowered = name.lower()
    tokens = set(re.split(r"[^a-z0-9]+", lowered))
    for rule, role in rules["rules"]:
        if any(s in lowered for s in rule["substrings"]) or server in rule["servers"] or tokens & set(rule["tokens"]):
            return str(role)
    return str(rules["default"])


def tool_catalog(rules: dict[str, Any], actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The tools of `actions` (OpenAI tool schemas) grouped by role, each role's tools by name, the
    roles in the release's order (empty ones left out), with the number of tools per server."""
    servers: dict[str, int] = {}
    by_role: dict[str, list[dict[str, Any]]] = {}
    for action in actions:
        fn = action.get("function", {})
        name = str(fn.get("name", ""))
        if not name:
            continue
        m = _SERVER.match(str(fn.get("description", "")))
        server = m.group(1) if m else name.split("_", 1)[0]
        servers[server] = servers.get(server, 0) + 1
        by_role.setdefault(_role(rules, name, server), []).append(copy.deepcopy(fn))
    k_servers, k_roles, k_name, k_count = rules["keys"]
    return {
        k_servers: [{k_name: s, k_count: n} for s, n in sorted(servers.items())],
        k_roles: {r: sorted(by_role[r], key=lambda t: t["name"]) for r in rules["order"] if r in by_role},
    }


def view(rules: dict[str, Any] | None, actions: list[Any]) -> Any:
    """LOCA's `Available actions:` value: the catalog when the release's rules are known and the
    actions are tool schemas, else the list itself."""
    if rules is None or not all(isinstance(a, dict) for a in actions):
        return actions
    return tool_catalog(rules, actions)
