"""The Formal Reasoning equivalence judge (docs/memoryarena.md §5.2): role `judge`, yes/no verdict.

Faithful default: the question is NOT shown (upstream passes none, so the prompt reads
`Question: None`) and the verdict is a substring test for "yes" on the lower-cased reply.
`judge_includes_question=True` shows the question; `strict_verdict=True` requires the reply's
first word to be "yes"."""

from __future__ import annotations

import re
from typing import Any

from kit.reader import plain_text
from runners.api import Backbone, Message
from runners.upstream import TextSources, UpstreamFile

MATH_ENV = UpstreamFile("MemoryArena", "env/env_systems/math_env.py")
# Upstream's judge prompts (MathEnvironment.judge) are read at run time; these are our own wording,
# used and recorded as paraphrase only when the pinned file is unavailable.
JUDGE_SYSTEM = "You decide whether two mathematical expressions are equivalent. Reply with yes or no only."
JUDGE_USER = (
    "As a mathematics expert, decide whether Expression 1 (a proposed answer) is mathematically "
    "equivalent to Expression 2 (the reference answer) for the question below.\n"
    "Question: {query}\nExpression 1: {action}\nExpression 2: {ground_truth}\nAnswer yes or no only."
)


def judge_prompts(sources: TextSources | None = None) -> tuple[str, str]:
    """(system, user template with {query} {action} {ground_truth}) as MathEnvironment.judge sends them."""
    sources = sources if sources is not None else TextSources()
    system = sources.literal("judge.system", MATH_ENV, "MathEnvironment.judge.messages", JUDGE_SYSTEM, (0, "content"))
    user = sources.fstring("judge.user", MATH_ENV, "MathEnvironment.judge.judge_prompt", JUDGE_USER)
    return system, user


def judge_messages(
    answer: str, gold: str, question: str | None, prompts: tuple[str, str] | None = None
) -> list[Message]:
    system, user = prompts or judge_prompts()
    text = user.format(query=question if question is not None else "None", action=answer, ground_truth=gold)
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def verdict(reply: str, *, strict: bool = False) -> bool:
    """Upstream's reading of the judge's reply, after the shared reader drops thinking
    (kit.reader: a `<think>` block that weighs "yes or no" is not the verdict)."""
    text = plain_text(reply or "")[0].lower()
    if strict:
        m = re.match(r"\W*(\w+)", text)
        return m is not None and m.group(1) == "yes"
    return "yes" in text


def scripted_equivalent(answer: str, gold: str) -> bool:
    """What the scripted judge says: equal after removing spaces and case (a stand-in, labelled scripted)."""
    norm = lambda s: re.sub(r"\s+", "", (s or "").lower())  # noqa: E731
    return norm(answer) == norm(gold) and norm(gold) != ""


async def judge(
    backbone: Backbone,
    *,
    answer: str,
    gold: str,
    question: str | None,
    strict: bool = False,
    prompts: tuple[str, str] | None = None,
    **sampling: Any,
) -> tuple[bool, str]:
    c = await backbone.complete(judge_messages(answer, gold, question, prompts), role="judge", **sampling)
    return verdict(c.text, strict=strict), c.text
