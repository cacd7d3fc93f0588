"""The shared ask-again loop (kit/asking.py) that the agent step and the ClinDiag and τ³ judges
use: unusable replies retried up to the bound, each reply and reading recorded, repair turns
built from the first prompt, then the failure path."""

from __future__ import annotations

import asyncio

import pytest

from kit.asking import ask_until
from runners.api import Backbone, BackboneError, Completion

PROMPT = [{"role": "system", "content": "answer with a number"}, {"role": "user", "content": "how many?"}]


class Replies(Backbone):
    """Answers from a list in order; records (messages, role, attempt, the other keywords)."""

    name = model = "replies"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list, str, int, dict]] = []

    async def complete(self, messages, *, role, attempt=0, **kw):
        self.calls.append((messages, role, attempt, kw))
        return Completion(text=self.replies.pop(0), role=role, model=self.model)


def number(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def ask(bb: Backbone, **kw):
    kw = {"role": "judge", "read": number, "usable": lambda v: v is not None, "attempts": 3, **kw}
    return asyncio.run(ask_until(bb, PROMPT, **kw))


def test_unusable_replies_are_retried_up_to_the_bound_recorded_then_fail():
    bb = Replies("", "many", "lots", "7")  # the fourth reply is never asked for
    asked = ask(bb, temperature=0.0)
    assert not asked.ok and asked.attempts == 3 and len(bb.calls) == 3
    assert asked.replies == ["", "many", "lots"] and asked.readings == [None, None, None]
    assert asked.text == "lots" and asked.value is None and asked.corrections == []
    # a re-sample: the same prompt each time, the next attempt index, the sampling keywords, no protocol
    assert [(m, r, a, kw) for m, r, a, kw in bb.calls] == [(PROMPT, "judge", a, {"temperature": 0.0}) for a in range(3)]
    with pytest.raises(BackboneError, match=r"^the counter gave no number after 3 attempts; last reply: 'lots'$"):
        asked.require("the counter gave no number")


def test_the_first_usable_reply_ends_the_loop():
    bb = Replies("none", "42", "7")
    asked = ask(bb)
    assert asked.ok and asked.require("unused") == 42 and asked.replies == ["none", "42"] and len(bb.calls) == 2


def test_repair_turns_show_the_reply_and_one_correction_after_the_first_prompt():
    bb = Replies("", "many", "lots")
    seen = []

    def repair(value, text):
        seen.append((value, text))
        return f"not a number: {text!r}"

    asked = ask(bb, repair=repair)
    prompts = [m for m, *_ in bb.calls]
    assert prompts[0] == PROMPT
    assert prompts[1] == [*PROMPT, {"role": "user", "content": "not a number: ''"}]  # an empty reply is not replayed
    assert prompts[2] == [
        *PROMPT,
        {"role": "assistant", "content": "many"},
        {"role": "user", "content": "not a number: 'many'"},
    ]
    # no correction follows the last attempt; each correction names the attempt that carries it
    assert seen == [(None, ""), (None, "many")]
    assert asked.corrections == [
        {"attempt": 1, "correction": "not a number: ''"},
        {"attempt": 2, "correction": "not a number: 'many'"},
    ]
    assert [a for _, _, a, _ in bb.calls] == [0, 1, 2] and not asked.ok


def test_protocol_goes_to_the_backbone_only_when_given_and_the_bound_is_checked():
    marker = object()
    bb = Replies("1")
    ask(bb, protocol=marker, attempts=1)
    assert bb.calls[0][3] == {"protocol": marker}
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        ask(Replies("1"), attempts=0)
