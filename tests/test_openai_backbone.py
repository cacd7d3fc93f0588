"""OpenAIBackbone against a real HTTP server on 127.0.0.1 (tests/fake_openai.py)."""

from __future__ import annotations

import asyncio
import email.utils
import gc
import itertools
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import pytest
import yaml

from runners.api import BackboneError, Usage
from runners.backbones.openai import (
    OpenAIBackbone,
    build_openai_backbone,
    map_usage,
    plain_usage,
    retry_after_s,
    usage_bounds,
    usage_problem,
)
from runners.tokens import estimate_usage
from tests.conftest import REPO
from tests.fake_openai import FakeOpenAI, RawHTTP, completion_bytes

KEY = "sk-test-SECRET-0123456789abcdef"
MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what is two plus two"}]
# The default client (runners/backbones/h1.py) and the former one: every transport-level test runs on both.
CLIENTS = ["h1", "aiohttp"]


def make(srv: FakeOpenAI, **kw) -> OpenAIBackbone:
    opts = dict(
        name="fake",
        model="fake-model",
        base_url=srv.base_url,
        api_key=KEY,
        sampling={"temperature": 0.1, "top_p": 1.0},
        extra_body={"thinking": {"type": "disabled"}},
        timeout_s=1.0,
        max_retries=4,
        backoff_cap_s=0.05,
        backoff_base_s=0.01,
    )
    opts.update(kw)
    return OpenAIBackbone(**opts)


@pytest.fixture
def srv():
    with FakeOpenAI(hang_s=1.5) as s:
        yield s


async def test_request_body_reply_and_usage(srv):
    b = make(srv)
    c = await b.complete(MSGS, role="judge", temperature=0.0, extra_body={"seed": 7})
    body = srv.bodies[0]
    assert body["model"] == "fake-model" and body["messages"] == MSGS
    assert body["temperature"] == 0.0 and body["top_p"] == 1.0  # per-call override wins over config
    assert body["thinking"] == {"type": "disabled"} and body["seed"] == 7  # extra_body merged
    assert "protocol" not in body and "attempt" not in body
    assert srv.auth_headers[0] == f"Bearer {KEY}"
    assert c.text.startswith("reply ") and c.role == "judge" and c.finish_reason == "stop" and not c.retries
    assert c.usage.source == "api" and c.usage.prompt_tokens == 7 and c.usage.completion_tokens == 2
    assert c.raw_usage == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    assert KEY not in c.model_dump_json() and KEY not in repr(b)
    await b.aclose()


async def test_retry_after_seconds_is_honoured(srv):
    srv.retry_after = "0.3"
    srv.enqueue("429")
    b = make(srv, backoff_base_s=0.0, backoff_cap_s=1.0)  # own backoff would be 0 s: any wait comes from Retry-After
    t0 = time.perf_counter()
    c = await b.complete(MSGS, role="agent")
    assert time.perf_counter() - t0 >= 0.3
    assert [(r.error, r.wait_s) for r in c.retries] == [("HTTP 429", 0.3)]
    assert srv.requests == 2


async def test_retry_after_above_cap_is_capped(srv):
    srv.retry_after = "30"
    srv.enqueue("429")
    b = make(srv, backoff_cap_s=0.1)
    t0 = time.perf_counter()
    c = await b.complete(MSGS, role="agent")
    assert time.perf_counter() - t0 < 2
    assert c.retries[0].wait_s == 0.1 and c.retries[0].error == "HTTP 429"


def test_retry_after_parsing():
    now = 1_700_000_000.0
    assert retry_after_s({"retry-after": "2.5"}) == 2.5
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(now + 5, usegmt=True)
    assert retry_after_s({"retry-after": date}, now=now) == pytest.approx(5, abs=1)
    assert retry_after_s({"retry-after": email.utils.formatdate(now - 50, usegmt=True)}, now=now) == 0.0
    assert retry_after_s({"retry-after": "soon"}) is None and retry_after_s({}) is None


def test_backoff_is_full_jitter_and_capped(srv):
    b = make(srv, backoff_base_s=1.0, backoff_cap_s=8.0)
    waits = [b.backoff_s(n) for n in range(12) for _ in range(50)]
    assert all(0 <= w <= 8.0 for w in waits)
    late = [b.backoff_s(10) for _ in range(200)]
    assert max(late) > 6 and min(late) < 2  # jitter spans [0, cap], not a fixed sleep
    assert all(b.backoff_s(0) <= 1.0 for _ in range(50))


@pytest.mark.parametrize("transport", CLIENTS)
@pytest.mark.parametrize("kind", ["429", "500", 503, 408, 409, "hang", "reset", "malformed", "nochoices"])
async def test_transient_faults_are_retried(srv, kind, transport):
    srv.enqueue(kind)
    b = make(srv, transport=transport)
    c = await b.complete(MSGS, role="agent")
    await b.aclose()
    assert c.text.startswith("reply ") and srv.requests == 2
    assert len(c.retries) == 1 and c.retries[0].attempt == 0
    assert KEY not in c.retries[0].error


@pytest.mark.parametrize(
    "status,fix",
    [(400, "sampling"), (401, "api_key_env"), (403, "permissions"), (404, "base_url"), (422, "extra_body")],
)
async def test_config_errors_fail_fast(srv, status, fix):
    srv.mode = status
    with pytest.raises(BackboneError) as ei:
        await make(srv).complete(MSGS, role="agent")
    e = ei.value
    assert e.fatal and srv.requests == 1 and not e.retries
    msg = str(e)
    assert f"HTTP {status}" in msg and srv.base_url in msg and fix in msg
    assert KEY not in msg and KEY not in repr(e.args)  # the fake echoes the Authorization header


async def test_quota_exhaustion_is_fatal(srv):
    srv.mode = "quota"
    with pytest.raises(BackboneError) as ei:
        await make(srv).complete(MSGS, role="agent")
    assert ei.value.fatal and "quota" in str(ei.value) and srv.requests == 1


async def test_context_overflow_is_episode_level_not_fatal(srv):
    srv.mode = "context"
    with pytest.raises(BackboneError) as ei:
        await make(srv).complete(MSGS, role="agent")
    assert not ei.value.fatal and "context window" in str(ei.value) and srv.requests == 1
    assert ei.value.context_overflow


async def test_fatal_after_retries_keeps_the_retry_log(srv):
    srv.enqueue("500", "reset")
    srv.mode = 401
    with pytest.raises(BackboneError) as ei:
        await make(srv).complete(MSGS, role="agent")
    assert ei.value.fatal and len(ei.value.retries) == 2 and srv.requests == 3


async def test_max_retries_exhausted_is_non_fatal_with_log(srv):
    srv.mode = 500
    with pytest.raises(BackboneError) as ei:
        await make(srv, max_retries=3).complete(MSGS, role="agent")
    e = ei.value
    assert not e.fatal and srv.requests == 4
    assert [r.attempt for r in e.retries] == [0, 1, 2] and all(r.error == "HTTP 500" for r in e.retries)
    assert all(0 <= r.wait_s <= 0.05 for r in e.retries)
    assert "after 4 attempts" in str(e) and KEY not in str(e)


