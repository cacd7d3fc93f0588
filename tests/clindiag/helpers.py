"""A recording fake backbone for ClinDiag tests (replies from a list, records role and messages)."""

from __future__ import annotations

from runners.api import Backbone, Completion


class ListBackbone(Backbone):
    name = model = "list"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.calls: list[dict] = []

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
        self.calls.append({"role": role, "messages": messages, "attempt": attempt, "sampling": sampling})
        text = self.replies.pop(0) if self.replies else ""
        return Completion(text=text, role=role, model=self.model)
