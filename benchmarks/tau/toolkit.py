"""Tool machinery shared by the τ³ domains: the tool decorator (type + OpenAI schema), dispatch
without argument validation, output serialization, hashing, and the two shared tools
(docs/tau-bench.md §4, upstream `src/tau2/environment/{toolkit,environment}.py`)."""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Literal

from benchmarks.tau.errors import error
from runners.api import ToolSpec

ToolType = Literal["READ", "WRITE", "GENERIC"]
CALC_CHARS = set("0123456789+-*/(). ")


@dataclass(frozen=True)
class ToolMeta:
    kind: ToolType
    description: str
    params: dict[str, Any]


def tool(kind: ToolType, description: str, **params: Any) -> Callable:
    """Mark a toolkit method as a tool. `params` maps argument name → JSON schema (all required)."""

    def wrap(fn: Callable) -> Callable:
        fn.__tool__ = ToolMeta(kind, description, params)  # type: ignore[attr-defined]
        return fn

    return wrap


# JSON-schema shorthands for the signatures in §5/§6.
STR = {"type": "string"}
INT = {"type": "integer"}
STR_LIST = {"type": "array", "items": STR}


def s(description: str, base: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {**(base or STR), "description": description, **extra}


def dumps(obj: Any) -> str:
    """Upstream output serialization: `json.dumps(obj, default=str)` (default separators,
    ASCII escaping, float repr); strings are returned as is (§4)."""
    return obj if isinstance(obj, str) else json.dumps(obj, default=str)


def strip_none(obj: Any) -> Any:
    """Recursively drop dict keys whose value is None (list elements are kept) (§9)."""
    if isinstance(obj, dict):
        return {k: strip_none(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [strip_none(v) for v in obj]
    return obj


def db_hash(db: dict[str, Any]) -> str:
    """Normalized DB hash: sha256 of `json.dumps(strip_none(db), sort_keys=True, default=str)` (§9)."""
    text = json.dumps(db, sort_keys=True, default=str)
    if "null" in text:  # some value may be None: strip (the fast path is exact only without nulls)
        text = json.dumps(strip_none(db), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def pick(d: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Model-ordered view of a stored record: every declared field, None when unset (§4)."""
    return {k: d.get(k) for k in keys}


ADDRESS = ("address1", "address2", "city", "country", "state", "zip")


def identity_view(u: dict[str, Any]) -> dict[str, Any]:
    """The leading fields both domains' `User` models share: user_id, name, address, email."""
    return {
        "user_id": u["user_id"],
        "name": pick(u["name"], ("first_name", "last_name")),
        "address": pick(u["address"], ADDRESS),
        "email": u["email"],
    }


def methods_view(u: dict[str, Any], fields: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """`payment_methods` in insertion order, each in its model's field order (by `source`)."""
    return {k: pick(m, fields.get(m.get("source"), tuple(m))) for k, m in u["payment_methods"].items()}


GUARD_TEXT = "The exponent is too large to evaluate."
"""The harness guard's own error text (no upstream counterpart; source `project`)."""
CALC_FALLBACK = "The expression may hold only digits, + - * /, dots, parentheses and spaces."
"""The project's wording of `calculate`'s invalid-characters error, used when the pinned upstream
toolkit is unavailable (upstream's own text is read at run time, benchmarks/tau/errors.py)."""


def _guard_power(expression: str) -> None:
    """Harness guard (not upstream): refuse `**` with a non-literal or huge exponent, which could
    hang the process (e.g. `9**9**9`). Ordinary expressions evaluate exactly as upstream."""
    if "**" not in expression:
        return
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return  # eval raises the same SyntaxError upstream would
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exp = node.right
            value = exp.value if isinstance(exp, ast.Constant) else None
            if isinstance(exp, ast.UnaryOp) and isinstance(exp.operand, ast.Constant):
                value = exp.operand.value
            if not isinstance(value, (int, float)) or abs(value) > 10_000:
                raise ValueError(GUARD_TEXT)


class Toolkit:
    """Base of a domain's tools. Subclasses define `ORDER` (exposed order) and @tool methods;
    state lives in `self.db` (plain dicts loaded from db.json)."""

    ORDER: tuple[str, ...] = ()
    DOMAIN = ""
    """The tau2-bench domain whose toolkit the error texts are read from (benchmarks/tau/errors.py)."""
    HINTS: dict[str, tuple[str | None, str]] = {}
    """Harness hints (not upstream): tool name -> (argument or None for the tool description, text
    appended). Shown only with `benchmark.params.tool_hints: true`."""

    def __init__(self, db: dict[str, Any]) -> None:
        self.db = db

    # -- registry
    @classmethod
    def meta(cls, name: str) -> ToolMeta | None:
        fn = getattr(cls, name, None) if not name.startswith("_") else None
        return getattr(fn, "__tool__", None)

    @classmethod
    def tool_type(cls, name: str) -> ToolType | None:
        m = cls.meta(name)
        return m.kind if m else None

    @classmethod
    def specs(cls, hints: bool = False) -> list[ToolSpec]:
        """Tools with the project's own descriptions (the fallback when the pinned upstream
        tools.py is unavailable), every argument required (§4)."""
        out = []
        for name in cls.ORDER:
            m = cls.meta(name)
            assert m is not None, name
            out.append(
                ToolSpec(
                    name=name,
                    description=m.description,
                    parameters={"type": "object", "properties": m.params, "required": list(m.params)},
                )
            )
        return cls.with_hints(out) if hints else out

    @classmethod
    def with_hints(cls, specs: list[ToolSpec]) -> list[ToolSpec]:
        """`specs` with the harness hints appended (a copy)."""
        out = []
        for spec in specs:
            spec = spec.model_copy(deep=True)
            if spec.name in cls.HINTS:
                arg, text = cls.HINTS[spec.name]
                if arg is None:
                    spec.description += text
                else:
                    prop = spec.parameters["properties"][arg]
                    prop["description"] = prop.get("description", "") + text
            out.append(spec)
        return out

    # -- dispatch (upstream: `tool(**arguments)`, no schema validation or coercion)
    def execute(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Run one call; returns (tool message content, error flag). Never raises."""
        if not isinstance(name, str) or self.meta(name) is None or name not in self.ORDER:
            return f"Error: Tool '{name}' not found.", True
        if not isinstance(arguments, dict):
            return (
                f"Error: {type(self).__name__}.{name}() argument after ** must be a mapping, not "
                f"{type(arguments).__name__}",
                True,
            )
        try:
            out = getattr(self, name)(**arguments)
        except TypeError as e:  # a missing or extra argument: Python names the class that defines the tool
            return f"Error: {self._as_domain_class(name, str(e))}", True
        except Exception as e:  # the tool's own error text becomes the observation (§4)
            return f"Error: {e}", True
        return dumps(out), False

    def _as_domain_class(self, name: str, message: str) -> str:
        """`message` with a tool defined here on the base class (`calculate`, `transfer_to_human_agents`)
        named on the domain's class, `AirlineTools.calculate() …`: upstream defines them in each domain's
        toolkit, so its argument errors name that class."""
        base = f"{Toolkit.__name__}.{name}("
        return type(self).__name__ + message[len(Toolkit.__name__) :] if message.startswith(base) else message

    # -- shared tools (§4)
    @tool(
        "GENERIC",
        "Evaluate an arithmetic expression and return the result.",
        expression=s(
            "Arithmetic to evaluate (e.g. '2 + 2'), written with numbers, + - * /, parentheses and spaces only."
        ),
    )
    def calculate(self, expression: str) -> str:
        if not all(c in CALC_CHARS for c in expression):
            raise ValueError(error(self.DOMAIN, "calculate", 0, CALC_FALLBACK))  # upstream's text at run time
        _guard_power(expression)
        # Only digits, operators, dots, parentheses and spaces remain: plain Python arithmetic.
        return str(round(float(eval(expression, {"__builtins__": {}}, {})), 2))

    @tool(
        "GENERIC",
        "Hand the conversation over to a human agent together with a short account of the problem; "
        "only when the customer asks for a person or the tools cannot solve the problem.",
        summary=s("Short account of the customer's problem."),
    )
    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"