@pytest.mark.parametrize("transport", CLIENTS)
async def test_connection_refused_is_retried_then_non_fatal(transport):
    with FakeOpenAI() as s:
        url = s.base_url
    b = OpenAIBackbone(
        name="x",
        model="m",
        base_url=url,
        api_key=KEY,
        max_retries=2,
        backoff_base_s=0.01,
        timeout_s=1,
        transport=transport,
    )
    with pytest.raises(BackboneError) as ei:
        await b.complete(MSGS, role="agent")
    assert not ei.value.fatal and len(ei.value.retries) == 2 and KEY not in str(ei.value)
    assert all(r.error.startswith("connection refused") for r in ei.value.retries)  # refused, not another fault


@pytest.mark.parametrize(
    "raw,expect",
    [
        (
            {
                "prompt_tokens": 100,
                "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 30},
            },
            (100, 64, 40, 30),
        ),
        (
            {
                "prompt_tokens": 90,
                "completion_tokens": 5,
                "prompt_cache_hit_tokens": 80,
                "prompt_cache_miss_tokens": 10,
            },
            (90, 80, 5, 0),
        ),
        ({"prompt_tokens": 7, "completion_tokens": None, "prompt_tokens_details": None}, (7, 0, 0, 0)),
    ],
)
async def test_usage_mapping_over_http(raw, expect):
    with FakeOpenAI(usage=lambda body, text: raw) as s:
        c = await make(s).complete(MSGS, role="agent")
    u = c.usage
    assert (u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens, u.reasoning_tokens) == expect
    assert u.source == "api" and c.raw_usage == raw


async def test_usage_estimated_when_endpoint_sends_none():
    with FakeOpenAI(usage=None) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert c.raw_usage is None and c.usage.source == "estimated"
    assert c.usage == estimate_usage(MSGS, c.text) and c.usage.prompt_tokens > 0
    assert map_usage({"total_tokens": 3}) is None and map_usage("x") is None


@pytest.mark.parametrize("transport", CLIENTS)
async def test_inflight_bound_is_shared_per_endpoint(transport):
    with FakeOpenAI(latency_s=0.05) as s:
        a, b = (
            make(s, max_inflight=3, timeout_s=10, transport=transport),
            make(s, name="judge", max_inflight=3, timeout_s=10, transport=transport),
        )  # same endpoint, one budget
        calls = [(a if i % 2 else b).complete([{"role": "user", "content": f"q{i}"}], role="agent") for i in range(18)]
        await asyncio.gather(*calls)
        assert s.requests == 18 and s.max_concurrent == 3
        await a.aclose()
        await b.aclose()


@pytest.mark.parametrize("transport", CLIENTS)
async def test_large_inflight_bound_is_reached_with_one_session(transport):
    # each reply takes 1 s: all 40 requests overlap even on a loaded machine (0.2 s did not at load ~8)
    with FakeOpenAI(latency_s=1.0) as s:
        b = make(s, max_inflight=40, timeout_s=10, transport=transport)  # one client, 40 connections
        await asyncio.gather(*(b.complete([{"role": "user", "content": f"q{i}"}], role="agent") for i in range(40)))
        t = b._transport()
        assert s.max_concurrent == 40 and (t.limit if transport == "h1" else t._session.connector.limit) == 40
        await b.aclose()


async def test_faulty_endpoint_gives_the_same_results_as_a_clean_one():
    prompts = [[{"role": "user", "content": f"task {i}"}] for i in range(40)]

    async def run(srv: FakeOpenAI):
        b = make(srv, timeout_s=0.5, max_retries=8)
        cs = await asyncio.gather(*(b.complete(p, role="agent") for p in prompts))
        await b.aclose()
        return cs

    with FakeOpenAI() as clean:
        ref = await run(clean)
    with FakeOpenAI(fault_rate=0.2, seed=3, hang_s=1.0) as faulty:
        got = await run(faulty)
        kinds = {k for k in faulty.outcomes if k != "ok"}
    assert [(c.text, c.usage) for c in got] == [(c.text, c.usage) for c in ref]
    assert sum(len(c.retries) for c in got) >= 4 and len(kinds) >= 3
    assert not any(c.retries for c in ref)


def test_build_from_config(monkeypatch):
    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf/backbone/deepseek_v4_flash.yaml").read_text())
    env = {"DEEPSEEK_API_KEY": KEY, "DEEPSEEK_BASE_URL": "http://127.0.0.1:9/v1/"}
    b = build_openai_backbone(cfg, env=env)
    assert b.base_url == "http://127.0.0.1:9/v1" and b.model == cfg["model"] and b.max_inflight == cfg["max_inflight"]
    assert b.sampling == cfg["sampling"] and b.extra_body == cfg["extra_body"]
    assert build_openai_backbone(cfg, env={"DEEPSEEK_API_KEY": KEY}).base_url == cfg["base_url"]
    with pytest.raises(ValueError, match="DEEPSEEK_API_KEY"):
        build_openai_backbone(cfg, env={})
    with pytest.raises(ValueError, match="base_url"):
        build_openai_backbone({**cfg, "base_url": None}, env={"DEEPSEEK_API_KEY": KEY})


async def test_local_endpoint_without_key_var(srv):
    b = build_openai_backbone({"name": "vllm", "model": "m", "base_url": srv.base_url, "api_key_env": None}, env={})
    await b.complete(MSGS, role="agent")
    assert srv.auth_headers == ["Bearer EMPTY"]


async def test_episodes_under_faults_match_fault_free_episodes():
    """Whole episodes (Full Context × Formal Reasoning fixture, agent + judge over HTTP): 20% faults
    change nothing but the retry log."""
    import hashlib

    from baselines.full_context import FullContext
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.episode import Episode

    def responder(body):  # deterministic, prompt-dependent answers and verdicts
        h = hashlib.sha256(str(body["messages"]).encode()).hexdigest()
        if "equivalent" in str(body["messages"][0]["content"]):
            return "yes" if int(h, 16) % 2 else "no"
        return f'<tool_calls>[]</tool_calls><assistant_message>{{"content": "ans-{h[:6]}"}}</assistant_message>'

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")

    async def run(srv):
        b = make(srv, timeout_s=0.5, max_retries=8)
        out = []
        for task in bench.load_tasks():
            ep = Episode(b, cell="c", task_id=task.task_id)
            out.append(await ep.run(ep.make_env(bench, task), FullContext(ep.agent)))
        await b.aclose()
        return out

    with FakeOpenAI(responder) as clean:
        ref = await run(clean)
    with FakeOpenAI(responder, fault_rate=0.2, seed=5, hang_s=1.0) as faulty:
        got = await run(faulty)
    assert all(r.status == "ok" for r in ref + got)
    flat = lambda recs: [(r.scores, [[s.decision for s in q.steps] for q in r.requests]) for r in recs]  # noqa: E731
    assert flat(got) == flat(ref)
    assert len({str(r.scores["subtask_correct"]) for r in ref}) > 1  # verdicts really depend on the prompt
    assert sum(r.retries for r in got) > 0 and sum(r.retries for r in ref) == 0


def test_redact_url_cuts_credentials_only():
    from runners.secrets import redact_url

    assert redact_url("https://bob:pw-SECRET@api.example.com:8443/v1") == "https://***@api.example.com:8443/v1"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("mode", [401, 500])
