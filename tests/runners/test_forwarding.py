"""The wrappers an episode's backbone gets (runners.pool.Resampled and InFlight, runners.budget.BudgetGuard):
each changes or guards the call at the Forwarding base's hooks and otherwise passes it on as it came."""

import asyncio
from types import SimpleNamespace

import pytest

from runners.backbones.scripted import ScriptedBackbone
from runners.budget import BudgetGuard, BudgetReached
from runners.pool import RESAMPLE_STRIDE, InFlight, Resampled

MSG = [{"role": "user", "content": "hi"}]


class Seen(ScriptedBackbone):
    """Records each call's sample index and the counters the wrappers keep while it runs."""

    def __init__(self, progress, ledger):
        super().__init__()
        self.progress, self.ledger, self.seen = progress, ledger, []

    async def complete(self, messages, *, role, **kw):
        self.seen.append(
            (kw.get("attempt"), kw.get("temperature"), self.progress.calls_in_flight, self.ledger.calls_flying)
        )
        return await super().complete(messages, role=role, **kw)


class Ledger:
    def __init__(self):
        self.calls_flying, self.spent = 0, False

    def exhausted(self, calls=False):
        return "budget of $1.00 spent" if self.spent else ""


def test_wrappers_move_the_sample_index_count_in_flight_and_refuse_at_the_cap():
    progress, ledger = SimpleNamespace(calls_in_flight=0), Ledger()
    inner = Seen(progress, ledger)
    bb = InFlight(Resampled(BudgetGuard(inner, ledger), 2), progress)
    c = asyncio.run(bb.complete(MSG, role="agent", attempt=3, temperature=0.5))
    assert c.scripted and c.role == "agent"
    assert inner.seen == [(3 + 2 * RESAMPLE_STRIDE, 0.5, 1, 1)]  # sampling passed on, both counters up during it
    assert (progress.calls_in_flight, ledger.calls_flying) == (0, 0)  # and down after
    ledger.spent = True
    with pytest.raises(BudgetReached, match="spent"):
        asyncio.run(bb.complete(MSG, role="agent"))
    assert len(inner.seen) == 1  # the refused call never reached the endpoint
    assert (progress.calls_in_flight, ledger.calls_flying) == (0, 0)
