"""MemoryArena's model-facing text comes from the pinned upstream files at run time: the Formal
Reasoning task policy (MathAgent's system prompt), the `reasoning` tool spec and prompts, and the
formal judge (MathEnvironment.judge); the manifest names each source."""

from __future__ import annotations

import ast

from benchmarks.memoryarena.formal import MATH_AGENT, FormalEnv, FormalReasoning, formal_prompts
from benchmarks.memoryarena.judge import MATH_ENV, judge_messages
from runners.api import EpisodeContext, TaskSpec
from runners.upstream import TextSources, file_text
from tests.conftest import upstream_src


def upstream_assignment(f, func: str, name: str):
    tree = ast.parse(file_text(f))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == func)
    return next(n for n in fn.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name).value


def evaluate(node, **values):
    return eval(compile(ast.Expression(node), "<upstream>", "eval"), {}, values)  # noqa: S307


def test_formal_policy_tool_and_judge_are_upstreams_byte_for_byte():
    upstream_src()
    sources = TextSources()
    p = formal_prompts(sources)
    assert p["policy"] == evaluate(upstream_assignment(MATH_AGENT, "_act_with_tools", "system_prompt"))
    assert p["tool"].openai_schema() == evaluate(upstream_assignment(MATH_AGENT, "_act_with_tools", "tools"))[0]
    prompt = evaluate(upstream_assignment(MATH_AGENT, "_reasoning_with_errors", "prompt"), task="2+2?")
    assert p["tool_user"].format(task="2+2?") == prompt
    msgs = evaluate(upstream_assignment(MATH_AGENT, "_reasoning_with_errors", "messages"), prompt=prompt)
    assert p["tool_system"] == msgs[0]["content"]
    judge_user = evaluate(
        upstream_assignment(MATH_ENV, "judge", "judge_prompt"), query=None, action="x", ground_truth="y"
    )
    judge = evaluate(upstream_assignment(MATH_ENV, "judge", "messages"), judge_prompt=judge_user)
    assert judge_messages("x", "y", None, p["judge"]) == judge
    src = file_text(MATH_AGENT)
    assert p["final_call"] in src and p["final_call"].startswith(
        "Use the prior reasoning tool results"
    )  # the forced final call
    assert sources.paraphrased == [] and len(sources.entries) == 7


async def test_environment_shows_the_upstream_policy_and_sends_the_upstream_tool_prompt():
    upstream_src()

    from runners.api import Backbone, Completion

    class Tool(Backbone):
        name = model = "t"
        seen: list = []

        async def complete(self, messages, *, role, protocol=None, attempt=0, **kw):
            self.seen.append(messages)
            return Completion(text="4", role=role, model="t")

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    task = bench.load_tasks()[0]
    tool = Tool()
    env = bench.make_env(task, EpisodeContext(backbones={"tool": tool, "judge": tool}))
    assert (
        env.view().policy == bench.prompts["policy"]
        and env.view().tools[0].description == bench.prompts["tool"].description
    )
    await env.next_request()
    await env._tool("reasoning", {"input": "2+2?"})
    assert tool.seen[0][1]["content"] == bench.prompts["tool_user"].format(task="2+2?") != "2+2?"
    assert bench.notes()["text_sources"]["prompts"]["policy"]["path"] == "agent/math.py"


def test_offline_the_formal_benchmark_records_paraphrase(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    params = {"name": "memoryarena_math", **FormalReasoning.Params(config="formal_reasoning_math").model_dump()}
    env = FormalEnv(
        TaskSpec(task_id="t", payload={"backgrounds": [""], "questions": ["q"], "answers": ["a"]}),
        EpisodeContext(),
        params,
    )
    assert "BACKGROUND" in env.view().policy
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    assert set(bench.notes()["text_sources"]["paraphrased"]) == {
        "policy",
        "reasoning_tool.spec",
        "reasoning_tool.system",
        "reasoning_tool.user",
        "judge.system",
        "judge.user",
        "final_call",
    }


def test_travel_policy_request_and_base_context_are_upstreams():
    from benchmarks.memoryarena.travel import TRAVEL_PROMPTS, GroupTravel
    from tests.conftest import shared_path

    upstream_src()
    b = GroupTravel(
        name="memoryarena_travel",
        db_dir=str(shared_path("memoryarena-travel-db")),
        flights_path="fixtures",
        data_dir="fixtures",
    )
    task = b.load_tasks()[0]
    env = b.make_env(task, EpisodeContext())
    tree = ast.parse(file_text(TRAVEL_PROMPTS))
    consts = {
        n.targets[0].id: n.value.value
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }
    view = env.view()
    assert view.policy.startswith(consts["AGENT_SYSTEM_PROMPT"]) and view.memory_policy == consts["AGENT_SYSTEM_PROMPT"]
    q = task.payload["questions"][0]
    assert env.requests[0].text == consts["AGENT_USER_PROMPT_TEMPLATE"].format(name="Eric", query=q)
    assert b.notes()["text_sources"]["paraphrased"] == []


def test_shopping_policy_is_the_webshop_agents_prompt():
    from benchmarks.memoryarena.shopping import WEBSHOP_AGENT, BundledShopping
    from runners.upstream import py_string

    upstream_src()
    b = BundledShopping(name="memoryarena_shopping", data_dir="fixtures", catalogue_path="fixtures")
    env = b.make_env(b.load_tasks()[0], EpisodeContext())
    tree = ast.parse(file_text(WEBSHOP_AGENT))
    node = next(
        n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "DEFAULT_SYSTEM_PROMPT"
    )
    assert env.view().policy == evaluate(node.value) == py_string(WEBSHOP_AGENT, "DEFAULT_SYSTEM_PROMPT")
    assert env.view().kind == "shopping" and b.notes()["text_sources"]["prompts"]["policy"]["source"] == "upstream"


def test_travel_tools_are_shown_as_upstreams_tool_schemas():
    from benchmarks.memoryarena.travel import TRAVEL_TOOLS, GroupTravel
    from runners.upstream import py_literal
    from tests.conftest import shared_path

    upstream_src()
    b = GroupTravel(
        name="memoryarena_travel",
        db_dir=str(shared_path("memoryarena-travel-db")),
        flights_path="fixtures",
        data_dir="fixtures",
    )
    view = b.make_env(b.load_tasks()[0], EpisodeContext()).view()
    tree = ast.parse(file_text(TRAVEL_TOOLS))
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TOOLS")
    assert [t.openai_schema() for t in view.tools] == ast.literal_eval(node.value) == py_literal(TRAVEL_TOOLS, "TOOLS")
    assert b.notes()["text_sources"]["prompts"]["tools"]["source"] == "upstream"