async def test_url_credentials_never_reach_error_messages(srv, mode):
    """A base_url with user:password@ (proxies, some gateways) must not leak into errors.jsonl."""
    srv.mode = mode
    url = srv.base_url.replace("http://", "http://bob:pw-SECRET@")
    b = make(
        srv, base_url=url, max_retries=1, api_key=None
    )  # URL credentials go as explicit Basic auth, never with a key
    with pytest.raises(BackboneError) as ei:
        await b.complete(MSGS, role="agent")
    assert "pw-SECRET" not in str(ei.value) and "pw-SECRET" not in repr(b) and "***@127.0.0.1" in str(ei.value)


def test_manifest_has_no_url_credentials():
    import json

    from runners.config import validate
    from runners.prepare import manifest_for
    from tests.runners.test_config import base

    raw = base()
    raw["backbone"] = {"name": "ep", "kind": "openai", "model": "m", "base_url": "https://bob:pw-SECRET@h.example/v1"}
    raw["roles"] = {
        "judge": {"name": "j", "kind": "openai", "model": "m", "base_url": "https://ann:pw-SECRET@h.example/v1"}
    }
    cfg = validate(raw)
    bench = type("B", (), {"notes": lambda self: {}})()
    text = json.dumps(manifest_for(cfg, bench, 1))
    assert "pw-SECRET" not in text and "https://***@h.example/v1" in text
    assert "pw-SECRET" in cfg.backbone.base_url  # the run itself still uses the real URL


@pytest.mark.parametrize("transport", [*CLIENTS, "httpx"])
async def test_both_transports_retry_and_fail_fast_alike(srv, transport):
    """The former httpx client stays behind the same interface (perf comparison): same retries,
    same fail-fast, same body bytes."""
    srv.enqueue("429", "reset", "hang")
    b = make(srv, transport=transport)
    c = await b.complete(MSGS, role="agent")
    assert [r.error.split(":")[0].split(" (")[0] for r in c.retries][:1] == ["HTTP 429"] and len(c.retries) == 3
    assert srv.bodies[-1]["messages"] == MSGS and srv.bodies[-1]["thinking"] == {"type": "disabled"}
    srv.mode = 401
    with pytest.raises(BackboneError) as ei:
        await b.complete([{"role": "user", "content": "other"}], role="agent")
    assert ei.value.fatal and KEY not in str(ei.value)
    await b.aclose()


def test_request_bytes_are_the_body_with_the_prompt_spliced_in(srv):
    import json

    from runners.records.wire import EncodedMessages

    b = make(srv)
    msgs = EncodedMessages([{"role": "user", "content": 'Ünïcode ✓ "quoted"'}])
    raw = b.request_bytes(msgs, {"temperature": 0.0, "extra_body": {"seed": 3}})
    assert msgs.raw in raw and json.loads(raw) == b.request_body(
        list(msgs), {"temperature": 0.0, "extra_body": {"seed": 3}}
    )


async def test_asyncio_endpoint_answers_as_the_threaded_one(srv):
    """`tests.fake_openai.serve_asyncio`, the perf scripts' endpoint: the threaded server's replies
    through both transports, over reused connections, each after the latency; 404 off the route."""
    import aiohttp

    from tests.fake_openai import serve_asyncio

    fake = FakeOpenAI(latency_s=0.2)
    stop = asyncio.get_running_loop().create_future()
    urls: list[str] = []
    server = asyncio.create_task(serve_asyncio(fake, ready=urls.append, stop=stop))
    while not urls:
        await asyncio.sleep(0.01)
    prompts = [[*MSGS, {"role": "user", "content": f"question {i} é"}] for i in range(8)]
    try:
        ref = make(srv)
        want = [
            (c.text, c.usage, c.model) for c in await asyncio.gather(*(ref.complete(p, role="agent") for p in prompts))
        ]
        await ref.aclose()
        for transport in (*CLIENTS, "httpx"):
            b = OpenAIBackbone(
                name="fake",
                model="fake-model",
                base_url=urls[0],
                api_key=KEY,
                sampling={"temperature": 0.1, "top_p": 1.0},
                extra_body={"thinking": {"type": "disabled"}},
                timeout_s=5.0,
                max_retries=0,
                transport=transport,
            )
            opened = fake.connections
            for _ in range(2):  # the second round reuses the first round's connections
                t0 = time.perf_counter()
                got = await asyncio.gather(*(b.complete(p, role="agent") for p in prompts))
                assert 0.2 <= time.perf_counter() - t0 < 1.5  # all 8 in flight at once, each answered after 0.2 s
                assert [(c.text, c.usage, c.model) for c in got] == want and not any(c.retries for c in got)
                assert fake.connections - opened == 8  # keep-alive: no new connection in the second round
            await b.aclose()
        assert fake.requests == 48
        async with aiohttp.ClientSession() as s:
            async with s.post(urls[0] + "/embeddings", data=b"{}") as r:
                assert r.status == 404 and "no route" in (await r.json())["error"]["message"]
            async with s.post(urls[0] + "/chat/completions", data=b"{not json") as r:
                assert r.status == 400
    finally:
        stop.set_result(None)
        await server
    with pytest.raises(ValueError, match="threaded FakeOpenAI"):
        await serve_asyncio(FakeOpenAI(fault_rate=0.5))


# ------------------------------------------------------------------ malformed 200 bodies, garbage usage, echoed secrets
@pytest.mark.parametrize("bad", ["lots", -5, float("nan"), float("inf"), 2.5, True])
async def test_garbage_usage_is_estimated_and_flagged(bad):
    """A token count that is no count (a string, negative, NaN, Infinity, a fraction, a bool) is
    treated as missing: the call's tokens are estimated, labelled so, and the call says why."""
    with FakeOpenAI(usage=lambda body, text: {"prompt_tokens": bad, "completion_tokens": 2}) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert c.usage.source == "estimated" and c.usage == estimate_usage(MSGS, c.text) and c.usage.prompt_tokens > 0
    assert not c.retries and any(h.startswith("usage: unusable usage") and "prompt_tokens" in h for h in c.hygiene)
    assert map_usage({"prompt_tokens": bad, "completion_tokens": 2}) is None


async def test_garbage_usage_detail_is_flagged_too():
    raw = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": "many"}}
    with FakeOpenAI(usage=lambda body, text: raw) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert c.usage.source == "estimated" and any("cached_tokens" in h for h in c.hygiene)


@pytest.mark.parametrize(
    "raw, want, said",
    [
        (
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 50}},
            Usage(prompt_tokens=10, cached_prompt_tokens=10, completion_tokens=2),
            "cached tokens 50 above prompt_tokens=10",
        ),
        (
            {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 11},
            Usage(prompt_tokens=10, cached_prompt_tokens=10, completion_tokens=2),
            "cached tokens 11 above prompt_tokens=10",
        ),
        (
            {"prompt_tokens": 10, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 3}},
            Usage(prompt_tokens=10, completion_tokens=2, reasoning_tokens=2),
            "reasoning_tokens=3 above completion_tokens=2",
        ),
    ],
)
async def test_usage_part_above_its_whole_is_cut_and_said(raw, want, said):
    """An endpoint that reports more cached prompt tokens than prompt tokens (or more reasoning
    tokens than completion tokens) keeps its wholes (what the call is billed by) and the part is
    cut to its whole, with a note on the call: never an impossible count stored unsaid."""
    assert plain_usage(raw) is None  # the fast path leaves it to the general one
    with FakeOpenAI(usage=lambda body, text: raw) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert c.usage == want and c.usage.source == "api"
    assert [h for h in c.hygiene if h.startswith("usage:")] == [
        f"usage: {said} (inconsistent counts from the endpoint): each part cut to its whole"
    ]
    consistent = dict(raw, prompt_tokens=100, completion_tokens=5)
    with FakeOpenAI(usage=lambda body, text: consistent) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert not c.hygiene and c.usage == map_usage(consistent)


