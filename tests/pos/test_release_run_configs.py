"""Conformance of the request settings with the PoS release's run configs: every method of
`pos_table1` runs a short episode on each PoS benchmark kind against a real HTTP server on
127.0.0.1 (the Qwen backbone config, thinking off and `top_p: 1.0` in it), and each request body is
compared with what the release's own code sends for that role. The expectation is computed from the
pinned release files independently of the project's loader: the run config parsed from the shared
copy, the Sentinel lane chosen by the release's own `sentinel_model_config` (executed from
`main.py`), and the request fields of `ModelCaller.__call__` (read from its `create(...)` call)."""

from __future__ import annotations

import ast
import asyncio
import json
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from runners.api import Backbone, Completion, Message, Protocol
from runners.backbones.openai import build_openai_backbone
from runners.episode import Episode
from runners.upstream import TextSources
from tests.fake_openai import FakeOpenAI
from tests.pos.helpers import TASK, LoopEnv, act
from tests.conftest import upstream_src
from tests.upstream_texts import upstream_file

REPO = Path(__file__).resolve().parents[2]
DIRS = {"alfworld": "alfworld", "loca": "loca", "rca": "rca100", "clindiag": "clindiag"}
METHODS = yaml.safe_load((REPO / "conf/experiment/pos_table1.yaml").read_text())["experiment"]["grid"]["method"]
POS_VARIANT = {"pos": "pos", "pos_no_consistency": "pos_no_consistency", "pos_no_trapping": "pos_no_trapping"}


def release_main() -> tuple[Callable[[dict[str, Any], str], dict[str, Any]], list[str]]:
    """The release's `sentinel_model_config` (executed) and the keyword names `ModelCaller.__call__`
    passes to `chat.completions.create` besides model and messages."""
    tree = ast.parse(upstream_file("PoS", "main.py").read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "sentinel_model_config")
    scope: dict[str, Any] = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "main.py", "exec"), scope)
    caller = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelCaller")
    create = next(
        n
        for n in ast.walk(caller)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "create"
    )
    return scope["sentinel_model_config"], [k.arg for k in create.keywords if k.arg not in ("model", "messages")]


def expected_body(block: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    """The request-body fields the release's client sends for a config block (`extra_body` is merged
    into the body by the OpenAI client)."""
    out: dict[str, Any] = {}
    for f in fields:
        if f == "extra_body":
            out.update(block.get("extra_body") or {})
        else:
            out[f] = block[f]
    return out


def expected(method: str, kind: str) -> dict[str, list[dict[str, Any]]]:
    """role -> the bodies the release sends for it (PoS: its run config; baselines: Raw's policy
    block for the policy and, §0.2, their auxiliary calls)."""
    lane, fields = release_main()
    variant = POS_VARIANT.get(method, "raw")
    cfg = yaml.safe_load(upstream_file("PoS", f"configs/{DIRS[kind]}/{variant}.yaml").read_text(encoding="utf-8"))
    agent = expected_body(cfg, fields)
    if variant == "raw":
        return {"agent": [agent], "state": [agent], "memory": [agent]}
    sentinel = cfg["context"]["sentinel"]
    return {
        "agent": [agent],
        "state": [expected_body(cfg["context"]["model"], fields)],
        "sentinel": [
            expected_body(lane(sentinel, "consistency"), fields),
            expected_body(lane(sentinel, "progress"), fields),
        ],
    }


class Tap(Backbone):
    """Passes every call to the real backbone, noting its role and protocol for the server's reply."""

    def __init__(self, inner: Backbone) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.roles: list[str] = []
        self.protocol: Protocol | None = None
        self.lock = threading.Lock()

    async def complete(
        self, messages: list[Message], *, role: str, protocol: Protocol | None = None, attempt: int = 0, **s: Any
    ) -> Completion:
        self.roles.append(role)
        self.protocol = protocol
        return await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **s)


def reply_for(tap: Tap) -> Callable[[dict[str, Any]], str]:
    def responder(body: dict[str, Any]) -> str:
        p = tap.protocol
        if p is None:
            return "ok"
        if hasattr(p, "minimal") and p.name != "pos_policy":
            return json.dumps(p.minimal())
        try:
            return p.render(act("look"))
        except Exception:  # a protocol without a renderer: its minimal reply
            return json.dumps(getattr(p, "minimal", lambda: {})())

    return responder


def method_params(name: str) -> dict[str, Any]:
    raw = yaml.safe_load((REPO / f"conf/method/{name}.yaml").read_text())
    params = dict(raw.get("params") or {})
    if "pos" in (raw.get("defaults") or []):
        base = yaml.safe_load((REPO / "conf/method/pos.yaml").read_text())
        merged = dict(base["params"])
        for k, v in params.items():
            merged[k] = {**merged[k], **v} if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
        return merged
    return params


