"""A dead endpoint is found before the sweep starts (bounded), connection refused in the middle
of a sweep is fatal after a short bounded window with the URL named, and retries show live."""

import asyncio
import socket
import time

import pytest

from runners.api import BackboneError
from runners.backbones.openai import OpenAIBackbone
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import record_files, run_sweep

SMALL = (
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "experiment.name=exp",
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "backbone.timeout_s=2",
    "backbone.backoff_cap_s=0.1",
    "roles.judge=agent",
    "roles.tool=agent",
)


def dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connection refused
    return f"http://127.0.0.1:{port}/v1"


def test_dead_endpoint_fails_before_any_episode_naming_the_url(tmp_path):
    url = dead_url()
    t0 = time.time()
    p = run_sweep(
        tmp_path, *SMALL, "runner.preflight_s=1", env={"OPENAI_COMPAT_BASE_URL": url, "OPENAI_COMPAT_API_KEY": "k"}
    )
    assert p.returncode == 3 and url in p.stderr and "refused" in p.stderr and "base_url" in p.stderr
    assert time.time() - t0 < 30
    assert not record_files(tmp_path) and not any(tmp_path.rglob("errors.jsonl"))


def test_refused_in_the_middle_is_fatal_after_a_short_window():
    url = dead_url()
    b = OpenAIBackbone(
        name="x",
        model="m",
        base_url=url,
        api_key="k",
        max_retries=1000,
        backoff_cap_s=0.05,
        backoff_base_s=0.01,
        timeout_s=1,
        refused_window_s=0.5,
    )
    t0 = time.perf_counter()
    with pytest.raises(BackboneError) as ei:
        asyncio.run(b.complete([{"role": "user", "content": "hi"}], role="agent"))
    assert ei.value.fatal and url in str(ei.value) and "refused" in str(ei.value)
    assert time.perf_counter() - t0 < 5


def test_retries_are_shown_live(tmp_path):
    with FakeOpenAI(responder=react_responder, fault_rate=0.3, faults=("429", "500"), seed=1) as srv:
        url = srv.base_url
        p = run_sweep(tmp_path, *SMALL, env={"OPENAI_COMPAT_BASE_URL": url, "OPENAI_COMPAT_API_KEY": "k"})
    assert p.returncode == 0, p.stderr
    assert "retrying" in p.stdout and url in p.stdout