def test_plain_usage_reads_what_the_checks_read():
    """`plain_usage` (the fast path of the usual usage object) gives exactly the `Usage` of the
    general path (`usage_problem`, then `map_usage`) wherever it answers, answers for the shapes
    real endpoints send, and leaves every other shape to the general path."""
    counts = [0, 7, 2**40, -1, 2.0, 2.5, True, None, "3", float("nan"), 10**8]
    details = [None, {}, {"cached_tokens": None}, "x", [], *({"cached_tokens": c} for c in counts)]
    bounds = [None, usage_bounds(100, 5), usage_bounds(10**6, None)]
    raws: list[Any] = ["x", None, {}, {"total_tokens": 3}]
    for p, c in itertools.product(counts, counts):
        raws.append({"prompt_tokens": p, "completion_tokens": c})
    for d, hit in itertools.product(details, counts):
        raws.append(
            {"prompt_tokens": 9, "completion_tokens": 2, "prompt_tokens_details": d, "prompt_cache_hit_tokens": hit}
        )
    for d in details:
        reasoning = {"reasoning_tokens": d.get("cached_tokens")} if isinstance(d, dict) else d
        raws.append({"prompt_tokens": 9, "completion_tokens": 2, "completion_tokens_details": reasoning})
    answered = 0
    for raw, b in itertools.product(raws, bounds):
        fast = plain_usage(raw, b)
        if fast is None:
            continue
        answered += 1
        assert usage_problem(raw, b) is None and fast == map_usage(raw, b, checked=True), (raw, b)
        assert type(fast.prompt_tokens) is int and fast.source == "api"
    assert answered > 50
    openai = {
        "prompt_tokens": 900,
        "completion_tokens": 9,
        "total_tokens": 909,
        "prompt_tokens_details": {"cached_tokens": 512},
        "completion_tokens_details": {"reasoning_tokens": 4},
    }
    assert plain_usage(openai) == Usage(
        prompt_tokens=900, cached_prompt_tokens=512, completion_tokens=9, reasoning_tokens=4
    )
    vllm = {"prompt_tokens": 900, "completion_tokens": 9, "total_tokens": 909, "prompt_tokens_details": None}
    assert plain_usage(vllm) == Usage(prompt_tokens=900, completion_tokens=9)
    assert (
        plain_usage({"prompt_tokens": 900, "completion_tokens": 9, "prompt_cache_hit_tokens": 64}).cached_prompt_tokens
        == 64
    )


class _OddFinish(FakeOpenAI):
    """Answers the first `n` requests with a non-string finish_reason."""

    def __init__(self, value, n=1, **kw):
        super().__init__(**kw)
        self.value, self.left = value, n

    def reply_json(self, body):
        out = super().reply_json(body)
        if self.left:
            self.left -= 1
            out["choices"][0]["finish_reason"] = self.value
        return out


@pytest.mark.parametrize("value", [5, {"type": "stop"}, ["stop"], True])
async def test_non_string_finish_reason_is_retried(value):
    with _OddFinish(value) as s:
        c = await make(s).complete(MSGS, role="agent")
    assert c.finish_reason == "stop" and len(c.retries) == 1 and "finish_reason" in c.retries[0].error
    with _OddFinish(value, n=100) as s:  # never fixed: an ordinary infra error after the retries, not a crash
        with pytest.raises(BackboneError) as e:
            await make(s, max_retries=2).complete(MSGS, role="agent")
    assert not e.value.fatal and len(e.value.retries) == 2


async def test_secret_echoed_in_a_successful_reply_is_redacted():
    """A 200 reply that echoes the Authorization header (a debugging proxy, a hostile endpoint):
    neither the key nor the Basic `user:password` encoding survives in what the backbone returns,
    and the call records that it redacted something."""
    import base64

    echo = lambda body: {"content": f"you sent Authorization: {body['_auth']}; key {KEY}", "tool_calls": None}  # noqa: E731

    class Echo(FakeOpenAI):
        def reply_json(self, body):
            out = super().reply_json({**body, "_auth": self.auth_headers[-1]})
            out["choices"][0]["message"]["reasoning_content"] = f"the header was {self.auth_headers[-1]}"
            out["model"] = f"echo {self.auth_headers[-1]}"
            return out

    with Echo(responder=echo) as s:
        c = await make(s).complete(MSGS, role="agent")
        assert s.auth_headers[0] == f"Bearer {KEY}"
    dumped = c.model_dump_json()
    assert KEY not in dumped and "SECRET-0123" not in dumped and "Bearer ***" in c.text
    assert any(h.startswith("redacted:") for h in c.hygiene)
    password = "pw-s3cret-value"
    with Echo(responder=echo) as s:
        url = s.base_url.replace("http://", f"http://user:{password}@")
        c = await make(s, base_url=url, api_key=None).complete(MSGS, role="agent")
        assert s.auth_headers[0].startswith("Basic ")
    dumped = c.model_dump_json()
    token = base64.b64encode(f"user:{password}".encode()).decode()
    assert password not in dumped and token.rstrip("=") not in dumped and "Basic ***" in c.text
    assert any(h.startswith("redacted:") for h in c.hygiene)


async def test_reply_without_secrets_is_untouched(srv):
    c = await make(srv).complete(MSGS, role="agent")
    assert not c.hygiene and c.text.startswith("reply ")


@pytest.mark.parametrize(
    "raw",
    [
        {"prompt_tokens": 2**63 - 1, "completion_tokens": 2},
        {"prompt_tokens": 10**26, "completion_tokens": 2},
        {"prompt_tokens": 5, "completion_tokens": 10**9},
        {"prompt_tokens": 5, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 2**70}},
    ],
)
async def test_usage_beyond_what_the_call_can_have_is_estimated(raw):
    """A count above the call's bound (more prompt tokens than the request had bytes, more
    completion tokens than its limit, anything above MAX_CALL_TOKENS) is treated as missing."""
    with FakeOpenAI(usage=lambda body, text: raw) as s:
        c = await make(s).complete(MSGS, role="agent", max_tokens=64)
    assert c.usage.source == "estimated" and c.usage == estimate_usage(MSGS, c.text)
    assert any(h.startswith("usage: unusable usage") for h in c.hygiene)


async def test_usage_within_the_request_bounds_is_believed():
    raw = {"prompt_tokens": 200, "completion_tokens": 64}  # a few hundred bytes sent, max_tokens 64
    with FakeOpenAI(usage=lambda body, text: raw) as s:
        c = await make(s).complete(MSGS, role="agent", max_tokens=64)
    assert c.usage.source == "api" and c.usage.prompt_tokens == 200 and not c.hygiene