def build(name: str, backbone: Backbone) -> Any:
    import importlib

    raw = yaml.safe_load((REPO / f"conf/method/{name}.yaml").read_text())
    target = raw.get("_target_") or yaml.safe_load((REPO / "conf/method/pos.yaml").read_text())["_target_"]
    mod, _, cls = target.rpartition(".")
    return getattr(importlib.import_module(mod), cls)(backbone, **method_params(name))


def run(name: str, kind: str) -> tuple[list[str], list[dict[str, Any]]]:
    cfg = yaml.safe_load((REPO / "conf/backbone/qwen3_7_plus.yaml").read_text())
    assert cfg["sampling"].get("top_p") is not None  # the backbone config does carry a top_p
    holder: dict[str, Tap] = {}
    with FakeOpenAI(responder=lambda body: reply_for(holder["tap"])(body)) as srv:
        backbone = build_openai_backbone(cfg, env={"QWEN_BASE_URL": srv.base_url, "QWEN_API_KEY": "k"})
        holder["tap"] = tap = Tap(backbone)
        ep = Episode(tap, cell=name, task_id="toy-1")
        env = LoopEnv(budget=3)
        env.view = lambda: TASK.model_copy(update={"kind": kind})  # type: ignore[method-assign]
        asyncio.run(ep.run(env, build(name, ep.agent)))
        asyncio.run(backbone.aclose())
    return tap.roles, list(srv.bodies)


@pytest.mark.parametrize("kind", list(DIRS))
@pytest.mark.parametrize("method", METHODS)
def test_every_request_follows_the_release_run_config_of_its_role(method, kind):
    want = expected(method, kind)
    roles, bodies = run(method, kind)
    assert roles and len(roles) == len(bodies)
    assert "agent" in roles
    if method in POS_VARIANT:
        assert "state" in roles and ("sentinel" in roles or method == "pos_no_consistency")  # belief, Sentinel calls
    for role, body in zip(roles, bodies):
        sent = {k: v for k, v in body.items() if k not in ("model", "messages")}
        assert "top_p" not in sent, f"{method}/{kind}/{role}: the release sends no top_p"
        assert sent in want[role], f"{method}/{kind}/{role}: sent {sent}, the release sends one of {want[role]}"


def test_the_manifest_names_the_run_config_of_each_setting():
    from baselines.pos_baselines.acon import Acon
    from pos.method import PoS

    upstream_src()
    prompts = PoS.notes(method_params("pos_no_trapping"), ("rca",))["text_sources"]["prompts"]
    audit = prompts["pos.release.run_config.rca.pos_no_trapping.audit"]
    assert audit["source"] == "upstream" and audit["path"] == "configs/rca100/pos_no_trapping.yaml"
    assert audit["symbol"] == "context.sentinel.model" and audit["settings"]["max_tokens"] == 4096
    assert audit["not_sent"] == ["top_p"]
    raw = Acon.notes(method_params("acon"), ("alfworld",))["text_sources"]["prompts"]
    entry = raw["pos.release.run_config.alfworld.raw.agent"]
    assert entry["path"] == "configs/alfworld/raw.yaml" and entry["settings"] == {
        "temperature": 0,
        "max_tokens": 512,
        "response_format": {"type": "json_object"},
    }


def test_without_the_release_file_the_project_settings_are_used_and_marked(monkeypatch, tmp_path):
    from kit import release_config

    sources = TextSources()
    assert release_config.raw_sampling("memoryarena", sources) == {} and not sources.entries
    monkeypatch.setenv("HARNESS_UPSTREAM_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    got = release_config.request_settings("loca", "pos", "audit", sources, {"max_completion_tokens": 7})
    assert got == {"max_completion_tokens": 7, "top_p": None}
    assert sources.paraphrased == ["pos.release.run_config.loca.pos.audit"]


def test_clindiag_provider_and_judge_follow_the_release_config():
    from benchmarks.clindiag.benchmark import ClinDiag

    upstream_src()
    b = ClinDiag(data_dir="fixtures")
    assert b.settings["provider_sampling"] == {"temperature": 0, "max_tokens": 1024, "top_p": None}
    assert b.settings["judge_sampling"]["max_tokens"] == 512
    assert b.settings["judge_sampling"]["response_format"] == {"type": "json_object"}
    own = ClinDiag(data_dir="fixtures", request_settings="project")
    assert own.settings["provider_sampling"] == {"temperature": 0.0, "max_completion_tokens": 1024}
