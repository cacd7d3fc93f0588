"""τ tool error texts, read at run time from the pinned tau2-bench toolkits
(`src/tau2/domains/<domain>/tools.py`): the message of each `raise ValueError(...)` in a toolkit
method, by method and position (f-string fields kept as `{expression}`), never written here. Offline
the project's own wording (the fallback given at each raise site) is used and the benchmark's
manifest lists `tools.errors` as paraphrased (docs/texts.md)."""

from __future__ import annotations

import ast
import functools
from typing import Any

from runners.upstream import TextSources, UpstreamFile, file_text, fill_fields, parse_python

TOOLS = {
    "retail": UpstreamFile("tau2-bench", "src/tau2/domains/retail/tools.py"),
    "airline": UpstreamFile("tau2-bench", "src/tau2/domains/airline/tools.py"),
}


def _message(node: ast.expr) -> str | None:
    """A raise argument as a template: a constant, an f-string (fields `{expression}`), or their implicit
    concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
            elif isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None:
                parts.append("{" + ast.unparse(v.value) + "}")
            else:
                return None
        return "".join(parts)
    return None


@functools.lru_cache(maxsize=8)
def _errors(domain: str, src: str) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    tree = parse_python(src)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            raises = sorted(
                (
                    n
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Raise)
                    and isinstance(n.exc, ast.Call)
                    and isinstance(n.exc.func, ast.Name)
                    and n.exc.func.id == "ValueError"
                    and n.exc.args
                ),
                key=lambda n: (n.lineno, n.col_offset),
            )
            if raises:
                out[fn.name] = [
                    _message(n.exc.args[0]) for n in raises if isinstance(n.exc, ast.Call)
                ]  # source order (all are calls)
    return out


def upstream_errors(domain: str) -> dict[str, list[str | None]] | None:
    """{toolkit method: [its ValueError messages in source order]}, or None when the file is unavailable."""
    src = file_text(TOOLS[domain])
    return None if src is None else _errors(domain, src)


def error(domain: str, method: str, n: int, fallback: str, **fields: Any) -> str:
    """The message of the `n`-th ValueError raised in upstream's toolkit `method`, its fields filled
    from `fields` (keyed by upstream's expression, e.g. `item_id`), else `fallback` (same fields)."""
    found = upstream_errors(domain)
    msgs = (found or {}).get(method) or []
    template = msgs[n] if n < len(msgs) and msgs[n] is not None else None
    try:
        return fill_fields(template, fields) if template is not None else fill_fields(fallback, fields)
    except KeyError:
        return fill_fields(fallback, fields)


def record(domain: str, sources: TextSources) -> None:
    """Record the error texts' source in the benchmark's manifest (`tools.errors`)."""
    found = upstream_errors(domain)
    sources.use(
        "tools.errors",
        TOOLS[domain],
        None if found is None else repr(sorted(found.items())),
        "(project wording)",
        symbol="<toolkit ValueError messages>",
    )