def test_a_stored_count_beyond_64_bits_reads_back():
    """orjson reads an integer beyond 64 bits as a float: the record's usage still validates."""
    from runners.records.store import _field_problem, _record

    r = _record(b'{"task_id": "t", "trial": 0, "usage_by_role": {"agent": {"prompt_tokens": 27670116110564327421}}}')
    assert _field_problem(r) is None


# ------------------------------------------------------------------ hostile bodies: endless, deep, not UTF-8; redirects
@pytest.mark.parametrize("transport", [*CLIENTS, "httpx"])
async def test_an_endless_body_is_cut_at_max_reply_bytes_and_retried_with_bounded_memory(transport):
    """A 200 whose body never ends: each attempt stops after `max_reply_bytes` (memory stays near
    that bound, not growing with the stream) and fails as a retried infra error, quickly."""
    import tracemalloc

    limit = 2 * 2**20
    with FakeOpenAI() as s:
        s.mode = "endless"
        b = make(s, max_reply_bytes=limit, max_retries=2, timeout_s=30, transport=transport)
        tracemalloc.start()
        t0 = time.perf_counter()
        with pytest.raises(BackboneError) as e:
            await b.complete(MSGS, role="agent")
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        s.mode = None
        c = await b.complete(MSGS, role="agent")  # the endpoint recovers: the next call is an ordinary reply
        await b.aclose()
    assert not e.value.fatal and len(e.value.retries) == 2 and elapsed < 10
    assert all(f"max_reply_bytes={limit}" in r.error for r in e.value.retries)
    # the endless stream is never held whole (httpx's stream and decoder buffers hold about two bounds more)
    assert peak < (6 if transport == "httpx" else 4) * limit, peak
    assert c.text.startswith("reply ")


@pytest.mark.parametrize("transport", CLIENTS)
async def test_an_announced_oversized_body_is_refused_before_reading_it(transport):
    big = "y" * 5000
    with FakeOpenAI(responder=lambda body: big) as s:
        s.enqueue("ok")
        b = make(s, max_reply_bytes=2048, max_retries=1, transport=transport)
        with pytest.raises(BackboneError) as e:
            await b.complete(MSGS, role="agent")
        await b.aclose()
    assert "max_reply_bytes=2048 (it announced" in str(e.value) and not e.value.fatal


@pytest.mark.parametrize("transport", [*CLIENTS, "httpx"])
@pytest.mark.parametrize(
    "kind, said", [("deep", "nested too deep"), ("badutf8", "not valid UTF-8 (byte 0xe9 at offset")]
)
async def test_a_deep_or_non_utf8_body_is_a_retried_infra_error_that_says_why(kind, said, transport):
    with FakeOpenAI() as s:
        s.enqueue(kind)
        b = make(s, transport=transport)
        c = await b.complete(MSGS, role="agent")
        s.mode = kind
        failing = make(s, max_retries=1, transport=transport)
        with pytest.raises(BackboneError) as e:
            await failing.complete(MSGS, role="agent")
        await b.aclose()
        await failing.aclose()
    assert c.text.startswith("reply ") and len(c.retries) == 1 and said in c.retries[0].error
    assert not e.value.fatal and said in str(e.value) and "not JSON" not in str(e.value)


class _Redirect(FakeOpenAI):
    """Answers every POST with `status` and a Location (`target(base_url)`), unless the path is the target's."""

    def __init__(self, status, target, **kw):
        super().__init__(**kw)
        self.status, self.target = status, target

    def _handler_class(self):
        base = super()._handler_class()
        srv = self

        class H(base):
            def do_POST(self):  # noqa: N802
                if "/moved/" not in self.path:
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    self.send(srv.status, b"{}", {"Location": srv.target(srv.base_url)})
                    return
                super().do_POST()

        return H


@pytest.mark.parametrize("transport", [*CLIENTS, "httpx"])
@pytest.mark.parametrize("status", [307, 308])
async def test_a_redirect_to_another_host_is_refused_unless_configured(status, transport):
    """127.0.0.1 → localhost is another host as far as the config is concerned: nothing is sent there
    unless `follow_cross_host_redirects`; a redirect on the same host is followed with the same body."""
    other = lambda base: base.replace("127.0.0.1", "localhost") + "/moved/chat/completions"  # noqa: E731
    with _Redirect(status, other) as s:
        refused, allowed = make(s, transport=transport), make(s, transport=transport, follow_cross_host_redirects=True)
        with pytest.raises(BackboneError) as e:
            await refused.complete(MSGS, role="agent")
        assert s.requests == 0  # the moved route was never asked
        assert e.value.fatal and "another host (http://localhost:" in str(e.value)
        assert "follow_cross_host_redirects=true" in str(e.value)
        c = await allowed.complete(MSGS, role="agent")
        assert c.text.startswith("reply ") and s.requests == 1 and s.bodies[0]["messages"] == MSGS
        await refused.aclose()
        await allowed.aclose()
    with _Redirect(status, lambda base: base + "/moved/chat/completions") as s:
        same = make(s, transport=transport)
        c = await same.complete(MSGS, role="agent")
        assert c.text.startswith("reply ") and s.requests == 1 and s.auth_headers[0] == f"Bearer {KEY}"
        await same.aclose()


@pytest.mark.parametrize("transport", [*CLIENTS, "httpx"])
async def test_a_303_is_refused_not_answered_by_posting_again(transport):
    """303 See Other says the answer is to be fetched elsewhere; re-sending the POST would run (and bill)
    the request twice: fatal, naming the fix, and nothing sent to the other address."""
    with _Redirect(303, lambda base: base + "/moved/chat/completions") as s:
        b = make(s, transport=transport)
        with pytest.raises(BackboneError) as e:
            await b.complete(MSGS, role="agent")
        assert e.value.fatal and "HTTP 303" in str(e.value) and "set `base_url`" in str(e.value)
        assert s.requests == 0
        await b.aclose()


def test_reply_bound_and_redirect_switch_come_from_the_backbone_config():
    b = build_openai_backbone(
        {
            "name": "x",
            "model": "m",
            "base_url": "http://127.0.0.1:1/v1",
            "api_key_env": None,
            "max_reply_bytes": 4096,
            "follow_cross_host_redirects": True,
        }
    )
    assert b.max_reply_bytes == 4096 and b.follow_cross_host_redirects
    d = build_openai_backbone({"name": "x", "model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key_env": None})
    assert d.max_reply_bytes == 32 * 2**20 and not d.follow_cross_host_redirects


async def test_an_error_body_is_redacted_before_it_is_cut_short():
    """A 401 body whose 500th character falls inside an echoed (base64-encoded) key: no part of the
    key's encoding survives the cut."""
    import base64

    from runners.backbones.openai import Reply

    enc = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    with FakeOpenAI() as s:
        b = make(s)

        async def post(_body, _loop=None):  # a 401 whose body echoes the header after 480 characters of filler
            return Reply(401, {}, ("x" * 480 + enc + " more").encode())

        b._post = post  # type: ignore[method-assign]
        with pytest.raises(BackboneError) as e:
            await b.complete(MSGS, role="agent")
    assert e.value.fatal and enc[10:20] not in str(e.value) and enc[:10] + "***" in str(e.value)


