"""τ³ tool schemas as tau2-bench sends them to the agent model, built at run time from the pinned
upstream `domains/<domain>/tools.py` and `data_model.py` (docs/tau-fidelity.md).

Upstream (`src/tau2/environment/tool.py`, `Tool.parse_data` / `openai_schema`) builds each tool's
schema from the Python function: the signature's annotations and defaults become a pydantic model
named "parameters" whose `model_json_schema()` is the `parameters` object, the docstring is parsed
with `docstring_parser` (short description, plus "\\n\\n" and the long description when there is
one; each `Args:` entry becomes that argument's `description`). This module does the same with the
pinned files: the data-model module is evaluated with its two `tau2.*` imports replaced by stand-ins
(`DB` → a plain pydantic model, the DB path → None), tool functions are read with `ast` (never
imported or run), and their annotations are evaluated in the data-model namespace.

Nothing of upstream's wording is stored in the project: without the pinned files the caller falls
back to the project's own tool descriptions (`Toolkit.specs()`), recorded as paraphrase.
"""

from __future__ import annotations

import ast
import functools
import typing
from typing import Any

from runners.api import ToolSpec
from runners.upstream import TextSources, UpstreamFile, compile_python, file_text, parse_python

REPO = "tau2-bench"
TOOLKIT_CLASS = {"airline": "AirlineTools", "retail": "RetailTools"}


def tools_file(domain: str) -> UpstreamFile:
    return UpstreamFile(REPO, f"src/tau2/domains/{domain}/tools.py")


def data_model_file(domain: str) -> UpstreamFile:
    return UpstreamFile(REPO, f"src/tau2/domains/{domain}/data_model.py")


def _data_model_namespace(source: str) -> dict[str, Any]:
    """Evaluate the data-model module without its `tau2.*` imports (DB base class, DB path)."""
    import pydantic

    tree = parse_python(source)
    stand_ins: dict[str, Any] = {}
    body = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tau2"):
            for alias in node.names:
                name = alias.asname or alias.name
                stand_ins[name] = pydantic.BaseModel if name == "DB" else None
            continue
        body.append(node)
    module = ast.Module(body=body, type_ignores=[])  # the parsed tree is shared: never edit it
    ns: dict[str, Any] = {"__name__": "tau2_data_model", **stand_ins}
    exec(compile_python(module, "<tau2 data_model>"), ns)  # noqa: S102 - the sha256-pinned upstream file
    return ns


def _is_tool(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name) and target.id == "is_tool":
            return True
    return False


def _tool_functions(source: str, class_name: str) -> dict[str, ast.FunctionDef]:
    tree = parse_python(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        return {}
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef) and _is_tool(n)}


def tool_schema(fn: ast.FunctionDef, ns: dict[str, Any]) -> dict[str, Any]:
    """One tool's OpenAI schema exactly as upstream's `Tool(func).openai_schema`."""
    from docstring_parser import parse
    from pydantic import Field, create_model

    doc = parse(ast.get_docstring(fn, clean=True) or "")
    doc_param = {p.arg_name: p for p in doc.params}
    env = {**vars(typing), **ns}
    args = fn.args.args[1:]  # drop self
    defaults = [None] * (len(args) - len(fn.args.defaults)) + list(fn.args.defaults)
    params: dict[str, Any] = {}
    for arg, dflt in zip(args, defaults):
        anno = (
            eval(compile_python(ast.Expression(arg.annotation), "<annotation>", "eval"), env) if arg.annotation else Any
        )  # noqa: S307
        default: Any = ... if dflt is None else ast.literal_eval(dflt)
        if arg.arg in doc_param:
            default = Field(default, description=doc_param[arg.arg].description)
        params[arg.arg] = (anno, default)
    model = create_model("parameters", **params)
    short, long = doc.short_description or "", doc.long_description or ""
    description = (short + "\n\n" + long if long else short) or fn.name
    return {
        "type": "function",
        "function": {"name": fn.name, "description": description, "parameters": model.model_json_schema()},
    }


@functools.lru_cache(maxsize=8)
def _schemas(domain: str, tools_src: str, model_src: str) -> tuple[dict[str, Any], ...] | None:
    fns = _tool_functions(tools_src, TOOLKIT_CLASS[domain])
    if not fns:
        return None
    ns = _data_model_namespace(model_src)
    return tuple(tool_schema(fn, ns) for fn in fns.values())


def upstream_tool_schemas(domain: str) -> dict[str, dict[str, Any]] | None:
    """{tool name: OpenAI schema} as upstream builds them, or None when the pinned files are
    unavailable (offline without a local copy)."""
    tools_src, model_src = file_text(tools_file(domain)), file_text(data_model_file(domain))
    if tools_src is None or model_src is None:
        return None
    out = _schemas(domain, tools_src, model_src)
    return None if out is None else {s["function"]["name"]: s for s in out}


def upstream_specs(domain: str, order: tuple[str, ...]) -> list[ToolSpec] | None:
    """The domain's tools in the toolkit's exposed order, with upstream's schemas."""
    schemas = upstream_tool_schemas(domain)
    if schemas is None or set(order) - set(schemas):
        return None
    return [ToolSpec(**schemas[name]["function"]) for name in order]


def domain_tool_specs(
    domain: str, sources: TextSources | None = None, *, hints: bool = False, source: str = "upstream"
) -> list[ToolSpec]:
    """The tool list the agent sees: upstream's schemas (`source: upstream`, the default) or the
    project's own descriptions (`source: paraphrase`, also the fallback when the pinned files are
    unavailable); the harness hints appended only with `hints=True`. Records the source."""
    from benchmarks.tau.domains import toolkit_for

    kit = toolkit_for(domain)
    specs = upstream_specs(domain, kit.ORDER) if source == "upstream" else None
    if sources is not None:
        for key, f in (("tools", tools_file(domain)), ("tools.data_model", data_model_file(domain))):
            if source != "upstream":
                sources.entries[key] = {
                    "source": "paraphrase",
                    "upstream": f.provenance(),
                    "reason": "benchmark.params.tool_schemas: paraphrase",
                }
            else:
                sources.use(
                    key,
                    f,
                    "" if specs is not None else None,
                    "",
                    symbol=TOOLKIT_CLASS[domain] if key == "tools" else None,
                )
        if hints:
            sources.entries["tools.hints"] = {"source": "harness", "note": "harness hints appended (tool_hints: true)"}
    if specs is None:
        specs = kit.specs()
    return kit.with_hints(specs) if hints else specs
