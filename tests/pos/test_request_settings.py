"""Per-role request settings reach the request body (upstream PoS sends each role's `max_tokens`
and `extra_body: {enable_thinking: false, response_format: {type: json_object}}`): a PoS episode
against a real HTTP server on 127.0.0.1 with the Qwen backbone config, bodies inspected per role."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml

from pos.method import PoS
from pos.prompts import AUDIT_SYSTEM, BELIEF_TEXT_SYSTEM, DELTA_SYSTEM, INIT_SYSTEM, PROGRESS_SYSTEM
from pos.protocols import (
    AuditProtocol,
    BeliefTextProtocol,
    DeltaProtocol,
    InitProtocol,
    PolicyProtocol,
    ProgressProtocol,
)
from runners.backbones.openai import OpenAIBackbone, build_openai_backbone
from runners.episode import Episode
from tests.fake_openai import FakeOpenAI
from tests.pos.helpers import TASK, LoopEnv, act

REPO = Path(__file__).resolve().parents[2]
CALLS = [
    (INIT_SYSTEM, "init", InitProtocol),
    (DELTA_SYSTEM, "delta", DeltaProtocol),
    (AUDIT_SYSTEM, "audit", AuditProtocol),
    (PROGRESS_SYSTEM, "progress", ProgressProtocol),
    (BELIEF_TEXT_SYSTEM, "text", BeliefTextProtocol),
]


def kind_of(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    return next((k for head, k, _ in CALLS if system.startswith(head[:40])), "policy")


def responder(body: dict[str, Any]) -> str:
    kind = kind_of(body)
    for _, k, proto in CALLS:
        if k == kind:
            return json.dumps(proto().minimal())
    return PolicyProtocol().render(act("look"))


def _run(params_over: dict[str, Any] | None = None, kind: str = "") -> tuple[FakeOpenAI, Any]:
    cfg = yaml.safe_load((REPO / "conf/backbone/qwen3_7_plus.yaml").read_text())
    mparams = (
        yaml.safe_load((REPO / "conf/method/pos.yaml").read_text())["params"]
        | {"belief_prompts": "project"}
        | (params_over or {})
    )
    with FakeOpenAI(responder=responder) as srv:
        backbone = build_openai_backbone(cfg, env={"QWEN_BASE_URL": srv.base_url, "QWEN_API_KEY": "k"})
        assert isinstance(backbone, OpenAIBackbone)
        ep = Episode(backbone, cell="pos", task_id="toy-1")
        env = LoopEnv(budget=3)
        env.view = lambda: TASK.model_copy(update={"kind": kind})  # type: ignore[method-assign]
        rec = asyncio.run(ep.run(env, PoS(ep.agent, **mparams)))
        asyncio.run(backbone.aclose())
    return srv, rec


def test_request_body_carries_each_roles_settings():
    srv, rec = _run()
    assert rec.status == "ok", rec.error
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for b in srv.bodies:
        by_kind.setdefault(kind_of(b), []).append(b)
    assert {"init", "delta", "audit", "progress", "text", "policy"} <= set(by_kind)
    for kind, bodies in by_kind.items():
        for b in bodies:
            assert b["enable_thinking"] is False  # Qwen backbone: thinking off, as upstream
            assert (
                b["temperature"] == 0 and b["max_tokens"] == 4096 and "max_completion_tokens" not in b
            )  # the role's limit, under the endpoint's name
            assert b["response_format"] == {"type": "json_object"}  # every role, the policy included, as upstream


def test_kind_override_keeps_json_mode_and_sets_the_roles_limit():
    srv, rec = _run(kind="alfworld")  # pos.yaml's kind_overrides.alfworld
    assert rec.status == "ok", rec.error
    audits = [b for b in srv.bodies if kind_of(b) == "audit"]
    policy = [b for b in srv.bodies if kind_of(b) == "policy"]
    assert audits and all(b["max_tokens"] == 512 and b["response_format"] == {"type": "json_object"} for b in audits)
    assert policy and all(b["max_tokens"] == 512 for b in policy)


def test_token_limit_is_sent_under_the_config_name():
    b = OpenAIBackbone(
        name="x", model="m", base_url="http://127.0.0.1:9", api_key=None, sampling={"max_completion_tokens": 100}
    )
    assert b.request_body([], {"max_tokens": 5}) == {"model": "m", "messages": [], "max_completion_tokens": 5}
    b2 = OpenAIBackbone(name="x", model="m", base_url="http://127.0.0.1:9", api_key=None, sampling={"max_tokens": 100})
    assert b2.request_body([], {"max_completion_tokens": 5, "response_format": {"type": "json_object"}}) == {
        "model": "m",
        "messages": [],
        "max_tokens": 5,
        "response_format": {"type": "json_object"},
    }
    assert b2.request_body([], {}) == {"model": "m", "messages": [], "max_tokens": 100}
