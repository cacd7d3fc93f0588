"""RCA-100 tool signatures (docs/pos-benchmarks.md §2.5): arguments, defaults and clamped limits,
the ToolSpecs shown to the agent, and total argument validation (bad input → error text).

The schemas sent to the agent are the PoS release's (`tool_texts: release`, the default): each
tool's `function` schema from `TOOLS` of `benchmarks/RCA100/tools.py` and `SUBMIT_TOOL_SCHEMA` of
`benchmarks/rca100_env.py`, read at run time with `ast` (runners/upstream.py), in the release
registry's order (its tools, then the submission tool); the submission's fault-type enum is the
catalog (`FAULT_TYPE_IDS` there, a name the parser cannot read). A release schema is used only when
its parameter names equal the project's (which `validate` checks); otherwise, or without the pinned
files, the project's descriptions below are sent and the manifest lists them as paraphrased
(`rca100.tools.<name>`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchmarks.rca100.catalog import FAULT_TYPES
from runners.api import ToolSpec
from runners.upstream import TextSources, UpstreamFile, py_literal

RELEASE_TOOLS = UpstreamFile("PoS", "benchmarks/RCA100/tools.py")
RELEASE_ENV = UpstreamFile("PoS", "benchmarks/rca100_env.py")
TOOL_TEXTS = ("release", "project")

SUBMIT = "submit_root_cause"


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # str | int | bool | float
    description: str
    required: bool = False
    default: Any = None
    max: int | None = None  # limits are clamped to [1, max]
    enum: tuple[str, ...] | None = None


def _limit(default: int, cap: int) -> Arg:
    return Arg("limit", "int", f"maximum items to return (default {default}, at most {cap})", default=default, max=cap)


TOOLS: dict[str, tuple[str, list[Arg]]] = {
    "get_data_overview": (
        "Row counts and time ranges of every data source, entity/metric/service counts and topology size.",
        [],
    ),
    "list_entities": (
        "Sorted names of topology entities of one type (e.g. apm.service, k8s.node, k8s.pod, k8s.deployment).",
        [
            Arg("entity_type", "str", "topology entity type, e.g. apm.service or k8s.node", required=True),
            Arg("keyword", "str", "case-insensitive substring filter on the name"),
            _limit(50, 100),
        ],
    ),
    "list_metric_names": (
        "Metric names present in the metrics data, each with the entities that report it.",
        [
            Arg("entity_name", "str", "only metrics of this entity"),
            Arg("keyword", "str", "substring filter on the metric name"),
            _limit(80, 120),
        ],
    ),
    "get_topology": (
        "Without entity_name: entity counts by type plus the service and node lists. With entity_name: the entity's "
        "properties and its edges.",
        [
            Arg("entity_name", "str", "entity name (or id)"),
            Arg("relation", "str", "only edges with this relation"),
            _limit(30, 50),
        ],
    ),
    "query_metrics": (
        "Without metric: count/min/mean/max of each metric of the entity. With metric: its per-minute mean series "
        "(latest `limit` minutes) and overall min/mean/max.",
        [
            Arg("entity_name", "str", "entity name as it appears in the metrics", required=True),
            Arg("metric", "str", "metric name (see list_metric_names)"),
            _limit(40, 60),
        ],
    ),
    "search_logs": (
        "Latest log lines, optionally filtered by pod-name prefix and keyword; content cut to 300 characters.",
        [
            Arg("pod_name", "str", "pod name prefix"),
            Arg("keyword", "str", "case-insensitive substring of the log content"),
            _limit(20, 50),
        ],
    ),
    "query_traces": (
        "Slowest matching spans plus duration statistics.",
        [
            Arg("service_name", "str", "only spans of this service"),
            Arg("error_only", "bool", "only error spans", default=False),
            Arg("min_duration_ms", "float", "only spans at least this long (milliseconds)"),
            _limit(10, 30),
        ],
    ),
    "get_k8s_events": (
        "Kubernetes events, newest first; message cut to 200 characters.",
        [Arg("keyword", "str", "case-insensitive filter on reason, message and involved object"), _limit(20, 50)],
    ),
    "get_alerts": ("Alert records, earliest first: time, status, severity, current value.", [_limit(12, 30)]),
    SUBMIT: (
        "Submit the final root cause. Ends the case when valid. Call it once, alone in its turn.",
        [
            Arg(
                "root_cause_entity",
                "str",
                "exactly one service (apm.service) or node (k8s.node) name, verbatim",
                required=True,
            ),
            Arg("fault_type", "str", "one fault type ID from the catalog", required=True, enum=FAULT_TYPES),
            Arg("analysis", "str", "short evidence summary"),
        ],
    ),
}
_JSON_TYPE = {"str": "string", "int": "integer", "bool": "boolean", "float": "number"}


def project_schema(name: str) -> dict[str, Any]:
    """The project's OpenAI `function` schema of a tool (its own wording)."""
    desc, args = TOOLS[name]
    props: dict[str, Any] = {}
    for a in args:
        p: dict[str, Any] = {"type": _JSON_TYPE[a.kind], "description": a.description}
        if a.enum:
            p["enum"] = list(a.enum)
        props[a.name] = p
    return {
        "name": name,
        "description": desc,
        "parameters": {"type": "object", "properties": props, "required": [a.name for a in args if a.required]},
    }


