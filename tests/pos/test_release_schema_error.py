"""The belief repair turn names a wrong key set as the release does: the `{schema_error}` is the
message the release's own `BeliefManager._validate_model_payload` (executed from the pinned
`belief/manager.py`) raises for the same reply; offline the project's wording, marked."""

from __future__ import annotations

import ast
import json

import pytest

from pos.protocols import DeltaProtocol, InitProtocol
from pos.repair_text import SOURCES, belief_repair, key_set_error, schema_error
from tests.upstream_texts import upstream_file


def release_error(reply: dict, operation: str) -> str:
    tree = ast.parse(upstream_file("PoS", "belief/manager.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BeliefManager")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_validate_model_payload")
    fn.decorator_list = []
    ns: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "manager.py", "exec"), ns)  # noqa: S102
    with pytest.raises((KeyError, TypeError, ValueError)) as e:
        ns["_validate_model_payload"](reply, operation)
    return str(e.value)


@pytest.mark.parametrize(
    ("protocol", "operation", "reply"),
    [
        (InitProtocol, "initialize", {"entities": [], "states": [], "notes": "x"}),
        (DeltaProtocol, "update", {"upsert_entities": [], "frontier": None, "extra_key": 1, "another": 2}),
    ],
)
def test_the_schema_error_is_the_releases(protocol, operation, reply):
    want = release_error(reply, operation)
    parsed = protocol().parse(json.dumps(reply))
    got = schema_error(parsed.errors)
    assert got == want
    assert want in belief_repair(got)
    assert SOURCES.entries["pos.belief_key_set_error"]["source"] == "upstream"


def test_without_the_file_the_project_wording_is_used(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert (
        key_set_error(["a", "b"], ["b"], ["c"]) == "key set must be exactly ['a', 'b']; missing ['b'], unexpected ['c']"
    )
    assert SOURCES.entries["pos.belief_key_set_error"]["source"] == "paraphrase"
