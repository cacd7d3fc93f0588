"""MemoryArena Formal Reasoning's forced final call (upstream agent/math.py `_act_with_tools`):
after the tool iterations the model is told, in upstream's words read at run time, to answer
without tools, and that last decision's text is the answer; a model that never stops calling the
reasoning tool still gets the final call."""

import ast
import asyncio
import json

from benchmarks.memoryarena.formal import FormalReasoning
from runners.api import Backbone, Completion, Usage
from runners.episode import Episode
from tests.conftest import upstream_src
from tests.upstream_texts import upstream_file
from baselines.full_context import FullContext

CALL = (
    '<tool_calls>[{"name": "reasoning", "arguments": {"input": "think"}}]</tool_calls>'
    '<assistant_message>{"content": null}</assistant_message>'
)
BOTH = (
    '<tool_calls>[{"name": "reasoning", "arguments": {"input": "again"}}]</tool_calls>'
    '<assistant_message>{"content": "S_n = (1 - r^n)/(1 - r)"}</assistant_message>'
)


def final_user_message() -> str:
    """The user message upstream's `MathAgent._act_with_tools` appends last (read from the pinned file)."""
    tree = ast.parse(upstream_file("MemoryArena", "agent/math.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "MathAgent")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "_act_with_tools")
    users = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.Dict)
        and any(isinstance(k, ast.Constant) and k.value == "role" for k in n.keys)
        and any(isinstance(v, ast.Constant) and v.value == "user" for v in n.values)
    ]
    content = dict(zip((k.value for k in users[-1].keys), users[-1].values))["content"]  # type: ignore[union-attr]
    return ast.literal_eval(content)


class AlwaysTools(Backbone):
    """An agent that calls the reasoning tool every turn (the last one with an answer beside it)."""

    name = model = "always-tools"

    def __init__(self):
        self.agent_prompts = []
        self.final = final_user_message()

    async def complete(self, messages, *, role, protocol=None, attempt=0, **s):
        if role == "agent":
            self.agent_prompts.append(messages)
            last = self.final in json.dumps(messages[-1], ensure_ascii=False)
            text = BOTH if last else CALL
        elif role == "judge":
            text = "yes"
        else:
            text = "a derivation"
        return Completion(text=text, role=role, model="m", usage=Usage(prompt_tokens=1, completion_tokens=1))


def run(forced: bool):
    upstream_src()
    bench = FormalReasoning(
        name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures", forced_final=forced, limit=1
    )
    task = bench.load_tasks()[0]
    bb = AlwaysTools()
    ep = Episode(bb, cell="c", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), FullContext(ep.agent)))
    return rec, bb


def test_a_model_that_keeps_calling_tools_gets_upstream_final_call():
    rec, bb = run(True)
    assert rec.status == "ok", rec.error
    first = rec.requests[0]
    assert len(first.steps) == 4 and first.outcome["final_response"] == "S_n = (1 - r^n)/(1 - r)"
    final_prompt = json.dumps(bb.agent_prompts[3], ensure_ascii=False)
    assert bb.final in final_prompt  # upstream's final user message, read from the pinned file
    assert not any(bb.final in json.dumps(p, ensure_ascii=False) for p in bb.agent_prompts[:3])
    assert rec.scores["subtask_correct"][0] == 1


def test_switch_off_keeps_the_literal_budget():
    rec, _ = run(False)
    assert rec.requests[0].outcome["final_response"] is None and rec.scores["subtask_correct"][0] == 0
