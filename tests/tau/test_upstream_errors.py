"""τ tool error texts come from the pinned tau2-bench toolkits at run time: every raise site of
benchmarks/tau/retail.py and airline.py names an upstream message that exists (method, position)
and fills the same fields; a failing tool call returns upstream's text; offline, the project's own
wording, and the manifest says so."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from benchmarks.tau.errors import upstream_errors
from benchmarks.tau.retail import RetailTools
from tests.conftest import upstream_src
from tests.tau.helpers import domain

ROOT = Path(__file__).resolve().parents[2]


def sites(domain_name: str) -> list[tuple[str, int, str, set[str]]]:
    """(upstream method, position, our fallback, field names passed) of every E(...) call."""
    tree = ast.parse((ROOT / f"benchmarks/tau/{domain_name}.py").read_text())
    out = []
    for n in ast.walk(tree):
        args = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "E" and len(n.args) >= 3:
            args = n.args
        elif (
            isinstance(n, ast.Tuple)
            and len(n.elts) == 3
            and all(isinstance(e, ast.Constant) for e in n.elts)
            and isinstance(n.elts[1].value, int)
        ):
            args = n.elts  # a (method, position, fallback) spec passed to _check_counts
        if args is not None and all(isinstance(a, ast.Constant) for a in args[:3]):
            fields = {k.arg for k in getattr(n, "keywords", []) if k.arg}
            for k in getattr(n, "keywords", []):
                if k.arg is None and isinstance(k.value, ast.Dict):
                    fields |= {key.value for key in k.value.keys}
            out.append((args[0].value, args[1].value, args[2].value, fields))
    return out


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_every_raise_site_names_an_upstream_message(name):
    upstream_src()
    found = upstream_errors(name)
    assert found
    seen = sites(name)
    assert len(seen) >= 15
    for method, n, fallback, fields in seen:
        assert method in found and n < len(found[method]), (method, n)
        upstream_fields = set(re.findall(r"\{([^{}]+)\}", found[method][n]))
        assert upstream_fields <= fields | {"item_id"}, (method, n, upstream_fields, fields)
        assert fallback != found[method][n]  # the fallback is the project's own wording


def test_a_failing_call_returns_upstreams_text_and_offline_ours(monkeypatch, tmp_path):
    upstream_src()
    msg = upstream_errors("retail")["find_user_id_by_email"][0]
    tools = RetailTools(domain("retail").fresh_db())
    assert tools.execute("find_user_id_by_email", {"email": "nobody@example.com"}) == (f"Error: {msg}", True)
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text, err = tools.execute("find_user_id_by_email", {"email": "nobody@example.com"})
    assert err and msg not in text
    from benchmarks.tau.benchmark import TauBenchmark

    notes = TauBenchmark(name="tau_retail", domain="retail", data_dir="fixtures").sources.as_manifest()
    assert "tools.errors" in notes["paraphrased"]


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_calculate_error_is_upstreams_and_offline_ours(monkeypatch, tmp_path, name):
    """`calculate`'s invalid-characters error (benchmarks/tau/toolkit.py) is read from the pinned
    toolkit; without it the project's own wording; the harness guard's text is the project's."""
    from benchmarks.tau.airline import AirlineTools
    from benchmarks.tau.toolkit import CALC_FALLBACK, GUARD_TEXT
    from tests.tau.helpers import upstream_error

    cls = RetailTools if name == "retail" else AirlineTools
    expected = upstream_error(name, "calculate")
    tools = cls({})
    assert tools.execute("calculate", {"expression": "__import__('os')"}) == (expected, True)
    assert tools.execute("calculate", {"expression": "9**9**9"}) == (f"Error: {GUARD_TEXT}", True)
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tools.execute("calculate", {"expression": "import os"}) == (f"Error: {CALC_FALLBACK}", True)
    assert CALC_FALLBACK not in expected
