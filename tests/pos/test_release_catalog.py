"""LOCA's `Available actions:` in PoS's policy prompt and in its baselines' release interface is
what the release's own `build_loca_tool_catalog` (run from the shared copy) makes of the same
tools; without the release it is the plain list of schemas, recorded paraphrased."""

from __future__ import annotations

import ast
import json
import re

from runners.api import ToolSpec
from runners.upstream import TextSources
from tests.pos.helpers import TASK
from tests.upstream_texts import upstream_file

REACT = "prompts/react_prompt.py"
TOOLS = [
    ToolSpec(name="canvas_list_courses", description="[canvas] List courses."),
    ToolSpec(name="canvas_create_announcement", description="[canvas] Post an announcement."),
    ToolSpec(name="emails_read_message", description="[emails] Read one message."),
    ToolSpec(name="python_execute", description="Run Python code."),
    ToolSpec(name="local-claim_done", description="[claim_done] Finish the task."),
    ToolSpec(name="get_dataset_info", description="[woocommerce] Describe a dataset."),
    ToolSpec(name="terminal_run", description="[terminal] Run a shell command."),
    ToolSpec(name="memory_ponder", description="Think."),
    ToolSpec(name="Canvas_Search_Users", description="[canvas] Find users."),
]
LOCA = TASK.model_copy(update={"kind": "loca", "tools": TOOLS})


def release_catalog(actions: list) -> object:
    ns: dict = {}
    exec(compile(upstream_file("PoS", REACT).read_text(), "react_prompt.py", "exec"), ns)  # noqa: S102
    return ns["build_loca_tool_catalog"](actions)


def action_field(func: str, field: str, user: str) -> str:
    """The text `user` (a filled `user_prompt` of `func`) holds at the f-string field `field`."""
    tree = ast.parse(upstream_file("PoS", REACT).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
    node = next(
        n for n in ast.walk(fn) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "user_prompt"
    )
    parts, index = [], None
    for v in node.value.values:
        if isinstance(v, ast.Constant):
            parts.append(re.escape(v.value))
        else:
            index = len([p for p in parts if p == "(.*?)"]) if ast.unparse(v.value) == field else index
            parts.append("(.*?)")
    m = re.fullmatch("".join(parts), user, re.DOTALL)
    assert m and index is not None, user[:500]
    return m.group(index + 1)


def test_pos_policy_prompt_shows_the_release_catalog_on_loca():
    from tests.pos.test_policy_prompt import policy_prompt

    want = json.dumps(release_catalog([t.openai_schema() for t in TOOLS]), ensure_ascii=False)
    _, _, user = policy_prompt(task=LOCA)
    got = action_field("build_belief_prompt", "json.dumps(action_view, ensure_ascii=False)", user)
    assert got == want
    servers, roles = json.loads(got).values()  # the catalog, not the list
    assert len(servers) == 7 and len(roles) == 6  # every role of the release is exercised


def test_baselines_release_interface_shows_the_release_catalog_on_loca():
    from pos.release_react import action_view, raw_messages, raw_texts
    from tests.conftest import upstream_src

    upstream_src()  # skips, naming what is missing, without the shared pinned copies
    sources = TextSources()
    texts = raw_texts("loca", 1, sources)
    assert texts is not None and "pos.release.build_loca_tool_catalog" not in sources.paraphrased
    actions = action_view(None, TOOLS)
    msgs = raw_messages(texts, task_text="t", observation="o", actions=actions, history="[]")
    got = action_field("build_prompt", "json.dumps(actions, ensure_ascii=False)", msgs[1]["content"])
    assert got == json.dumps(release_catalog(actions), ensure_ascii=False)
    alf = raw_texts("alfworld", 1, TextSources())  # other benchmarks keep the list
    assert alf is not None
    msgs = raw_messages(alf, task_text="t", observation="o", actions=["look"], history="[]")
    assert action_field("build_prompt", "json.dumps(actions, ensure_ascii=False)", msgs[1]["content"]) == '["look"]'


def test_without_the_release_the_list_is_shown_and_recorded_paraphrased(monkeypatch, tmp_path):
    from pos.release_catalog import record_catalog, view
    from pos.release_prompt import REACT_PROMPT

    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HARNESS_UPSTREAM_OFFLINE", "1")
    sources = TextSources()
    rules = record_catalog(sources, REACT_PROMPT)
    assert rules is None and "pos.release.build_loca_tool_catalog" in sources.paraphrased
    schemas = [t.openai_schema() for t in TOOLS]
    assert view(rules, schemas) == schemas
