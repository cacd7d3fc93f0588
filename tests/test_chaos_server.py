"""The chaos suite's loopback server (scripts/chaos/server.py): every transport fault kind is
survived by the OpenAI backbone with the replayed answer and the harness's own token estimate."""
import pytest

from runners.backbones.openai import OpenAIBackbone
from runners.tokens import estimate_usage
from scripts.chaos.server import TRANSPORT_FAULTS, ChaosServer, request_key

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "two plus two"}]


@pytest.mark.parametrize("kind", TRANSPORT_FAULTS)
async def test_each_transport_fault_gives_the_recorded_answer(kind):
    with ChaosServer({request_key(MSGS): "four"}, hang_s=1.2) as srv:
        srv.configure(first=(kind,))
        b = OpenAIBackbone(name="c", model="m", base_url=srv.base_url, api_key="k", timeout_s=1, max_retries=3,
                           backoff_cap_s=0.05, backoff_base_s=0.01)
        c = await b.complete(MSGS, role="agent")
        await b.aclose()
        assert srv.outcomes[kind] == 1
    assert c.text == "four"
    est = estimate_usage(MSGS, "four")
    assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (est.prompt_tokens, est.completion_tokens)
    assert (len(c.retries) == 0) == (kind == "no_usage") and c.retries[:1] == [r for r in c.retries[:1] if r.attempt == 0]


async def test_401_echoes_the_authorization_header_and_unknown_requests_are_counted():
    with ChaosServer({}) as srv:
        b = OpenAIBackbone(name="c", model="m", base_url=srv.base_url, api_key="sk-marker-123456789", timeout_s=1, max_retries=0)
        c = await b.complete(MSGS, role="agent")
        assert c.text == "" and srv.unknown == 1
        srv.mode = 401
        with pytest.raises(Exception) as ei:
            await b.complete(MSGS, role="agent")
        await b.aclose()
    assert "Bearer ***" in str(ei.value) and "sk-marker-123456789" not in str(ei.value)
