"""ClinDiag's provider and judge send the PoS release's texts (benchmarks/clindiag_env.py:
PROVIDER_SYSTEM_PROMPT with each tool's scope, JUDGE_SYSTEM_PROMPT, JUDGE_USER_PROMPT) byte for
byte, as read back from a scripted run's records; the cell's manifest names the source; without
the pinned file the project's wording is used and listed as paraphrased."""

from __future__ import annotations

import ast
import json

from benchmarks.clindiag.benchmark import ClinDiag
from tests.rca100.sweeping import episodes, run_sweep
from tests.upstream_texts import fills, manifests, sent_calls, upstream_constant, upstream_file

ENV = "benchmarks/clindiag_env.py"


def test_scripted_run_sends_the_release_provider_and_judge_texts(tmp_path):
    provider = upstream_constant("PoS", ENV, "PROVIDER_SYSTEM_PROMPT")
    scopes = {v["scope"] for v in upstream_constant("PoS", ENV, "QUERY_TOOLS").values()}
    judge_system = upstream_constant("PoS", ENV, "JUDGE_SYSTEM_PROMPT")
    judge_user = upstream_constant("PoS", ENV, "JUDGE_USER_PROMPT")
    run_sweep(tmp_path, "clindiag")
    asked = sent_calls(tmp_path, "user_sim")
    assert asked, "no provider call was recorded"
    for call in asked:
        system = call.messages[0]["content"]
        assert fills(system, provider), system[:300]
        head = provider.split("{scope}")[0]
        assert any(system.startswith(head + s + provider.split("{scope}")[1].split("{record}")[0]) for s in scopes)
    judged = sent_calls(tmp_path, "judge")
    assert judged
    for call in judged:
        assert call.messages[0] == {"role": "system", "content": judge_system}
        assert fills(call.messages[1]["content"], judge_user)
        assert "- Final diagnosis: " in judge_user and call.messages[1]["content"].count("- Final diagnosis: ") == 2
    tree = ast.parse(upstream_file("PoS", ENV).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "provider_tool_schemas")
    query = next(n for n in ast.walk(fn) if isinstance(n, ast.JoinedStr))
    tools = upstream_constant("PoS", ENV, "QUERY_TOOLS")
    wanted = [eval(compile(ast.Expression(query), ENV, "eval"), {"spec": spec}) for spec in tools.values()]  # noqa: S307
    agent = sent_calls(tmp_path, "agent")
    assert agent
    for call in agent:
        text = "\n".join(
            str(m["content"]) for m in call.messages
        )  # Full Context: the tools block; PoS: its action schemas
        assert all(json.dumps(w, ensure_ascii=False) in text for w in wanted), text[:300]
    for m in manifests(tmp_path):
        ts = m["benchmark_notes"]["text_sources"]
        assert ts["paraphrased"] == [] and ts["prompts"]["judge.user"]["path"] == ENV
        assert ts["prompts"]["provider.system"]["symbol"] == "PROVIDER_SYSTEM_PROMPT"


def _release_no_record() -> str:
    """The no-record sentence written in the release's `ClinDiagCase.record_text`."""
    tree = ast.parse(upstream_file("PoS", ENV).read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ClinDiagCase")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "record_text")
    found = {
        n.value
        for n in ast.walk(fn)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("No record")
    }
    assert len(found) == 1, found
    return found.pop()


def test_missing_record_asks_the_provider_with_the_release_prompt(tmp_path):
    provider = upstream_constant("PoS", ENV, "PROVIDER_SYSTEM_PROMPT")
    scope = upstream_constant("PoS", ENV, "QUERY_TOOLS")["order_other_test"]["scope"]
    no_record = _release_no_record()
    want = provider.format(scope=scope, record=no_record)  # the release's ask_provider, filled as it fills it
    run_sweep(tmp_path, "clindiag", "benchmark.params.case_ids=[rare900]")  # the fixture case without other_test.json
    asked = sent_calls(tmp_path, "user_sim")
    missing = [c for c in asked if no_record in c.messages[0]["content"]]
    assert len(missing) == 2, [c.messages[0]["content"][-200:] for c in asked]  # one per method (full_context, pos)
    for call in missing:
        assert call.messages == [
            {"role": "system", "content": want},
            {"role": "user", "content": "Which results are recorded for this category?"},
        ]
    for m in manifests(tmp_path):
        assert m["benchmark_notes"]["text_sources"]["prompts"]["provider.no_record"]["source"] == "upstream"
    for method in ("full_context", "pos"):
        (ep,) = episodes(tmp_path, method)
        assert ep["calls_by_role"]["user_sim"] == 2 and ep["usage_by_role"]["user_sim"]["prompt_tokens"] > 0


def test_offline_the_project_wording_is_used_and_marked(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    b = ClinDiag(name="clindiag", data_dir="fixtures")
    notes = b.notes()["text_sources"]
    sections = ("history", "physical_exam", "lab", "radiographic", "other")
    assert set(notes["paraphrased"]) == {
        "provider.system",
        "provider.no_record",
        "judge.system",
        "judge.user",
        "tools",
        "pos.release.run_config.clindiag.raw.provider",  # the provider's and judge's request settings
        "pos.release.run_config.clindiag.raw.judge",
        "adapter.first_observation.clindiag",  # the release adapter's first observation
        *(f"provider.scope.{s}" for s in sections),
        *(f"tools.example.{s}" for s in sections),
    }
    assert all(
        v["source"] == "paraphrase" and "HARNESS_UPSTREAM_OFFLINE" in v["reason"] for v in notes["prompts"].values()
    )
