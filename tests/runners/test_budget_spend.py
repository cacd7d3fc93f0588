"""What the budget counts as spend (runners/run.py, Scheduler): a response-cache hit costs nothing."""

from runners.pool import BackbonePool
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.test_scheduler import cells, run

PRICES = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}  # USD per 1M tokens: about $1 a call


def test_cache_hits_are_not_spend(tmp_path):
    cache = tmp_path / "responses.sqlite"
    with FakeOpenAI(react_responder) as srv:

        def endpoint_cells(out):
            cfgs = cells(out, n=1, concurrency=1)
            for c in cfgs:
                c.backbone = c.backbone.model_validate(
                    {"name": "ep", "kind": "openai", "model": "m", "base_url": srv.base_url, "api_key_env": None}
                )
                c.backbone.prices = PRICES
            return cfgs

        first, s1 = run(tmp_path / "first", endpoint_cells(tmp_path / "first"), pool=BackbonePool(cache))
        assert first[0].ok == 3 and s1.spent > 0
        calls = srv.requests
        # the same episodes again in another experiment folder: every call is answered by the cache
        again, s2 = run(tmp_path / "again", endpoint_cells(tmp_path / "again"), pool=BackbonePool(cache))
    assert srv.requests == calls and again[0].cache_hits > 0 and again[0].ok == 3
    assert s2.spent == 0
