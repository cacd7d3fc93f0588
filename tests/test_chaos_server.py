"""The chaos suite's loopback server (scripts/chaos/server.py): every transport fault kind is
survived by the OpenAI backbone with the replayed answer and the harness's own token estimate."""

import pytest

from runners.backbones.openai import OpenAIBackbone
from runners.tokens import estimate_usage
from scripts.chaos.server import BODY_FAULTS, TRANSPORT_FAULTS, ChaosServer, request_key

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "two plus two"}]


@pytest.mark.parametrize("transport", ["h1", "aiohttp"])  # the default client and the former one
@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
async def test_each_transport_fault_gives_the_recorded_answer(kind, transport):
    with ChaosServer({request_key(MSGS): "four"}, hang_s=1.2) as srv:
        srv.configure(first=(kind,))
        b = OpenAIBackbone(
            name="c",
            model="m",
            base_url=srv.base_url,
            api_key="k",
            timeout_s=1,
            max_retries=3,
            backoff_cap_s=0.05,
            backoff_base_s=0.01,
            transport=transport,
        )
        c = await b.complete(MSGS, role="agent")
        await b.aclose()
        assert srv.outcomes[kind] == 1
    assert c.text == "four"
    est = estimate_usage(MSGS, "four")
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (est.prompt_tokens, est.completion_tokens)
    assert (len(c.retries) == 0) == (kind == "no_usage") and c.retries[:1] == [
        r for r in c.retries[:1] if r.attempt == 0
    ]


async def test_401_echoes_the_authorization_header_and_unknown_requests_are_counted():
    with ChaosServer({}) as srv:
        srv.set_replies({}, {request_key(MSGS[-1:]): "by last message"})
        b = OpenAIBackbone(
            name="c", model="m", base_url=srv.base_url, api_key="sk-marker-123456789", timeout_s=1, max_retries=0
        )
        c = await b.complete(MSGS, role="agent")
        assert c.text == "by last message" and srv.unknown == 1
        srv.mode = 401
        with pytest.raises(Exception) as ei:
            await b.complete(MSGS, role="agent")
        await b.aclose()
    assert "Bearer ***" in str(ei.value) and "sk-marker-123456789" not in str(ei.value)


@pytest.mark.parametrize("kind", BODY_FAULTS)
async def test_each_body_fault_gives_the_recorded_answer_and_no_garbage(kind):
    """200 bodies with the right answer and wrong metadata: garbage usage is estimated and flagged
    (never 0 tokens labelled `api`), an odd finish_reason is retried, an echoed key is redacted."""
    key = "sk-marker-bodyfault-123456"
    with ChaosServer({request_key(MSGS): "four"}) as srv:
        srv.configure(first=(kind,))
        b = OpenAIBackbone(
            name="c",
            model="m",
            base_url=srv.base_url,
            api_key=key,
            timeout_s=1,
            max_retries=3,
            backoff_cap_s=0.05,
            backoff_base_s=0.01,
        )
        c = await b.complete(MSGS, role="agent")
        await b.aclose()
        assert srv.outcomes[kind] == 1
    assert c.text == "four" and key not in c.model_dump_json()
    est = estimate_usage(MSGS, "four")
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (est.prompt_tokens, est.completion_tokens)
    if kind.startswith("usage_"):
        assert c.usage.source == "estimated" and any(h.startswith("usage:") for h in c.hygiene) and not c.retries
    elif kind == "finish_odd":
        assert len(c.retries) == 1 and "finish_reason" in c.retries[0].error and c.finish_reason == "stop"
    elif kind == "echo_encoded":  # hex, %xx, \u escapes, base64 of `Bearer <key>` and `k=<key>`: each one redacted
        assert (c.reasoning or "").count("***") == 5 and any(h.startswith("redacted:") for h in c.hygiene)
        assert key.encode().hex() not in c.reasoning and "\\u0073\\u006B" not in c.reasoning.upper()
    else:
        assert "Bearer ***" in (c.reasoning or "") and any(h.startswith("redacted:") for h in c.hygiene)
