"""The LOCA adapter on the fixture: tools, one call per turn, errors, the tool cap, claim_done,
catalog roles, artifacts with their compact view, and the workspace output manifest."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.loca.benchmark import Loca
from benchmarks.loca.catalog import ROLES
from benchmarks.loca.interface import LocaSetupError
from benchmarks.loca.synth import fixture_config
from runners.api import Decision, EpisodeContext, ToolCall
from tests.loca.conftest import call, make_env, score


def send_right_emails(env):
    for a in env.env.truth["alerts"]:
        reply, content = call(env, "email_send_email", to=a["to"], subject=f"Low stock alert: {a['sku']}", body="low")
        assert content.startswith("Email sent")


def test_view_tools_catalog_roles_and_request(tmp_path):
    env = make_env(tmp_path)
    view = env.view()
    assert [t.name for t in view.tools] == [
        "woocommerce_list_products",
        "email_send_email",
        "filesystem_read_file",
        "python_execute_python_execute",
        "claim_done_claim_done",
    ]
    roles = env.catalog["tools_by_role"]
    assert list(roles) == list(ROLES)
    assert roles["side_effect"] == ["email_send_email"] and roles["finish"] == ["claim_done_claim_done"]
    assert roles["deterministic_compute"] == ["python_execute_python_execute"]
    assert roles["evidence_retrieval"] == ["filesystem_read_file"]
    assert {"name": "woocommerce", "tool_count": 1} in env.catalog["domains"]
    assert "tools_by_role" in view.policy and env.step_budget() == 100
    assert "stock_policy.md" in env.request.text


def test_right_emails_then_claim_done_succeed(tmp_path):
    env = make_env(tmp_path)
    _, content = call(env, "woocommerce_list_products", page=1, per_page=100)
    assert len(json.loads(content)) == 6
    send_right_emails(env)
    reply, _ = call(env, "claim_done_claim_done")
    assert reply.request_done
    s = score(env)
    assert s["success"] == 1 and s["reward"] == 1.0 and s["length"] == "8k"


def test_wrong_emails_fail(tmp_path):
    env = make_env(tmp_path)
    a = env.env.truth["alerts"][0]
    call(env, "email_send_email", to=a["to"], subject=f"Low stock alert: {a['sku']}", body="only one")
    reply, _ = call(env, "claim_done_claim_done")
    assert reply.request_done and score(env)["success"] == 0


def test_error_prefixed_results_and_bad_input_are_observations(tmp_path):
    env = make_env(tmp_path)
    reply, content = call(env, "filesystem_read_file", path="../../etc/passwd")
    assert content.startswith("Error: access denied") and reply.observation.tool_results[0].error
    _, content = call(env, "woocommerce_list_products", page="one")
    assert content.startswith("Error: argument 'page'")
    _, content = call(env, "email_send_email", to="x@y.z")
    assert content.startswith("Error: invalid arguments") and "subject" in content
    reply, content = call(env, "no_such_tool", a=1)
    assert content == "Tool 'no_such_tool' not found" and reply.observation.tool_results[0].error
    assert not reply.request_done and env.tool_uses == 3  # an unknown tool does not count (upstream)


def test_tool_exception_becomes_error_observation(tmp_path, monkeypatch):
    env = make_env(tmp_path)
    monkeypatch.setitem(env.env.tools, "woocommerce_list_products", lambda **_: 1 / 0)
    reply, content = call(env, "woocommerce_list_products")
    assert content.startswith("Error executing tool woocommerce_list_products: ZeroDivisionError")
    assert score(env)["issues"]["tool_exception"] == 1


def test_one_call_per_turn_and_no_call_spends_the_turn(tmp_path):
    env = make_env(tmp_path)
    two = Decision(
        tool_calls=[ToolCall(name="woocommerce_list_products", id="a"), ToolCall(name="claim_done_claim_done", id="b")]
    )
    reply = asyncio.run(env.act(two))
    assert len(reply.observation.tool_results) == 1 and "not executed" in reply.observation.note and not env.done
    reply = asyncio.run(env.act(Decision(message="thinking")))
    assert not reply.observation.tool_results and "spent" in reply.observation.note
    assert env.turn == 2 and env.tool_uses == 1


def test_tool_cap_returns_empty_list_without_ending(tmp_path):
    env = make_env(tmp_path, max_tool_uses=2)
    call(env, "woocommerce_list_products")
    reply, _ = call(env, "filesystem_read_file", path="stock_policy.md")
    assert "maximum number of tool uses" in reply.observation.note
    reply = asyncio.run(env.act(Decision(tool_calls=[ToolCall(name="claim_done_claim_done", id="z")])))
    assert reply.observation.tool_results[0].content == "[]" and not reply.request_done
    s = score(env)
    assert s["success"] == 0 and s["tool_use_counter"] == 2 and s["issues"]["over_tool_cap"] == 1


def test_long_json_result_becomes_artifact_with_compact_view(tmp_path):
    env = make_env(tmp_path, length="256k")
    _, content = call(env, "woocommerce_list_products", page=1, per_page=100)
    products = json.loads((env.env.db / "products.json").read_text())
    assert len(json.dumps(products)) > 8000
    path = env.workspace / "tool_results" / "tool_result_0001.json"
    record = json.loads(path.read_text())
    assert record["payload"] == products and record["payload_type"] == "array" and record["tool_use_counter"] == 1
    assert record["tool_name"] == "woocommerce_list_products" and len(record["raw_content_sha256"]) == 64
    assert "tool_results/tool_result_0001.json" in content and f"items: {len(products)}" in content
    assert json.dumps(products[:3], ensure_ascii=False) in content and products[3]["sku"] not in content
    assert len(content) < 3000 and "json.load" in content
    # the agent can read the artifact with the Python tool
    _, out = call(
        env,
        "python_execute_python_execute",
        code="import json; print(len(json.load(open('tool_results/tool_result_0001.json'))['payload']))",
    )
    assert f"\n{len(products)}\n" in out


def test_no_artifact_without_python(tmp_path, config_without_python):
    env = make_env(tmp_path, length="256k", config=config_without_python)
    _, content = call(env, "woocommerce_list_products", page=1, per_page=100)
    assert json.loads(content) and not (env.workspace / "tool_results").exists()


def test_workspace_manifest_and_result_check(tmp_path):
    env = make_env(tmp_path)
    code = (
        "import json; json.dump([1, 2, 3], open('out.json', 'w'));"
        "print(json.dumps({'path': 'out.json', 'record_count': 3}))"
    )
    reply, _ = call(env, "python_execute_python_execute", code=code)
    note = reply.observation.note
    assert '"path": "out.json"' in note and '"change": "created"' in note and '"change": "validated"' in note
    code = "open('out.json', 'w').write('[1]');import json;print(json.dumps({'path': 'out.json', 'record_count': 3}))"
    reply, _ = call(env, "python_execute_python_execute", code=code)
    assert '"change": "modified"' in reply.observation.note
    assert "has 1 records, the manifest says 3" in reply.observation.note


def test_config_errors_name_the_fix(tmp_path, monkeypatch):
    bad = fixture_config(42, "8k")
    del bad["env_params"]["seed"]
    with pytest.raises(LocaSetupError, match="env_params.seed"):
        make_env(tmp_path, config=bad)
    gem = dict(fixture_config(42, "8k"), env_class="gem.envs.woocommerce_stock_alert_s2l.woocommerce_stock_alert_s2l.X")
    with pytest.raises(LocaSetupError, match="pip install -e"):
        make_env(tmp_path / "b", config=gem)
    monkeypatch.delenv("LOCA_BENCH_DIR", raising=False)
    with pytest.raises(LocaSetupError, match="LOCA_BENCH_DIR"):
        Loca(data_dir=None).load_tasks()
    with pytest.raises(ValueError, match="benchmark 'loca': unknown param 'max_step'.*valid keys: .*max_turns"):
        Loca(data_dir="fixtures", max_step=3)


def test_placeholders_are_filled_and_workspace_removed(tmp_path):
    bench = Loca(data_dir="fixtures", lengths=["8k"], workspace_root=str(tmp_path))
    env = bench.make_env(bench.load_tasks()[0], EpisodeContext())
    assert env.env.fs_root == (env.task_dir / "agent_workspace").resolve()
    assert env.env.mail_dir == env.task_dir / "local_db" / "emails" and (env.env.mail_dir / "sent.jsonl").is_file()
    score(env)
    assert not env.task_dir.exists()


def test_metrics_pool_and_split_by_length():
    eps = [{"scores": {"success": s, "length": n}} for s, n in ((1, "8k"), (0, "8k"), (1, "256k"))]
    m = Loca(data_dir="fixtures").metrics(eps)
    assert m["task_success"] == pytest.approx(200 / 3) and m["success_8k"] == 50.0 and m["success_256k"] == 100.0
    assert "success_16k" not in m and m["n"] == 3.0
