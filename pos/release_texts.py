"""The PoS release's texts for the belief model, the Belief Text, the Sentinel and composed
recovery, read at run time from the pinned release files (runners/upstream.py), never written here:

- belief model (`prompts/prompt_generation.py`): `BELIEF_SYSTEM_PROMPT`; the user messages of
  `build_initial_belief_prompt` and `build_belief_update_prompt` (their own templates, with the
  consistency-issue section, `EXECUTION_EXAMPLE` / `DIAGNOSTIC_EXAMPLE` and the JSON schemas
  `INITIAL_SCHEMA` / `UPDATE_SCHEMA`); Belief Text: `BELIEF_TEXT_SYSTEM_PROMPT` + the JSON input;
- Sentinel (`prompts/beliefSentinel_prompt.py`): `CONSISTENCY_SYSTEM_PROMPT` + the audit input and
  the reply instruction of `build_local_audit_prompt`; `PROGRESS_SYSTEM_PROMPT` + the progress input,
  `EXECUTION_PROGRESS_EXAMPLE` and the reply instruction of `build_execution_progress_prompt`;
- recovery (`belief/recoveryPlanning.py`): the pattern constraints of `_pattern_constraint` and
  the gap constraints of `compose_recovery_instruction`.

`load()` gives them all or None (then pos/prompts.py and pos/recovery.py use the project's wording,
and every missing text is listed as paraphrased in the manifest). Generic recovery
(`recovery.mode: generic`, not released) stays the project's own text, labelled so.
[harness choice] A multi-request task's carried world (not in the release) follows the initial
belief's user message as one more paragraph; a belief-model build error is sent as the release's
belief repair turn."""

from __future__ import annotations

import ast
import json
from typing import Any, cast

from runners.api import Message
from runners.upstream import (
    TextSources,
    UpstreamFile,
    file_text,
    fill_fields,
    fill_parts,
    parse_python,
    py_fstring_parts,
    py_function_strings,
    py_literal,
    strings_of,
)

BELIEF = UpstreamFile("PoS", "prompts/prompt_generation.py")
SENTINEL = UpstreamFile("PoS", "prompts/beliefSentinel_prompt.py")
RECOVERY = UpstreamFile("PoS", "belief/recoveryPlanning.py")
CARRIED_HEADING = "Carried from earlier requests (harness addition for multi-request tasks):"


def _only(strings: list[str] | None, n: int) -> list[str] | None:
    return strings if strings is not None and len(strings) == n else None


def load(sources: TextSources) -> dict[str, Any] | None:
    """Every release text of the belief model, Sentinel and recovery, each recorded in `sources`."""
    s = lambda key, f, sym: sources.string(f"pos.{key}", f, sym, None)  # type: ignore[arg-type]  # noqa: E731
    t: dict[str, Any] = {
        "belief_system": s("belief.system", BELIEF, "BELIEF_SYSTEM_PROMPT"),
        "text_system": s("belief_text.system", BELIEF, "BELIEF_TEXT_SYSTEM_PROMPT"),
        "example": {
            "execution": s("belief.execution_example", BELIEF, "EXECUTION_EXAMPLE"),
            "diagnostic": s("belief.diagnostic_example", BELIEF, "DIAGNOSTIC_EXAMPLE"),
        },
        "audit_system": s("sentinel.consistency_system", SENTINEL, "CONSISTENCY_SYSTEM_PROMPT"),
        "progress_system": s("sentinel.progress_system", SENTINEL, "PROGRESS_SYSTEM_PROMPT"),
        "progress_example": s("sentinel.progress_example", SENTINEL, "EXECUTION_PROGRESS_EXAMPLE"),
    }
    for key, sym in (("init_schema", "INITIAL_SCHEMA"), ("update_schema", "UPDATE_SCHEMA")):
        t[key] = sources.use(f"pos.belief.{sym.lower()}", BELIEF, py_literal(BELIEF, sym), None, symbol=sym)
    for key, fn in (("init_user", "build_initial_belief_prompt"), ("update_user", "build_belief_update_prompt")):
        t[key] = sources.use(
            f"pos.belief.{fn}", BELIEF, py_fstring_parts(BELIEF, fn, "user"), None, symbol=f"{fn}.user"
        )
    issue = _only([x for x in py_function_strings(BELIEF, "build_belief_update_prompt") or [] if "{" not in x], 1)
    t["issue_heading"] = sources.use(
        "pos.belief.issue_section",
        BELIEF,
        issue[0] if issue else None,
        None,
        symbol="build_belief_update_prompt.issue_section",
    )
    audit = _only(py_function_strings(SENTINEL, "build_local_audit_prompt"), 1)
    t["audit_suffix"] = sources.use(
        "pos.sentinel.audit_reply", SENTINEL, audit[0] if audit else None, None, symbol="build_local_audit_prompt"
    )
    progress = _only(py_function_strings(SENTINEL, "build_execution_progress_prompt"), 1)
    t["progress_suffix"] = sources.use(
        "pos.sentinel.progress_reply",
        SENTINEL,
        progress[0] if progress else None,
        None,
        symbol="build_execution_progress_prompt",
    )
    pattern = _pattern_texts()
    gap = _only(py_function_strings(RECOVERY, "compose_recovery_instruction"), 3)
    t["pattern"] = sources.use("pos.recovery.pattern", RECOVERY, pattern, None, symbol="_pattern_constraint")
    t["gap"] = sources.use("pos.recovery.gap", RECOVERY, gap, None, symbol="compose_recovery_instruction")
    flat = [v for k, v in t.items() if k != "example"] + list(t["example"].values())
    return None if any(v is None for v in flat) else t


