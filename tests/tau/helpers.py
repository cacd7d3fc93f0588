"""Shared helpers for the τ³ tests: the real data (skipped when absent) and trajectory builders."""

from __future__ import annotations

from typing import Any

from benchmarks.tau.data import DomainData, load_domain
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.replay import gold_actions
from benchmarks.tau.user_sim import GREETING, STOP
from tests.conftest import shared_path


def domain(name: str) -> DomainData:
    return load_domain(name, str(shared_path("tau2")))


def gold_trajectory(data: DomainData, task: dict[str, Any], final_message: str | None = None) -> list[dict[str, Any]]:
    """Gold calls with their real outputs (one assistant message per call), an optional final agent
    message, then a user stop (docs/tau-bench.md §8 'gold trajectory')."""
    tools = toolkit_for(data.domain)(data.fresh_db())
    traj: list[dict[str, Any]] = [
        {"role": "assistant", "content": GREETING, "tool_calls": None},
        {"role": "user", "content": "I need help."},
    ]
    for i, a in enumerate(gold_actions(task)):
        call = {"id": f"c{i}", "name": a["name"], "arguments": a.get("arguments") or {}}
        content, error = tools.execute(call["name"], call["arguments"])
        traj.append({"role": "assistant", "content": None, "tool_calls": [call]})
        traj.append({"role": "tool", "id": call["id"], "name": call["name"], "content": content, "error": error})
    if final_message is not None:
        traj.append({"role": "assistant", "content": final_message, "tool_calls": None})
    traj.append({"role": "user", "content": f"Thanks. {STOP}"})
    return traj


def run(tools, name: str, **args: Any) -> str:
    """Execute one tool call that must succeed; its output text."""
    content, error = tools.execute(name, args)
    assert not error, content
    return content


def empty_trajectory() -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": GREETING, "tool_calls": None},
        {"role": "user", "content": f"Never mind. {STOP}"},
    ]


TAU2 = "tau2-bench@fc0055dc4e0a316c3f83133267fbd6faaa770992"


def upstream_error(domain_name: str, method: str, n: int = 0, **fields: Any) -> str:
    """`"Error: " + the n-th ValueError message of upstream's toolkit `method``, its f-string fields
    filled from `fields` (keyed by upstream's expression), read straight from the pinned tau2-bench
    file (independently of benchmarks/tau/errors.py); skips when ../shared/data/upstream-src is absent."""
    import ast

    from tests.conftest import upstream_src

    path = upstream_src() / TAU2 / "src/tau2/domains" / domain_name / "tools.py"
    if not path.is_file():
        import pytest

        pytest.skip(f"pinned tau2-bench toolkit not found at {path}")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fn = next(
        f
        for c in tree.body
        if isinstance(c, ast.ClassDef)
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == method
    )
    raises = sorted(
        (
            r
            for r in ast.walk(fn)
            if isinstance(r, ast.Raise)
            and isinstance(r.exc, ast.Call)
            and getattr(r.exc.func, "id", None) == "ValueError"
        ),
        key=lambda r: (r.lineno, r.col_offset),
    )
    arg = raises[n].exc.args[0]
    if isinstance(arg, ast.Constant):
        return f"Error: {arg.value}"
    parts = [str(v.value) if isinstance(v, ast.Constant) else str(fields[ast.unparse(v.value)]) for v in arg.values]
    return "Error: " + "".join(parts)
