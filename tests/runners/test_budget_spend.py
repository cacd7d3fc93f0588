"""What `runner.budget_usd` counts (runners/run.py, Scheduler): a response-cache hit costs nothing,
episodes in flight are part of the spend a new episode must fit beside, and a fair round is
expected to cost each cell's own mean episode, not the sweep's."""

from types import SimpleNamespace as NS

from runners.pool import BackbonePool
from runners.progress import Progress
from runners.run import Scheduler
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.test_scheduler import cells, run

PRICES = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}  # USD per 1M tokens: about $1 a call


def scheduler(tmp_path, budget):
    return Scheduler(tmp_path, BackbonePool(None), Progress("none"), 4, budget)


def test_episodes_in_flight_count_against_the_budget(tmp_path):
    s = scheduler(tmp_path, budget=10.0)
    s.episode_costs, s.spent = [3.0], 3.0
    s.in_flight = 1
    assert s._affordable()  # 3 spent + 1 in flight × 3 + 3 for the new one = 9
    s.budget_reached, s.in_flight = False, 2
    assert not s._affordable()  # 3 + 2 × 3 + 3 = 12 > 10


def test_a_fair_round_is_expected_to_cost_each_cells_own_mean(tmp_path):
    cheap, dear = NS(costs=[1.0, 1.0, 1.0]), NS(costs=[9.0])  # the sweep's mean is 3, the cells' 1 and 9
    s = scheduler(tmp_path, budget=21.0)
    s.episode_costs, s.spent = [1.0, 1.0, 1.0, 9.0], 12.0
    s.rounds, s.round_started = {(0, 1): [cheap, dear]}, (0, 0)
    assert not s._affordable(cheap, (0, 1))  # 12 + (1 + 9) > 21 (the sweep's mean would say 12 + 6)
    s = scheduler(tmp_path, budget=22.0)
    s.episode_costs, s.spent = [1.0, 1.0, 1.0, 9.0], 12.0
    s.rounds, s.round_started = {(0, 1): [cheap, dear]}, (0, 0)
    assert s._affordable(cheap, (0, 1)) and s.round_started == (0, 1)


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
        # the same episodes again, every call answered by the cache, under a budget below one episode's cost
        again, s2 = run(
            tmp_path / "again", endpoint_cells(tmp_path / "again"), budget=s1.spent / 10, pool=BackbonePool(cache)
        )
    assert srv.requests == calls and again[0].cache_hits > 0
    assert again[0].ok == 3 and s2.spent == 0 and not s2.budget_reached