def _pattern_texts() -> dict[str | None, list[str]] | None:
    """`_pattern_constraint`'s sentences per pattern ('static', 'cycle', 'drift'; None: the final
    fallback), each a `py_function_strings`-style template."""
    src = file_text(RECOVERY)
    if src is None:
        return None
    fn = next(
        (n for n in parse_python(src).body if isinstance(n, ast.FunctionDef) and n.name == "_pattern_constraint"), None
    )
    if fn is None:
        return None
    out: dict[str | None, list[str]] = {}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.If)
            and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.comparators[0], ast.Constant)
        ):
            out[cast("str | None", stmt.test.comparators[0].value)] = _strings(stmt.body)
        elif isinstance(stmt, ast.Return):
            out[None] = _strings([stmt])
    ok = (
        set(out) == {"static", "cycle", "drift", None}
        and len(out["static"]) == 2
        and all(len(out[k]) == 1 for k in ("cycle", "drift", None))
    )
    return out if ok else None


def _strings(body: list[ast.stmt]) -> list[str]:
    """Sentences of some statements (string constants and f-strings, fields as `{expression}`)."""
    mod = ast.Module(
        body=[
            ast.FunctionDef(
                name="f",
                args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                body=body,
                decorator_list=[],
                lineno=0,
            )
        ],
        type_ignores=[],
    )
    return strings_of(mod, "f") or []


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def init_messages(
    t: dict[str, Any], *, task: str, observation: str, mode: str, carried: dict[str, Any] | None
) -> list[Message]:
    user = fill_parts(
        t["init_user"],
        {
            "state['task']": task,
            "state['observation']": observation,
            "_task_mode_example(config)": t["example"][mode],
            "json.dumps(INITIAL_SCHEMA, ensure_ascii=False)": _json(t["init_schema"]),
        },
    )
    if carried:
        user += f"\n\n{CARRIED_HEADING}\n{json.dumps(carried, ensure_ascii=False, default=str)}"
    return [{"role": "system", "content": t["belief_system"]}, {"role": "user", "content": user}]


def update_messages(
    t: dict[str, Any],
    *,
    belief: dict[str, Any],
    transition: dict[str, Any],
    mode: str,
    issues: list[dict[str, Any]] | None,
) -> list[Message]:
    issue_section = t["issue_heading"] + _json(issues) if issues else ""
    user = fill_parts(
        t["update_user"],
        {
            "json.dumps(belief_context, ensure_ascii=False)": json.dumps(belief, ensure_ascii=False, default=str),
            "json.dumps(transition, ensure_ascii=False)": json.dumps(transition, ensure_ascii=False, default=str),
            "issue_section": issue_section,
            "_task_mode_example(config)": t["example"][mode],
            "json.dumps(UPDATE_SCHEMA, ensure_ascii=False)": _json(t["update_schema"]),
        },
    )
    return [{"role": "system", "content": t["belief_system"]}, {"role": "user", "content": user}]


def belief_text_messages(t: dict[str, Any], payload: dict[str, Any]) -> list[Message]:
    return [
        {"role": "system", "content": t["text_system"]},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
    ]


def audit_messages(t: dict[str, Any], payload: dict[str, Any]) -> list[Message]:
    return [
        {"role": "system", "content": t["audit_system"]},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str) + t["audit_suffix"]},
    ]


def progress_messages(t: dict[str, Any], payload: dict[str, Any]) -> list[Message]:
    user = json.dumps(payload, ensure_ascii=False, default=str) + "\n" + t["progress_example"] + t["progress_suffix"]
    return [{"role": "system", "content": t["progress_system"]}, {"role": "user", "content": user}]


def recovery_instruction(
    t: dict[str, Any], pattern: str | None, gap_type: str, target: str, *, detail: Any, period: int | None
) -> str:
    """The release's `compose_recovery_instruction`: C_pattern + " " + C_gap."""
    p = t["pattern"]
    static_t = next(x for x in p["static"] if "{suffix}" in x)
    suffix_t = next(x for x in p["static"] if x != static_t)
    cycle_t, drift, default = p["cycle"][0], p["drift"][0], p[None][0]
    if pattern == "static":
        suffix = fill_fields(suffix_t, {"json.dumps(action, ensure_ascii=False)": _json(detail)}) if detail else ""
        c_pattern = fill_fields(static_t, {"suffix": suffix})
    elif pattern == "cycle":
        c_pattern = fill_fields(
            cycle_t, {"period": period or 2, "json.dumps(cycle_transitions, ensure_ascii=False)": _json(detail or [])}
        )
    elif pattern == "drift":
        c_pattern = drift
    else:
        c_pattern = default
    epistemic, achievement, joined = t["gap"]
    c_gap = fill_fields(epistemic if gap_type == "epistemic" else achievement, {"gap['target']": target})
    return fill_fields(joined, {"pattern_constraint": c_pattern, "gap_constraint": c_gap})
