"""NL_ASSERTION judge (docs/tau-bench.md §7.3): prompt layout, verdict parsing, gating, retries."""

from __future__ import annotations

import asyncio
import json

import pytest

from benchmarks.tau.judge import judge_messages, nl_assertions_check, parse_verdict, transcript
from runners.api import Backbone, BackboneError, Completion

TRAJ = [
    {"role": "assistant", "content": "Hi! How can I help you today?", "tool_calls": None},
    {"role": "user", "content": "Cancel #W1."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "get_order_details", "arguments": {}}]},
    {"role": "tool", "id": "c1", "name": "get_order_details", "content": "Error: no order with that id", "error": True},
]


class Replies(Backbone):
    def __init__(self, *texts: str) -> None:
        self.texts, self.calls, self.name, self.model = list(texts), [], "r", "r"

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
        self.calls.append((role, attempt, sampling))
        return Completion(text=self.texts[min(attempt, len(self.texts) - 1)], role=role, model="r")


def verdict(*met: bool) -> str:
    return json.dumps(
        {"results": [{"expectedOutcome": str(i), "reasoning": "", "metExpectation": m} for i, m in enumerate(met)]}
    )


def test_prompt_layout():
    assert transcript(TRAJ).splitlines()[2:] == ["assistant: None", "tool: Error: no order with that id"]
    msgs = judge_messages(TRAJ, ["Agent cancels order #W1.", "Agent is polite."])
    assert msgs[0]["role"] == "system" and "metExpectation" in msgs[0]["content"]
    lines = [line.strip() for line in msgs[1]["content"].splitlines() if line.strip()]  # upstream's text is indented
    assert lines[:2] == ["conversation:", "assistant: Hi! How can I help you today?"]
    assert lines[-2:] == ["expectedOutcomes:", "['Agent cancels order #W1.', 'Agent is polite.']"]


def test_parse_verdict_is_total():
    assert parse_verdict(verdict(True)) == [{"expectedOutcome": "0", "reasoning": "", "metExpectation": True}]
    assert parse_verdict("```json\n" + verdict(False) + "\n```")[0]["metExpectation"] is False
    for bad in ("", "yes", "[1, 2]", '{"results": 3}', '{"results": [1]}'):
        assert parse_verdict(bad) is None


def test_reward_gating_and_retries():
    b = Replies(verdict(True, True))
    out = asyncio.run(nl_assertions_check(b, TRAJ, ["a", "b"]))
    assert out["reward"] == 1.0 and b.calls == [("judge", 0, {"temperature": 0.0})]
    assert asyncio.run(nl_assertions_check(Replies(verdict(True, False)), TRAJ, ["a", "b"]))["reward"] == 0.0
    assert (
        asyncio.run(nl_assertions_check(Replies(json.dumps({"results": []})), TRAJ, ["a"]))["reward"] == 1.0
    )  # upstream quirk
    none = Replies("unused")
    assert asyncio.run(nl_assertions_check(none, TRAJ, None)) == {"reward": 1.0, "results": [], "called": False}
    assert none.calls == []
    flaky = Replies("not json", verdict(True))
    assert asyncio.run(nl_assertions_check(flaky, TRAJ, ["a"]))["reward"] == 1.0 and len(flaky.calls) == 2
    with pytest.raises(BackboneError, match="judge reply is not the requested JSON after 3 attempts"):
        asyncio.run(nl_assertions_check(Replies("no"), TRAJ, ["a"]))


def test_verdicts_are_read_as_upstream_nl_assertion_checks():
    # §7.3: results become NLAssertionCheck(nl_assertion, met: bool, justification) — pydantic coerces
    # "true"/"yes"/1 to True; a missing key or an uncoercible value makes upstream raise.
    lax = json.dumps(
        {
            "results": [
                {"expectedOutcome": "a", "reasoning": "r", "metExpectation": "true"},
                {"expectedOutcome": "b", "reasoning": "r", "metExpectation": 1},
            ]
        }
    )
    assert asyncio.run(nl_assertions_check(Replies(lax), TRAJ, ["a", "b"]))["reward"] == 1.0
    assert parse_verdict(
        json.dumps({"results": [{"expectedOutcome": "a", "reasoning": "", "metExpectation": "no"}]})
    ) == [{"expectedOutcome": "a", "reasoning": "", "metExpectation": False}]
    for bad in (
        {"expectedOutcome": "a", "metExpectation": True},  # no reasoning
        {"expectedOutcome": "a", "reasoning": "r", "metExpectation": "maybe"},
        {"expectedOutcome": "a", "reasoning": "r", "metExpectation": None},
    ):
        assert parse_verdict(json.dumps({"results": [bad]})) is None, bad
    # `data.get("results", [])`: a JSON object without results grades nothing and passes (upstream quirk).
    silent = Replies(json.dumps({"verdict": "all good"}))
    assert asyncio.run(nl_assertions_check(silent, TRAJ, ["a"]))["reward"] == 1.0 and len(silent.calls) == 1
