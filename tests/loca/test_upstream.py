"""The upstream path (`upstream.GemToolEnv`) through the same adapter, against a stand-in `gem`
package with upstream's import paths and signatures (tests/loca/fake_gem; no MCP servers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.loca.conftest import call, make_env, score

FAKE = Path(__file__).parent / "fake_gem"


def toy_config() -> dict:
    return {
        "name": "ToyS2LEnv",
        "env_class": "gem.envs.toy_s2l.ToyS2LEnv",
        "env_params": {"seed": 7, "size": 1},
        "mcp_servers": {
            "filesystem": {"enabled": True, "type": "filesystem", "params": {"workspace_path": "{agent_workspace}"}},
            "memory": {"enabled": False, "type": "memory", "params": {}},
            "claim_done": {"enabled": True, "type": "claim_done", "params": {}},
        },
    }


@pytest.fixture
def fake_gem(monkeypatch):
    monkeypatch.syspath_prepend(str(FAKE))
    yield
    for name in [m for m in sys.modules if m == "gem" or m.startswith("gem.")]:
        monkeypatch.delitem(sys.modules, name, raising=False)


def test_upstream_env_runs_through_the_adapter(tmp_path, fake_gem):
    env = make_env(tmp_path, config=toy_config())
    assert env.request.text.startswith("Write 42") and env.task.task_id == "8k/ToyS2LEnv/seed_7"
    assert env.catalog["tools_by_role"]["side_effect"] == ["filesystem_write_file"]
    assert {d["name"] for d in env.catalog["domains"]} == {"filesystem", "claim_done"}
    reply, content = call(env, "filesystem_write_file", path="answer.txt", content="42")
    assert content == "Successfully wrote to answer.txt" and '"change": "created"' in reply.observation.note
    reply, content = call(env, "claim_done_claim_done")
    assert reply.request_done and content == "Task completion claimed."
    assert score(env)["success"] == 1


def test_upstream_wrong_answer_and_error_result(tmp_path, fake_gem):
    env = make_env(tmp_path, config=toy_config())
    reply, content = call(env, "filesystem_write_file", content="x")
    assert content.startswith("Error") and reply.observation.tool_results[0].error
    call(env, "filesystem_write_file", path="answer.txt", content="41")
    reply, _ = call(env, "claim_done_claim_done")
    assert reply.request_done and score(env)["success"] == 0


def test_upstream_tool_cap(tmp_path, fake_gem):
    env = make_env(tmp_path, config=toy_config(), max_tool_uses=1)
    call(env, "filesystem_write_file", path="answer.txt", content="42")
    reply, content = call(env, "claim_done_claim_done")
    assert reply.observation.tool_results[0].content == "[]" and not reply.request_done


def test_server_without_tools_fails_reset(tmp_path, fake_gem):
    cfg = toy_config()
    cfg["mcp_servers"]["memory"]["enabled"] = True
    from benchmarks.loca.interface import LocaSetupError

    with pytest.raises(LocaSetupError, match=r"servers without tools \['memory'\]"):
        make_env(tmp_path, config=cfg)
