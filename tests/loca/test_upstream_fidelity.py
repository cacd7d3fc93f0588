"""LOCA as upstream PoS's adapter runs it (benchmarks/adapter.py `_LOCABench`,
benchmarks/loca_capabilities.py): GemToolEnv built with upstream's arguments (against the stand-in
`gem` package, tests/loca/fake_gem; real GEM/LOCA cannot run here), the capability table read at
run time, transform stdout materialised, absolute artifact paths, and the runtime workspace shown
to PoS."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from pos.method import PoS
from runners.api import Observation, Request
from tests.loca.conftest import call, make_env
from tests.loca.test_upstream import fake_gem, toy_config  # noqa: F401  (fixture)
from tests.pos.helpers import QueueBackbone, act
from tests.conftest import upstream_src


def test_gem_env_gets_upstreams_arguments(tmp_path, fake_gem):  # noqa: F811
    from gem.tools.mcp_tool import MCPTool

    env = make_env(tmp_path, config=toy_config(), tool_timeout_s=33)
    tool = MCPTool.created[-1]
    assert tool.args == {"validate_on_init": False, "execution_timeout": 33.0, "fix_schema_for_openai": False}
    task_ws = env.task_dir.resolve()
    fs = tool.servers["filesystem"]["env"]
    assert fs["task_workspace"] == str(task_ws) and fs["agent_workspace"] == str(task_ws / "agent_workspace")
    assert fs["workspace_path"] == str(task_ws / "agent_workspace")  # {agent_workspace} filled
    assert fs["PATH"].split(":")[0] == str(Path(sys.executable).resolve().parent)
    assert (
        fs["LOCA_QUIET"] == "1" and fs["PYTHONUNBUFFERED"] == "1" and "npm_config_cache" not in fs
    )  # not an npx server
    assert (task_ws / "local_db").is_dir()
    assert call(env, "filesystem_write_file", path="answer.txt", content="42")[1] == "Successfully wrote to answer.txt"


def test_capability_table_from_upstream_reaches_the_catalog(tmp_path):
    upstream_src()  # the capability table is read from upstream's benchmarks/loca_capabilities.py
    env = make_env(tmp_path)
    caps = env.catalog["capabilities"]
    assert caps["claim_done_claim_done"]["effect"] == "finish"
    assert caps["python_execute_python_execute"]["effect"] == "transform"
    assert "woocommerce_list_products" not in caps  # unlisted tools stay semantically unknown
    assert '"capabilities"' in env.view().policy
    src = env.sources.as_manifest()
    assert (
        src["paraphrased"] == []
        and src["prompts"]["loca.tool_capabilities"]["path"] == "benchmarks/loca_capabilities.py"
    )


def test_transform_stdout_is_materialised_with_an_absolute_path(tmp_path):
    upstream_src()  # which tools transform comes from upstream's capability table
    env = make_env(tmp_path)
    _, out = call(env, "python_execute_python_execute", code="print('x' * 9000)")  # long, not JSON
    path = env.workspace.resolve() / "tool_results" / "tool_result_0001.json"
    assert path.is_file() and json.loads(path.read_text())["payload_type"] == "text"
    assert f"artifact: {path}" in out  # absolute, as upstream's agent_artifact_dir
    env2 = make_env(tmp_path / "off", artifacts={"materialize_transform_stdout": False})
    _, out2 = call(env2, "python_execute_python_execute", code="print('x' * 9000)")
    assert "artifact:" not in out2 and len(out2) > 9000


def test_pos_prompt_shows_the_runtime_workspace(tmp_path):
    env = make_env(tmp_path)
    view = env.view()
    assert view.workspace == str(env.task_dir.resolve()) and Path(view.workspace).is_absolute()

    def user_prompt(**params):
        bb = QueueBackbone({"pos-policy": [act("look")]})

        async def go():
            m = PoS(bb, **params)
            await m.begin_task(view)
            await m.begin_request(Request(index=0, request_id="x/q1", text=env.user_prompt))
            await m.step(Observation())

        asyncio.run(go())
        return next(msgs for _, p, msgs in bb.calls if p == "pos-policy")[1]["content"]

    from pos.release_prompt import REACT_PROMPT
    from runners.upstream import py_function_strings

    assert f"<runtime_workspace>\n{view.workspace}\n</runtime_workspace>" in user_prompt(policy_prompt="project")
    upstream_src()  # the release's line is read from upstream's prompt file
    runtime = next(
        t for t in py_function_strings(REACT_PROMPT, "build_belief_prompt") if "{runtime}" in t
    )  # the release's line
    assert runtime.replace("{runtime}", view.workspace) in user_prompt()
