"""The FlowState-paper backbones send exactly B.5's request settings (temperature 0.1, top_p 1.0,
max_completion_tokens 32768, enable_thinking false) and nothing else, in the body the OpenAI
backbone actually posts (a real loopback server)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from runners.backbones.openai import OpenAIBackbone
from tests.fake_openai import FakeOpenAI

CONF = Path(__file__).resolve().parents[2] / "conf" / "backbone"
B5 = {"temperature": 0.1, "top_p": 1.0, "max_completion_tokens": 32768, "enable_thinking": False}


@pytest.mark.parametrize("name", ["deepseek_v4_flash", "gpt_5_6_terra", "qwen3_5_397b"])
def test_paper_backbones_send_b5_and_nothing_else(name):
    cfg = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    assert {**cfg["sampling"], **cfg["extra_body"]} == B5
    with FakeOpenAI() as srv:
        bb = OpenAIBackbone(
            name=name,
            model=cfg["model"],
            base_url=srv.base_url,
            api_key="k",
            sampling=cfg["sampling"],
            extra_body=cfg["extra_body"],
            timeout_s=5.0,
            max_retries=0,
        )
        asyncio.run(bb.complete([{"role": "user", "content": "hi"}], role="agent"))
    body = srv.bodies[-1]
    assert {k: v for k, v in body.items() if k not in ("model", "messages", "stream", "stream_options")} == B5
