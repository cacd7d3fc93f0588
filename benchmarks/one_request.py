"""The environment shape of a benchmark whose task is one request (ALFWorld, LOCA, RCA-100,
ClinDiag): the request is opened on the first `next_request` and never again, and the step
budget is one of the environment's settings."""

from __future__ import annotations

from typing import Any

from runners.api import Environment, Request


class OneRequestEnv(Environment):
    """Subclasses set `params` (settings, with the key `budget_key`) and implement `open_request`
    (which may start the task's engine)."""

    budget_key = "max_steps"
    params: dict[str, Any]
    request: Request | None = None
    _served = False

    def step_budget(self) -> int:
        return int(self.params[self.budget_key])

    async def open_request(self) -> Request:
        raise NotImplementedError

    async def next_request(self) -> Request | None:
        if self._served:
            return None
        self._served = True
        self.request = await self.open_request()
        return self.request
