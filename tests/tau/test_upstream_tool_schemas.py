"""τ tool schemas as tau2-bench sends them: built at run time from the pinned upstream files and
compared field by field with the official tool lists (tool_schemas.json)."""

from __future__ import annotations

import json

import pytest

from benchmarks.tau.benchmark import TauBenchmark
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.retail import CONFIRM
from benchmarks.tau.upstream_tools import domain_tool_specs
from runners.upstream import TextSources
from tests.conftest import shared_path, upstream_src


def official(domain: str) -> list[dict]:
    p = shared_path("tau2-conformance", "tool_schemas.json")
    return json.loads(p.read_text())["domains"][domain]["tools"]


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_schemas_equal_the_official_tool_list_field_by_field(domain):
    upstream_src()
    sources = TextSources()
    ours = [s.openai_schema() for s in domain_tool_specs(domain, sources)]
    theirs = official(domain)
    assert [t["function"]["name"] for t in ours] == [t["function"]["name"] for t in theirs]
    for o, t in zip(ours, theirs):
        name = t["function"]["name"]
        assert o["function"]["description"] == t["function"]["description"], name
        op, tp = o["function"]["parameters"], t["function"]["parameters"]
        assert op.get("$defs") == tp.get("$defs"), name
        assert op.get("required") == tp.get("required"), name
        for arg, schema in tp["properties"].items():
            assert op["properties"][arg] == schema, (name, arg)
        assert o == t, name
    assert sources.entries["tools"]["source"] == "upstream" and sources.paraphrased == []


def test_harness_hints_are_off_by_default_and_a_switch():
    upstream_src()
    plain = {s.name: s for s in domain_tool_specs("airline")}
    assert "add up" not in json.dumps([s.model_dump() for s in plain.values()])
    hinted = {s.name: s for s in domain_tool_specs("airline", hints=True)}
    assert "add up" in hinted["book_reservation"].parameters["properties"]["payment_methods"]["description"]
    retail = {s.name: s.description for s in domain_tool_specs("retail", hints=True)}
    assert retail["modify_user_address"].endswith(CONFIRM) and CONFIRM not in retail["get_user_details"]
    assert all(CONFIRM not in s.description for s in domain_tool_specs("retail"))


def test_without_the_pinned_files_the_own_wording_is_used_and_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sources = TextSources()
    specs = domain_tool_specs("airline", sources)
    assert [s.name for s in specs] == list(toolkit_for("airline").ORDER)
    assert sources.paraphrased == ["tools", "tools.data_model"]
    assert "HARNESS_UPSTREAM_OFFLINE" in sources.entries["tools"]["reason"]


def test_benchmark_manifest_names_the_tool_schema_source(tmp_path):
    upstream_src()
    data = shared_path("tau2")
    bench = TauBenchmark(name="tau_airline", domain="airline", data_dir=str(data))
    notes = bench.notes()
    assert notes["text_sources"]["prompts"]["tools"]["path"] == "src/tau2/domains/airline/tools.py"
    assert bench.tool_specs()[0].parameters.get("$defs")


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_the_fallback_wording_is_our_own(domain):
    """The project's own tool descriptions (used only without the pinned files) repeat none of upstream's."""
    theirs = official(domain)
    ours = {s.name: s for s in toolkit_for(domain).specs()}
    for t in theirs:
        f = t["function"]
        assert ours[f["name"]].description.strip() != f["description"].strip(), f["name"]
        for arg, p in f["parameters"].get("properties", {}).items():
            assert ours[f["name"]].parameters["properties"][arg].get("description") != p.get("description"), (
                f["name"],
                arg,
            )