# ------------------------------------------------------------------ the h1 client (runners/backbones/h1.py) on the wire
# RawHTTP (tests/fake_openai.py) writes the bytes each test needs: what the fake endpoints never send.
def _ok(body: bytes, *, head: bytes = b"HTTP/1.1 200 OK", extra: bytes = b"") -> bytes:
    return b"%b\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%b\r\n%b" % (head, len(body), extra, body)


async def _keep_alive(srv, reader, writer):
    """Answers every request on the connection, keep-alive."""
    while await srv.read_request(reader):
        writer.write(_ok(completion_bytes("four")))


def _raw_backbone(srv, transport="h1", **kw):
    return make(srv, transport=transport, **kw)  # `make` reads only `base_url` off its server


async def test_h1_request_on_the_wire_and_one_reused_connection():
    """The request head h1 writes (Host with the port, the fixed headers, Content-Length, gzip/deflate
    accepted) and a body byte-identical to `request_bytes` and to what aiohttp sends; sequential calls
    ride one keep-alive connection."""
    async with RawHTTP(_keep_alive) as srv:
        b = _raw_backbone(srv)
        got = [await b.complete(MSGS, role="agent") for _ in range(4)]
        await b.aclose()
        a = _raw_backbone(srv, "aiohttp")
        await a.complete(MSGS, role="agent")
        await a.aclose()
    assert [c.text for c in got] == ["four"] * 4 and not any(c.retries for c in got)
    assert srv.connections == 2  # one for h1's four calls, one for aiohttp's
    head, body = srv.requests[0]
    port = srv.base_url.rsplit(":", 1)[1].split("/")[0]
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/chat/completions HTTP/1.1"
    fields = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
    assert fields == {
        "host": f"127.0.0.1:{port}",
        "content-type": "application/json",
        "authorization": f"Bearer {KEY}",
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "content-length": str(len(body)),
    }
    assert body == b.request_bytes(MSGS, {}) and all(r[1] == body for r in srv.requests)  # aiohttp's too


async def _models(srv, reader, writer):
    while await srv.read_request(reader):
        writer.write(_ok(b'{"data": [{"id": "m"}]}'))


