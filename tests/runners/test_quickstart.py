"""`experiment=quickstart`: one command against any OpenAI-compatible URL works first time (every
role on the endpoint, the project's fixture, a small limit) and is marked as not the paper's setting."""

import json

from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import run_sweep


def test_quickstart_runs_against_an_openai_compatible_url_and_says_it_is_not_the_paper(tmp_path):
    with FakeOpenAI(responder=react_responder) as srv:
        env = {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "anything"}
        p = run_sweep(tmp_path, "experiment=quickstart", "backbone.model=my-model", env=env)
        bodies = list(srv.bodies)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "NOT the paper's setting" in p.stdout.splitlines()[1]  # said up front
    assert "4/4 episodes done" in p.stdout  # 2 methods x 2 tasks
    summary = (tmp_path / "quickstart" / "tables" / "summary.md").read_text()
    assert "NOT the paper's setting" in summary.splitlines()[0]
    assert "openai_compatible[my-model]" in summary
    assert bodies and all(b["model"] == "my-model" for b in bodies)
    assert not any("chat_template_kwargs" in b for b in bodies)  # a plain OpenAI request: no vendor fields
    assert {
        json.loads((d / "manifest.json").read_text())["config"]["roles"]["judge"] is None
        for d in (tmp_path / "quickstart").iterdir()
        if (d / "manifest.json").exists()
    } == {True}  # the judge on the agent's model
