"""The correction texts of PoS's repair turns, read at run time from the pinned upstream files
(runners.upstream), with our own wording as the fallback (recorded as "paraphrase" in
`SOURCES`).

Upstream's repair turns (PoS @506558c), which the project follows:
- policy (`baselines/react.py` `_request_decision`): messages + the raw reply (assistant) + the
  correction `REPAIR_PROMPT` of `prompts/react_prompt.py`;
- policy without an executable action (`_decide_after_rejected_operation`): messages + the
  decision (assistant) + `MISSING_ACTION_DIRECTIVE` of `baselines/react.py`, once;
- belief model (`belief/manager.py` → `build_belief_repair_prompt` of
  `prompts/prompt_generation.py`), Sentinel audit and progress judge
  (`build_sentinel_repair_prompt` / `build_progress_repair_prompt` of
  `prompts/beliefSentinel_prompt.py`): messages + one user correction (upstream does not replay
  the raw reply for these roles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from runners.upstream import TextSources, UpstreamFile, fill_fields, py_function_strings

if TYPE_CHECKING:
    from runners.api import ProtocolError

SOURCES = TextSources()
REACT_PROMPT = UpstreamFile("PoS", "prompts/react_prompt.py")
REACT = UpstreamFile("PoS", "baselines/react.py")
BELIEF_PROMPTS = UpstreamFile("PoS", "prompts/prompt_generation.py")
SENTINEL_PROMPTS = UpstreamFile("PoS", "prompts/beliefSentinel_prompt.py")
MANAGER = UpstreamFile("PoS", "belief/manager.py")

_POLICY_FALLBACK = "Write the same decision again as one complete JSON object in the schema asked for."
_MISSING_FALLBACK = (
    "Your last JSON had no executable action, and the task is not over: a final answer or a claim that you "
    "are done does not end it. Reply with one new decision in the exact action schema of the system prompt."
)
_BELIEF_FALLBACK = (
    "Your last JSON did not fit the schema asked for: {schema_error}. ",
    "Your last reply was not valid JSON. ",
    "Write the same answer again as one JSON object with exactly the keys asked for; each array item must be an "
    "object.",
)
_KEY_SET_FALLBACK = "key set must be exactly {keys}; missing {missing}, unexpected {extra}"
_SENTINEL_FALLBACK = "Write the same validation result again as one valid JSON object."
_PROGRESS_FALLBACK = "Write the same progress judgement again as one valid JSON object."


def policy_repair() -> str:
    return SOURCES.string("pos.policy_repair", REACT_PROMPT, "REPAIR_PROMPT", _POLICY_FALLBACK)


def missing_action() -> str:
    return SOURCES.string("pos.missing_action", REACT, "MISSING_ACTION_DIRECTIVE", _MISSING_FALLBACK)


def _function_text(key: str, f: UpstreamFile, qualname: str, n: int, fallback: tuple[str, ...]) -> tuple[str, ...]:
    found = py_function_strings(f, qualname)
    ok = found is not None and len(found) == n
    SOURCES.use(key, f, "ok" if ok else None, "", symbol=qualname)
    return tuple(found) if ok else fallback  # type: ignore[arg-type]


def belief_repair(schema_error: str | None) -> str:
    """Upstream's belief repair correction: schema failure (with the error) or invalid JSON."""
    schema, invalid, ask = _function_text(
        "pos.belief_repair", BELIEF_PROMPTS, "build_belief_repair_prompt", 3, _BELIEF_FALLBACK
    )
    return (schema.format(schema_error=schema_error) if schema_error else invalid) + ask


def sentinel_repair() -> str:
    return _function_text(
        "pos.sentinel_repair", SENTINEL_PROMPTS, "build_sentinel_repair_prompt", 1, (_SENTINEL_FALLBACK,)
    )[0]


def progress_repair() -> str:
    return _function_text(
        "pos.progress_repair", SENTINEL_PROMPTS, "build_progress_repair_prompt", 1, (_PROGRESS_FALLBACK,)
    )[0]


def key_set_error(keys: list[str], missing: list[str], extra: list[str]) -> str:
    """A reply's wrong top-level key set, in the release's words (`BeliefManager._validate_model_payload`:
    the f-string naming `missing` and `extra`, each a sorted Python list), read at run time; the
    project's wording without the file. This text is the `{schema_error}` of the belief repair turn."""
    found = [t for t in py_function_strings(MANAGER, "BeliefManager._validate_model_payload") or [] if "{missing}" in t]
    template = SOURCES.use(
        "pos.belief_key_set_error",
        MANAGER,
        found[0] if len(found) == 1 and "{extra}" in found[0] else None,
        _KEY_SET_FALLBACK,
        symbol="BeliefManager._validate_model_payload",
    )
    return fill_fields(template, {"keys": keys, "missing": sorted(missing), "extra": sorted(extra)})


def schema_error(errors: list[ProtocolError]) -> str | None:
    """The schema error to name (None when the reply was not JSON at all, as upstream tells apart)."""
    bad = [e.detail for e in errors if e.kind == "bad_field"]
    return "; ".join(bad)[:300] if bad and not any(e.kind in ("bad_json", "empty") for e in errors) else None