async def test_h1_get_on_the_wire_and_the_access_check_over_it():
    """h1's GET (the run's access check, runners/access.py): the request line, the fixed headers and
    no Content-Length or body; the check reads the model list over it and loads no other client."""
    from runners import access

    async with RawHTTP(_models) as srv:
        got = await access._request("GET", srv.base_url + "/models?x=1", {"Authorization": "Bearer k"}, None, 5)
        posted = await access._request("POST", srv.base_url + "/chat/completions", {}, b"{}", 5)
    assert got == (200, b'{"data": [{"id": "m"}]}') and posted == got
    (head, body), (post_head, post_body) = srv.requests
    lines = head.decode().split("\r\n")
    assert lines[0] == "GET /v1/models?x=1 HTTP/1.1" and body == b""
    fields = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
    port = srv.base_url.rsplit(":", 1)[1].split("/")[0]
    assert fields == {
        "host": f"127.0.0.1:{port}",
        "authorization": "Bearer k",
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
    }
    assert post_head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and post_body == b"{}"
    assert b"Content-Length: 2\r\n" in post_head
    assert await access._request("GET", "http://127.0.0.1:9/v1/models", {}, None, 5) is None  # nothing listens
    code = (
        "import asyncio, sys; from runners import access; "
        "asyncio.run(access._request('GET', 'http://127.0.0.1:9/v1/models', {}, None, 5)); "
        "print(sorted(m for m in ('aiohttp', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"  # ~0.14 s of start-up CPU that aiohttp's import cost the check before


async def _close_after_reply(srv, reader, writer):
    if await srv.read_request(reader):
        writer.write(_ok(completion_bytes("four")))  # keep-alive announced...
        await writer.drain()
        await asyncio.sleep(0.05)  # ...then closed while idle (a server's keep-alive timeout)


async def _answer_twice(srv, reader, writer):
    while await srv.read_request(reader):
        writer.write(_ok(completion_bytes("four")) + _ok(completion_bytes("stale")))  # one reply too many


@pytest.mark.parametrize(
    "server, pause",
    [(_close_after_reply, 0.3), (_answer_twice, 0.05)],
    ids=["closed-while-idle", "sent-a-reply-nobody-asked-for"],
)
async def test_h1_never_reuses_a_connection_left_out_of_step(server, pause):
    """A pooled connection the server closed while idle, or one that sent a reply nobody asked
    for, is never used again: the next call opens a new connection and gets its own reply."""
    async with RawHTTP(server) as srv:
        b = _raw_backbone(srv)
        first = await b.complete(MSGS, role="agent")
        await asyncio.sleep(pause)
        second = await b.complete(MSGS, role="agent")
        await b.aclose()
    assert first.text == second.text == "four" and not first.retries and not second.retries
    assert srv.connections == 2


@pytest.mark.parametrize("transport", CLIENTS)
async def test_a_request_on_a_connection_that_dies_before_any_reply_byte_is_retried(transport):
    async def drop_first(srv, reader, writer):
        if await srv.read_request(reader) and srv.connections == 1:
            return  # closed without a byte of reply
        writer.write(_ok(completion_bytes("four")))

    async with RawHTTP(drop_first) as srv:
        b = _raw_backbone(srv, transport)
        c = await b.complete(MSGS, role="agent")
        await b.aclose()
    assert c.text == "four" and len(c.retries) == 1 and not c.retries[0].error.startswith("connection refused")


async def test_h1_cancelled_mid_reply_drops_that_connection():
    """A reply that stalls halfway: the backbone's timeout cancels the request, and h1 closes that
    connection (the rest of the old reply must never be read as the next one's)."""
    reused = []

    async def stall_first(srv, reader, writer):
        if not await srv.read_request(reader):
            return
        if srv.connections == 1:
            body = completion_bytes("stale")
            writer.write(_ok(body)[: -len(body) // 2])  # the head and half the body, then nothing
            try:
                reused.append(await reader.read(1))  # b"" when the client closes it; a byte if it sent again
            except ConnectionError:
                reused.append(b"")
            return
        writer.write(_ok(completion_bytes("four")))

    async with RawHTTP(stall_first) as srv:
        b = _raw_backbone(srv, timeout_s=0.3)
        c = await b.complete(MSGS, role="agent")
        await asyncio.sleep(0.05)
        await b.aclose()
    assert c.text == "four" and len(c.retries) == 1 and c.retries[0].error.startswith("timeout")
    assert srv.connections == 2 and reused == [b""]


@pytest.mark.parametrize("transport", CLIENTS)
@pytest.mark.parametrize("style", ["http/1.0 until close", "connection: close"])
async def test_a_reply_that_closes_its_connection_is_read_whole_and_not_pooled(style, transport):
    async def answer(srv, reader, writer):
        if not await srv.read_request(reader):
            return
        body = completion_bytes("four " * 2000)  # several reads long
        if style == "connection: close":
            writer.write(_ok(body, extra=b"Connection: close\r\n"))
        else:  # no Content-Length: the body is what arrives before the server closes
            writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
            for i in range(0, len(body), 4096):
                writer.write(body[i : i + 4096])
                await writer.drain()
                await asyncio.sleep(0.005)
        await writer.drain()
        writer.close()

    async with RawHTTP(answer) as srv:
        b = _raw_backbone(srv, transport)
        got = [await b.complete(MSGS, role="agent") for _ in range(2)]
        await b.aclose()
    assert [c.text for c in got] == ["four " * 2000] * 2 and not any(c.retries for c in got)
    assert srv.connections == 2


def _encode(data: bytes, encoding: str) -> bytes:
    import gzip
    import zlib

    if encoding == "gzip":
        return gzip.compress(data)
    if encoding == "deflate":  # the zlib format, as RFC 9110 names it
        return zlib.compress(data)
    c = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # raw deflate: what some servers send as "deflate"
    return c.compress(data) + c.flush()


def _chunked(data: bytes, size: int) -> list[bytes]:
    return [b"%x\r\n%b\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)] + [
        b"0\r\n\r\n"
    ]


@pytest.mark.parametrize("transport", CLIENTS)
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw deflate"])
async def test_a_chunked_compressed_reply_is_decoded_and_its_connection_reused(encoding, transport):
    text = "the answer is four. " * 300

    async def answer(srv, reader, writer):
        while await srv.read_request(reader):
            name = b"deflate" if "deflate" in encoding else b"gzip"
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: %b\r\n\r\n" % name)
            for piece in _chunked(_encode(completion_bytes(text), encoding), 97):  # many small chunks, many reads
                writer.write(piece)
                await writer.drain()

    async with RawHTTP(answer) as srv:
        b = _raw_backbone(srv, transport)
        got = [await b.complete(MSGS, role="agent") for _ in range(2)]
        await b.aclose()
    assert [c.text for c in got] == [text, text] and not any(c.retries for c in got)
    assert srv.connections == 1


@pytest.mark.parametrize("transport", CLIENTS)
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_a_compressed_bomb_costs_one_bounded_read(framing, transport):
    """64 MB of zeros gzipped to ~64 KB (under the bound, so not refused by its Content-Length):
    decoding stops one byte past `max_reply_bytes`, memory stays near the bound, the call is retried."""
    import gzip
    import tracemalloc

    limit = 2**20
    bomb = gzip.compress(b"0" * (64 * 2**20), compresslevel=9)
    assert len(bomb) < limit

    async def answer(srv, reader, writer):
        while await srv.read_request(reader):
            if framing == "chunked":
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n")
                for piece in _chunked(bomb, 16384):
                    writer.write(piece)
            else:
                writer.write(_ok(bomb, extra=b"Content-Encoding: gzip\r\n"))
            await writer.drain()

    async with RawHTTP(answer) as srv:
        b = _raw_backbone(srv, transport, max_reply_bytes=limit, max_retries=1, timeout_s=10)
        tracemalloc.start()
        with pytest.raises(BackboneError) as e:
            await b.complete(MSGS, role="agent")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        await b.aclose()
    assert not e.value.fatal and len(e.value.retries) == 1
    assert all(f"max_reply_bytes={limit}" in r.error for r in e.value.retries)
    assert peak < 4 * limit, peak


async def test_h1_transport_errors_say_what_happened():
    """Below the backbone: refused → refused=True; a reply that is not HTTP and a connection closed
    mid-reply → TransportFailure; an announced oversized body is refused before its bytes are read."""
    from runners.backbones.h1 import H1Transport
    from runners.backbones.openai import TransportFailure

    async def answer(srv, reader, writer):
        req = await srv.read_request(reader)
        kind = req[1].decode() if req else ""
        if kind == "garbage":
            writer.write(b"SMTP ready\r\n\r\n")
        elif kind == "cut":
            writer.write(_ok(b"x" * 100)[:-50])
            await writer.drain()
        elif kind == "huge":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(5)  # the body never comes: waiting for it would time out

    t = H1Transport(headers={}, limit=4, timeout_s=1, max_bytes=2048)
    async with RawHTTP(answer) as srv:
        url = srv.base_url + "/chat/completions"
        for kind, said in [("garbage", "malformed HTTP reply"), ("cut", "in the middle of its reply")]:
            with pytest.raises(TransportFailure, match=said) as e:
                await t.post(url, kind.encode())
            assert not e.value.refused
        with pytest.raises(TransportFailure, match=r"max_reply_bytes=2048 \(it announced 999999999"):
            async with asyncio.timeout(2):
                await t.post(url, b"huge")
    with pytest.raises(TransportFailure) as e:  # the server is gone: nothing listens on that port
        await t.post(url, b"{}")
    assert e.value.refused and "cannot connect" in str(e.value)
    await t.aclose()


async def test_h1_aclose_closes_every_connection():
    from runners.backbones.h1 import H1Transport

    async with RawHTTP(_keep_alive) as srv:
        t = H1Transport(headers={}, limit=8, timeout_s=1)
        url = srv.base_url + "/chat/completions"
        replies = await asyncio.gather(*(t.post(url, b"{}") for _ in range(3)))
        assert [r.status for r in replies] == [200] * 3 and replies[0].headers["CONTENT-TYPE"] == "application/json"
        assert srv.connections == 3 and srv.eofs == 0
        await t.aclose()
        for _ in range(50):
            if srv.eofs == 3:
                break
            await asyncio.sleep(0.01)
        assert srv.eofs == 3


@pytest.mark.parametrize("transport", CLIENTS)
async def test_an_ipv6_endpoint(transport):
    import socket

    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    async with RawHTTP(_keep_alive, host="::1") as srv:
        assert srv.base_url.startswith("http://[::1]:")
        b = _raw_backbone(srv, transport)
        c = await b.complete(MSGS, role="agent")
        await b.aclose()
    assert c.text == "four" and srv.requests[0][0].split(b"\r\n")[1].lower().startswith(b"host: [::1]:")


def _tls_files(tmp: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate for IP 127.0.0.1 signed by it, server key), by the openssl CLI."""
    import shutil
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed (needed to make a test certificate)")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp, check=True, capture_output=True)

    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    run("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    (tmp / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "srv.pem", "-days", "2", "-extfile", "ext")  # fmt: skip
    return tmp / "ca.pem", tmp / "srv.pem", tmp / "srv.key"


async def test_h1_https_checks_the_certificate_and_its_host(tmp_path, monkeypatch):
    """https with the default context: a certificate for 127.0.0.1 from a CA the system trusts
    (SSL_CERT_FILE) is accepted; the same certificate reached as `localhost` is refused (hostname
    check), as is a server whose CA is not trusted."""
    import ssl

    ca, cert, key = _tls_files(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    async with RawHTTP(_keep_alive, ssl=ctx) as srv:
        assert srv.base_url.startswith("https://127.0.0.1:")
        untrusted = _raw_backbone(srv, max_retries=0)
        with pytest.raises(BackboneError) as e:
            await untrusted.complete(MSGS, role="agent")
        assert "connection refused" in str(e.value) and "CERTIFICATE_VERIFY_FAILED" in str(e.value)
        await untrusted.aclose()
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # read by ssl.create_default_context()
        b = _raw_backbone(srv)
        got = [await b.complete(MSGS, role="agent") for _ in range(2)]
        await b.aclose()
        other = make(srv, base_url=srv.base_url.replace("127.0.0.1", "localhost"), max_retries=0)
        with pytest.raises(BackboneError) as e:
            await other.complete(MSGS, role="agent")
        await other.aclose()
    assert [c.text for c in got] == ["four", "four"] and not any(c.retries for c in got)
    assert srv.connections == 1 and len(srv.requests) == 2  # the refused handshakes never reached the server
    assert "connection refused" in str(e.value) and "Hostname mismatch" in str(e.value), str(e.value)


# ------------------------------------------------------------------ request deadlines, one timer
async def _outcome(guard, work):
    """What a task running `work` under `guard` ends with: ('ok', value) or the exception's type
    name, and how many cancel requests it is left with."""
    try:
        r = ("ok", await guard(work()))
    except BaseException as e:  # noqa: BLE001  # the outcome is the result
        r = (type(e).__name__, None)
    return r, asyncio.current_task().cancelling()


def _guards(timeout):
    from runners.backbones.openai import Deadlines

    async def stdlib(aw):
        async with asyncio.timeout(timeout):
            return await aw

    deadlines = Deadlines(timeout)
    return {"asyncio.timeout": stdlib, "Deadlines": deadlines.run}


async def test_deadlines_end_requests_as_asyncio_timeout_does():
    """`Deadlines.run` against `asyncio.timeout` in the same situations, each request a task:
    done in time, past the deadline, cancelled from elsewhere before it, cancelled from elsewhere
    after the deadline fired (before the task ran), a request that swallows the cancellation
    (returns, or raises something else), an outer, shorter `asyncio.timeout`; and many requests
    of different lengths in flight at once. Same results, same cancel counts left."""

    async def sleep_then(s, v="v"):
        await asyncio.sleep(s)
        return v

    async def swallow(exc=None):
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            if exc is not None:
                raise exc from None
        return "swallowed"

    async def scenario(guard, name):
        loop = asyncio.get_running_loop()
        if name == "in time":
            return await loop.create_task(_outcome(guard, lambda: sleep_then(0.01)))
        if name == "late":
            return await loop.create_task(_outcome(guard, lambda: sleep_then(1)))
        if name == "swallowed":
            return await loop.create_task(_outcome(guard, swallow))
        if name == "swallowed, other error":
            return await loop.create_task(_outcome(guard, lambda: swallow(ValueError("x"))))
        if name == "outer timeout":

            async def outer():
                async with asyncio.timeout(0.02):
                    return await guard(sleep_then(1))

            return await loop.create_task(_outcome(lambda aw: aw, outer))
        t = loop.create_task(_outcome(guard, lambda: sleep_then(1)))
        if name == "cancelled before":
            await asyncio.sleep(0.02)
            t.cancel()
        else:  # cancelled after the deadline fired, before the task saw it
            await asyncio.sleep(0.15)
            deadline = loop.time() + 5
            while loop.time() < deadline and not t.cancelling():
                await asyncio.sleep(0)
            t.cancel()
        return await t

    names = ["in time", "late", "swallowed", "swallowed, other error", "outer timeout"]
    names += ["cancelled before", "cancelled after the deadline"]
    got = {}
    for kind in ("asyncio.timeout", "Deadlines"):
        guard = _guards(0.2)[kind]  # margins of 0.18 s either side: a loaded machine gives the same outcomes
        got[kind] = [await scenario(guard, n) for n in names]
    assert got["Deadlines"] == got["asyncio.timeout"]
    assert [r[0][0] for r in got["Deadlines"]] == [
        "ok",
        "TimeoutError",
        "ok",
        "ValueError",
        "TimeoutError",
        "CancelledError",
        "CancelledError",
    ]
    lengths = [0.001 * (i % 7) + (0.5 if i % 5 == 0 else 0) for i in range(60)]  # every fifth one too long
    for kind in ("asyncio.timeout", "Deadlines"):
        guard = _guards(0.2)[kind]
        got[kind] = await asyncio.gather(*(_outcome(guard, lambda s=s: sleep_then(s, s)) for s in lengths))
    assert got["Deadlines"] == got["asyncio.timeout"]
    assert [r[0][0] for r in got["Deadlines"]].count("TimeoutError") == 12


async def test_deadlines_keep_one_timer_and_little_else_and_come_on_time():
    """One timer on the loop at a time however many requests are in flight (`asyncio.timeout`
    sets one per request); done requests held behind a slow one are dropped in bulk, not kept
    until it ends; a request whose predecessors finished early still ends at its own deadline."""
    from runners.backbones.openai import Deadlines

    loop = asyncio.get_running_loop()
    timers = []
    call_at = loop.call_at
    loop.call_at = lambda when, cb, *a, **k: timers.append(cb) or call_at(when, cb, *a, **k)  # type: ignore[method-assign]
    try:
        d = Deadlines(30)
        release = asyncio.Event()
        slow = loop.create_task(d.run(release.wait()))
        await asyncio.sleep(0)
        for _ in range(20):  # 20 rounds of 200 quick requests behind the slow one
            await asyncio.gather(*(d.run(asyncio.sleep(0, i)) for i in range(200)))
            assert len(d._due) <= 2 * 64 + 200
        release.set()
        assert await slow is True
        assert [t for t in timers if getattr(t, "__self__", None) is d] == [d._fire]  # the slow one's sleep aside
    finally:
        del loop.call_at
    d = Deadlines(0.1)
    t0 = loop.time()
    await d.run(asyncio.sleep(0.02))  # the timer stays set for this one's deadline
    late = loop.create_task(d.run(asyncio.sleep(10)))
    with pytest.raises(TimeoutError):
        await late
    assert 0.12 - 0.005 <= loop.time() - t0 < 1.0  # its own deadline, ~0.1 s after it started
    assert not d._due and not d._armed
    bb = OpenAIBackbone(name="x", model="m", base_url="http://127.0.0.1:9/v1", api_key="EMPTY")
    loops = []

    async def one():
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return await bb._deadlines_here(asyncio.get_running_loop()).run(asyncio.sleep(0, "done"))

    assert await asyncio.to_thread(asyncio.run, one()) == "done"  # a loop of its own, closed
    gc.collect()
    assert loops[0]() is None and not bb._deadlines  # the loop's deadlines went with it


async def test_a_request_on_a_pooled_connection_asks_for_the_running_loop_once(srv, monkeypatch):
    """Each `asyncio.get_running_loop()` is a `getpid` system call in Python 3.11: an attempt takes
    the loop once and hands it to the in-flight bound, the deadlines and the transport (one call,
    not four: the C-level look-ups of asyncio's own futures do not go through this name)."""
    import runners.backbones.openai as openai_mod

    b = make(srv, transport="h1")
    await b.complete([{"role": "user", "content": "warm the pool"}], role="agent")  # connects (connection_made asks)
    asked = []
    real = asyncio.get_running_loop

    def counting():
        asked.append(1)
        return real()

    monkeypatch.setattr(openai_mod.asyncio, "get_running_loop", counting)
    await b.complete([{"role": "user", "content": "on the pooled connection"}], role="agent")
    monkeypatch.undo()
    assert len(asked) == 1
    await b.aclose()
