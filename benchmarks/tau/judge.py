"""NL_ASSERTION judge (docs/tau-bench.md §7.3; upstream `evaluator_nl_assertions.py`): one call with
role `judge` grading each expected outcome against the transcript; JSON reply."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from kit.asking import ask_until
from kit.blocks import load_object
from runners.api import Backbone, BackboneError, Message
from runners.upstream import TextSources, UpstreamFile

NL_FILE = UpstreamFile("tau2-bench", "src/tau2/evaluator/evaluator_nl_assertions.py")
NL_SCOPE = "NLAssertionsEvaluator.evaluate_nl_assertions"
# The prompts are upstream's, read at run time (`judge_prompts`); the two below are the project's own
# wording, used (and recorded as paraphrase) only when the pinned file is unavailable.
JUDGE_USER = "conversation:\n{trajectory_str}\n\nexpectedOutcomes:\n{nl_assertions}"
JUDGE_SYSTEM = """You are grading a customer-service conversation between a customer (user) and an agent (assistant), \
including the agent's tool calls and the tool results.
You receive the conversation and a list of expected outcomes. Judge each expected outcome separately: decide whether \
the conversation shows that it was met, and explain briefly why.
Answer with JSON only, in this form:
{"results": [{"expectedOutcome": "<the outcome, copied>", "reasoning": "<short reason>", "metExpectation": true or \
false}]}
Give one result per expected outcome, in the given order."""


def transcript(trajectory: list[dict[str, Any]]) -> str:
    """One line per message, `<role>: <content>`; tool-call messages without text print `None`."""
    return "\n".join(f"{m['role']}: {m.get('content')}" for m in trajectory)


def judge_prompts(sources: TextSources | None = None) -> tuple[str, str]:
    """(system prompt, user template with {trajectory_str} and {nl_assertions}) as upstream's
    `evaluate_nl_assertions` writes them (byte for byte, indentation included), else our own."""
    sources = sources if sources is not None else TextSources()
    system = sources.string("judge.system", NL_FILE, f"{NL_SCOPE}.system_prompt", JUDGE_SYSTEM)
    user = sources.fstring("judge.user", NL_FILE, f"{NL_SCOPE}.user_prompt", JUDGE_USER)
    return system, user


def judge_messages(
    trajectory: list[dict[str, Any]], assertions: list[str], prompts: tuple[str, str] | None = None
) -> list[Message]:
    system, user = prompts or judge_prompts()
    # upstream formats the assertion list with str() inside the f-string: the Python list repr
    text = user.format(trajectory_str=transcript(trajectory), nl_assertions=str(list(assertions)))
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


class _Check(BaseModel):
    """Upstream `NLAssertionCheck` (pydantic, lax): `metExpectation` is coerced to bool as pydantic
    does ("true", "yes", 1 → True); a missing key or an uncoercible value is an error."""

    nl_assertion: str
    met: bool
    justification: str


def parse_verdict(text: str) -> list[dict[str, Any]] | None:
    """The graded results, or None when upstream would raise on the reply (§7.3): `json.loads` of
    the text, then `data.get("results", [])` (a reply without `results` grades nothing and so
    passes, as upstream), each result read as `NLAssertionCheck(expectedOutcome, metExpectation,
    reasoning)`. A single surrounding code fence is tolerated (harness leniency)."""
    data, _ = load_object(text)  # shared tolerant reader: thinking, fences, prose, JSON repair
    try:
        if data is None:
            raise ValueError("no JSON object")
        checks = [
            _Check(nl_assertion=r["expectedOutcome"], met=r["metExpectation"], justification=r["reasoning"])
            for r in data.get("results", [])
        ]
    except (ValueError, TypeError, KeyError, AttributeError):  # pydantic's ValidationError is a ValueError
        return None
    return [{"expectedOutcome": c.nl_assertion, "reasoning": c.justification, "metExpectation": c.met} for c in checks]


async def nl_assertions_check(
    backbone: Backbone | None,
    trajectory: list[dict[str, Any]],
    assertions: list[str] | None,
    *,
    attempts: int = 3,
    sampling: dict[str, Any] | None = None,
    prompts: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Reward 1 iff every returned result has `metExpectation` true (an empty list passes, as upstream).
    No assertions → 1.0 without a call. Unparsable replies are re-sampled, then raise BackboneError
    (an infrastructure error, as upstream's retried exception)."""
    if not assertions:
        return {"reward": 1.0, "results": [], "called": False}
    if backbone is None:
        raise BackboneError("the τ³ NL_ASSERTION judge needs a backbone for role 'judge'", fatal=True)
    sampling = {"temperature": 0.0, **(sampling or {})}
    asked = await ask_until(
        backbone,
        judge_messages(trajectory, assertions, prompts),
        role="judge",
        read=parse_verdict,
        usable=lambda r: r is not None,
        attempts=attempts,
        **sampling,
    )
    results = asked.require("τ³ judge reply is not the requested JSON")
    return {"reward": 1.0 if all(r["metExpectation"] for r in results) else 0.0, "results": results, "called": True}


def scripted_verdict(assertions: list[str], met: bool) -> str:
    """What the scripted judge answers (offline runs): every outcome graded `met`."""
    return json.dumps(
        {"results": [{"expectedOutcome": a, "reasoning": "scripted judge", "metExpectation": met} for a in assertions]}
    )
