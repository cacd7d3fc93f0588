"""The PoS release adapter's wrappers (`benchmarks/adapter.py`) on the PoS benchmarks: the task is
the bare task JSON (RCA-100, ClinDiag), the first observation the release's fixed sentence (read
here independently from the pinned file), tool results reach the policy without a call label, and
`Current observation:` is the last action's. Checked on what Raw (`full_context`) and PoS send, with
the project's wrappers behind `adapter: project`."""

from __future__ import annotations

import ast
import asyncio
import json

import pytest

from baselines.full_context import FullContext
from benchmarks.clindiag.benchmark import ClinDiag
from benchmarks.rca100.benchmark import Rca100
from pos.method import PoS
from benchmarks.rca100.synth import write_fixture
from runners.api import Backbone, Completion
from runners.backbones.scripted import ScriptedBackbone
from runners.episode import Episode
from tests.conftest import upstream_src
from tests.upstream_texts import upstream_file


@pytest.fixture(scope="module")
def rca_root(tmp_path_factory):
    return write_fixture(tmp_path_factory.mktemp("rca_synth"))


class Recording(Backbone):
    """The scripted backbone, every request's role and messages kept."""

    def __init__(self, inner: Backbone | None = None, requests: list[dict] | None = None) -> None:
        self.inner = inner or ScriptedBackbone()
        self.name, self.model = self.inner.name, self.inner.model
        self.requests: list[dict] = [] if requests is None else requests

    def bind(self, scope) -> Backbone:  # the scripted answers come from the episode's oracle
        return Recording(self.inner.bind(scope), self.requests)

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling) -> Completion:
        self.requests.append({"role": role, "messages": messages})
        return await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)


def release_first_observation(cls: str) -> str:
    """The string the release's `<cls>.reset` assigns to `observation` (its own ast, not the project's)."""
    tree = ast.parse(upstream_file("PoS", "benchmarks/adapter.py").read_text(encoding="utf-8"))
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    reset = next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == "reset")
    node = next(
        n for n in ast.walk(reset) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "observation"
    )
    return ast.literal_eval(node.value)


def run(bench, method_cls, **params):
    task = bench.load_tasks()[0]
    bb = Recording()
    ep = Episode(bb, cell="c", task_id=task.task_id)
    rec = asyncio.run(ep.run(ep.make_env(bench, task), method_cls(ep.agent, **params)))
    return rec, bb


def policy_prompts(bb) -> list[str]:
    return [c["messages"][-1]["content"] for c in bb.requests if c["role"] == "agent"]


@pytest.mark.parametrize("method_cls", [FullContext, PoS])
def test_rca_task_first_observation_and_bare_results(rca_root, method_cls):
    sentence = release_first_observation("_RCA100")
    bench = Rca100(name="rca100", data_dir=str(rca_root))
    task = bench.load_tasks()[0]
    rec, bb = run(bench, method_cls)
    req = rec.requests[0].request
    assert req.observation == sentence
    assert req.text == json.dumps(
        {k: v for k, v in task.payload["task"].items() if k != "prompt_text"}, ensure_ascii=False, indent=2
    )
    prompts = policy_prompts(bb)
    assert rec.status == "ok" and len(prompts) >= 3  # tool results came back before the submission
    first = prompts[0]
    assert f"Current observation:\n{sentence}\n" in first
    if method_cls is FullContext:
        assert f"Task:\n{req.text}\n" in first
    else:  # PoS: the belief model's initial prompt shows the task (the release's state["task"])
        init = next(c["messages"][-1]["content"] for c in bb.requests if c["role"] == "state")
        assert f"Task:\n{req.text}\n" in init
    assert all("[call-" not in p and "-> " not in p.split("Previous steps:")[-1] for p in prompts)
    assert bench.notes()["text_sources"]["prompts"]["adapter.first_observation.rca"]["source"] == "upstream"


def test_clindiag_task_and_first_observation():
    sentence = release_first_observation("_ClinDiag")
    bench = ClinDiag(name="clindiag", data_dir="fixtures", provider="keyword", judge="scripted")
    task = bench.load_tasks()[0]
    rec, bb = run(bench, FullContext)
    req = rec.requests[0].request
    p = task.payload
    assert json.loads(req.text) == {
        "case_id": f"{p['subset']}/{p['case_id']}",
        "subset": p["subset"],
        "initial_presentation": p["initial_raw"],
    }
    assert req.observation == sentence and f"Current observation:\n{sentence}\n" in policy_prompts(bb)[0]


def test_project_adapter_keeps_the_labelled_task(rca_root):
    upstream_src()  # Raw's release interface needs the pinned texts
    bench = Rca100(name="rca100", data_dir=str(rca_root), adapter="project")
    rec, bb = run(bench, FullContext)
    req = rec.requests[0].request
    assert req.text.startswith("Incident task:\n") and req.observation is None
    assert "Current observation:\nIncident task:" in policy_prompts(bb)[0]
    with pytest.raises(ValueError, match="adapter"):
        Rca100(name="rca100", data_dir=str(rca_root), adapter="mine").load_tasks()


def test_pos_passes_the_decisions_action_object(rca_root):
    """Belief updates, audits and progress inputs carry the action as the decision's object, as the
    release does, never a JSON-encoded string of it."""
    upstream_src()  # the release interface needs the pinned texts
    rec, bb = run(Rca100(name="rca100", data_dir=str(rca_root)), PoS)
    assert rec.status == "ok"
    state = [json.dumps(c["messages"], ensure_ascii=False) for c in bb.requests if c["role"] in ("state", "sentinel")]
    want = json.dumps({"action": {"name": "get_data_overview", "arguments": {}}}, ensure_ascii=False)[1:-1]
    assert any(json.dumps(want, ensure_ascii=False)[1:-1] in s for s in state)
    assert not any('\\"action\\": \\"{' in s for s in state)
