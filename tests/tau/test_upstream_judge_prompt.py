"""The NL-assertion judge sends tau2's prompts byte for byte (read at run time from the pinned
evaluator_nl_assertions.py), and says so in the manifest; offline it uses the project's wording."""

from __future__ import annotations

import ast

from benchmarks.tau.judge import NL_FILE, judge_messages, judge_prompts, transcript
from runners.upstream import TextSources, file_text
from tests.conftest import upstream_src

TRAJ = [
    {"role": "assistant", "content": "Hi! How can I help you today?"},
    {"role": "user", "content": "Cancel #W1 {now}."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
    {"role": "tool", "content": '{"a": 1}'},
]
ASSERTIONS = ["Agent cancels order #W1.", "Agent's reply is polite."]


def upstream_eval(name: str, **values) -> str:
    """Evaluate upstream's own assignment of `name` inside evaluate_nl_assertions."""
    tree = ast.parse(file_text(NL_FILE))
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "evaluate_nl_assertions")
    node = next(n for n in fn.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name)
    return eval(compile(ast.Expression(node.value), "<upstream>", "eval"), {}, values)  # noqa: S307


def test_judge_messages_equal_upstreams_byte_for_byte():
    upstream_src()
    sources = TextSources()
    msgs = judge_messages(TRAJ, ASSERTIONS, judge_prompts(sources))
    assert msgs[0] == {"role": "system", "content": upstream_eval("system_prompt")}
    assert msgs[1]["content"] == upstream_eval("user_prompt", trajectory_str=transcript(TRAJ), nl_assertions=ASSERTIONS)
    assert sources.entries["judge.system"]["source"] == sources.entries["judge.user"]["source"] == "upstream"


def test_offline_the_judge_uses_our_wording_and_records_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sources = TextSources()
    msgs = judge_messages(TRAJ, ASSERTIONS, judge_prompts(sources))
    assert "expectedOutcomes:\n" + repr(ASSERTIONS) in msgs[1]["content"] and "{now}" in msgs[1]["content"]
    assert sources.paraphrased == ["judge.system", "judge.user"]
