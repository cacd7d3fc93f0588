"""The Formal Reasoning equivalence judge (memoryarena.md §5.2): role `judge`, yes/no verdict.

Faithful default: the question is NOT shown (upstream passes none, so the prompt reads
`Question: None`) and the verdict is a substring test for "yes" on the lower-cased reply.
`judge_includes_question=True` shows the question; `strict_verdict=True` requires the reply's
first word to be "yes"."""
from __future__ import annotations

import re

from kit.reader import plain_text

from runners.api import Backbone, Message

JUDGE_SYSTEM = "You decide whether two mathematical expressions are equivalent. Reply with yes or no only."


def judge_messages(answer: str, gold: str, question: str | None) -> list[Message]:
    user = (
        "As a mathematics expert, decide whether Expression 1 (a proposed answer) is mathematically "
        "equivalent to Expression 2 (the reference answer) for the question below.\n"
        f"Question: {question if question is not None else 'None'}\n"
        f"Expression 1: {answer}\n"
        f"Expression 2: {gold}\n"
        "Answer yes or no only."
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def verdict(reply: str, *, strict: bool = False) -> bool:
    """Upstream's reading of the judge's reply, after the shared reader drops thinking
    (kit.reader: a `<think>` block that weighs "yes or no" is not the verdict)."""
    text = plain_text(reply or "")[0].lower()
    if strict:
        m = re.match(r"\W*(\w+)", text)
        return bool(m) and m.group(1) == "yes"
    return "yes" in text


def scripted_equivalent(answer: str, gold: str) -> bool:
    """What the scripted judge says: equal after removing spaces and case (a stand-in, labelled scripted)."""
    norm = lambda s: re.sub(r"\s+", "", (s or "").lower())  # noqa: E731
    return norm(answer) == norm(gold) and norm(gold) != ""


async def judge(backbone: Backbone, *, answer: str, gold: str, question: str | None, strict: bool = False, **sampling) -> tuple[bool, str]:
    c = await backbone.complete(judge_messages(answer, gold, question), role="judge", **sampling)
    return verdict(c.text, strict=strict), c.text