def release_schemas() -> dict[str, tuple[dict[str, Any], UpstreamFile, str]]:
    """name -> (the release's `function` schema, its file, its symbol) for every readable tool."""
    out: dict[str, tuple[dict[str, Any], UpstreamFile, str]] = {}
    for i, entry in enumerate(py_literal(RELEASE_TOOLS, "TOOLS") or []):
        fn = ((entry or {}).get("schema") or {}).get("function") if isinstance(entry, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out[fn["name"]] = (fn, RELEASE_TOOLS, f"TOOLS[{i}]['schema']['function']")
    submit = ((py_literal(RELEASE_ENV, "SUBMIT_TOOL_SCHEMA") or {}).get("function")) or None
    if isinstance(submit, dict) and SUBMIT not in out:
        submit = json.loads(json.dumps(submit))  # a private copy: the parsed literal is shared
        submit["name"] = SUBMIT  # `SUBMIT_TOOL_NAME` there: a name, read as None
        fault = (submit.get("parameters") or {}).get("properties", {}).get("fault_type")
        if isinstance(fault, dict) and "enum" in fault and fault["enum"] is None:
            fault["enum"] = list(FAULT_TYPES)  # `FAULT_TYPE_IDS` there: the catalog
        out[SUBMIT] = (submit, RELEASE_ENV, "SUBMIT_TOOL_SCHEMA['function']")
    return out


def _fits(schema: dict[str, Any], name: str) -> bool:
    """Whether a release schema can stand for the project's tool: same name and parameter names,
    every text a string."""
    params = schema.get("parameters") or {}
    props = params.get("properties")
    return (
        schema.get("name") == name
        and isinstance(schema.get("description"), str)
        and isinstance(props, dict)
        and set(props) == {a.name for a in TOOLS[name][1]}
        and all(isinstance(p, dict) and isinstance(p.get("description"), str) for p in props.values())
    )


def tool_specs(sources: TextSources | None = None, texts: str = "release") -> list[ToolSpec]:
    """The tools as sent to the agent: the release's schemas (`texts="release"`), else the
    project's; each recorded in `sources` as `rca100.tools.<name>`."""
    if texts not in TOOL_TEXTS:
        raise ValueError(f"rca100 tool_texts must be one of {TOOL_TEXTS}, got {texts!r}")
    sources = sources if sources is not None else TextSources()
    release = release_schemas() if texts == "release" else {}
    specs = []
    for name in TOOLS:
        own = project_schema(name)
        if texts == "release":
            found, f, symbol = release.get(name, (None, RELEASE_ENV if name == SUBMIT else RELEASE_TOOLS, name))
            chosen = sources.use(
                f"rca100.tools.{name}", f, found if found and _fits(found, name) else None, own, symbol=symbol
            )
        else:
            sources.own(f"rca100.tools.{name}", "tool_texts=project: the project's tool descriptions")
            chosen = own
        specs.append(ToolSpec(name=name, description=chosen["description"], parameters=chosen["parameters"]))
    return specs


def _coerce(a: Arg, v: Any) -> Any:
    """Value of `v` as kind `a.kind`, or raise ValueError with a message for the agent."""
    if v is None:
        return None
    if a.kind == "str":
        if isinstance(v, (dict, list)):
            raise ValueError(f"`{a.name}` must be a string")
        return str(v)
    if a.kind == "bool":
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in ("true", "false"):
            return v.strip().lower() == "true"
        raise ValueError(f"`{a.name}` must be true or false")
    if isinstance(v, bool):
        raise ValueError(f"`{a.name}` must be a number")
    try:
        num = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"`{a.name}` must be a number, got {v!r}") from None
    if num != num or num in (float("inf"), float("-inf")):
        raise ValueError(f"`{a.name}` must be a finite number")
    if a.kind == "int":
        return max(1, min(int(num), a.max)) if a.max else int(num)  # §2.5: limits are clamped
    return num


def validate(name: str, arguments: Any) -> tuple[dict[str, Any], str | None]:
    """(keyword arguments with defaults, None) or ({}, error text). Unknown names are errors."""
    if name not in TOOLS:
        return {}, f"unknown tool '{name}'; available tools: {', '.join(TOOLS)}"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return {}, f"arguments of {name} must be a JSON object"
    spec = {a.name: a for a in TOOLS[name][1]}
    extra = sorted(set(arguments) - set(spec))
    if extra:
        return {}, f"{name} got unknown argument(s) {extra}; accepted: {sorted(spec) or 'none'}"
    out: dict[str, Any] = {}
    for a in spec.values():
        try:
            v = _coerce(a, arguments.get(a.name))
        except ValueError as e:
            return {}, f"{name}: {e}"
        if a.kind == "str" and v is not None and not v.strip():
            v = None  # an empty filter means no filter
        if v is None:
            if a.required:
                return {}, f"{name} needs `{a.name}` ({a.description})"
            v = a.default
        out[a.name] = v
    return out, None
