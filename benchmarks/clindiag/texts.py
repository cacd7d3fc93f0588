"""ClinDiag's model-facing texts for the information provider and the judge, read at run time
from the PoS release's `benchmarks/clindiag_env.py` (pinned; runners/upstream.py):
`PROVIDER_SYSTEM_PROMPT` (fields `{scope}`, `{record}`), the per-tool `scope` and `example` of
`QUERY_TOOLS`, the tool descriptions of `provider_tool_schemas`,
the no-record text of `ClinDiagCase.record_text`, `JUDGE_SYSTEM_PROMPT` and `JUDGE_USER_PROMPT`
(fields `{reference_final}` … `{submitted_reasoning}`). Without the pinned file the project's own
wording below is used and the cell's manifest lists each such text as paraphrased."""

from __future__ import annotations

from typing import Any

from runners.upstream import TextSources, UpstreamFile, py_function_strings

CLINDIAG_ENV = UpstreamFile("PoS", "benchmarks/clindiag_env.py")

# Section (benchmarks/clindiag/data.py) → the release's query tool of that section.
SECTION_TOOL = {
    "history": "ask_history",
    "physical_exam": "ask_physical_exam",
    "lab": "order_lab_test",
    "radiographic": "order_radiographic_test",
    "other": "order_other_test",
}

# --- the project's own wording (fallback, [paraphrased]) ---
PROVIDER_RULES = """You hold one part of a patient's medical record and answer a doctor's question about it.
Rules:
- Answer strictly the question asked, only from the record below. Add nothing that was not asked.
- Do not guess, interpret, or give advice.
- If the asked item is not in the record, say it is not specified.
- Never state, suggest or hint at any diagnosis, even if the record names one; report findings only."""
PROVIDER_SYSTEM = PROVIDER_RULES + "\n\nYou answer questions about {scope}.\n\nRecord:\n{record}"
SCOPE = {
    "history": "the medical history (chief complaint, present illness, past, family and social history)",
    "physical_exam": "the physical examinations (vital signs, findings, changes over time)",
    "lab": "the laboratory tests",
    "radiographic": "the radiographic (imaging) tests",
    "other": "the other tests (endoscopy, pathology, genetics, ECG and similar)",
}
NO_RECORD = "There is no record of this category for this patient."
JUDGE_SYSTEM = """You grade a clinical diagnosis against a reference. Reply with one JSON object only:
{"diagnosis_correct": true|false, "differential_hit": true|false, "reason": "<one sentence>"}
Rules:
- diagnosis_correct is true only when the submitted final diagnosis names the same disease as the reference: synonyms, \
standard abbreviations and equivalent phrasings count.
- A related condition, a broader category, a complication, or a predisposing condition is NOT the same disease: false.
- Extra specificity beyond the reference counts as correct only if the submitted reasoning supports it with evidence \
from the case.
- differential_hit is true when the reference diagnosis appears in the submitted differential diagnosis."""
JUDGE_USER = """Reference:
final diagnosis: {reference_final}
differential diagnosis: {reference_differential}
diagnostic reasoning: {reference_reasoning}

Submitted:
final diagnosis: {submitted_final}
differential diagnosis: {submitted_differential}
diagnostic reasoning: {submitted_reasoning}"""


def _no_record_text() -> str | None:
    """The release's no-record sentence (written inline in `ClinDiagCase.record_text`)."""
    found = [
        s for s in py_function_strings(CLINDIAG_ENV, "ClinDiagCase.record_text") or [] if s.startswith("No record")
    ]
    return found[0] if found else None


TOOL_KEYS = ("query", "question", "submit", "final_diagnosis", "differential_diagnosis", "diagnostic_reasoning")
"""The tool texts of `provider_tool_schemas`, in source order."""


def _tool_texts() -> dict[str, str] | None:
    found = py_function_strings(CLINDIAG_ENV, "provider_tool_schemas")
    if not found or len(found) != len(TOOL_KEYS) or "{spec['scope']}" not in found[0]:
        return None
    return dict(zip(TOOL_KEYS, found))


def clindiag_texts(sources: TextSources | None = None) -> dict[str, Any]:
    """{"provider_system": template, "scope": {section: text}, "no_record": text,
    "judge_system": text, "judge_user": template}; each recorded in `sources`."""
    sources = sources if sources is not None else TextSources()
    f = CLINDIAG_ENV
    return {
        "provider_system": sources.string("provider.system", f, "PROVIDER_SYSTEM_PROMPT", PROVIDER_SYSTEM),
        "scope": {
            section: sources.literal(
                f"provider.scope.{section}", f, "QUERY_TOOLS", SCOPE[section], path=(tool, "scope")
            )
            for section, tool in SECTION_TOOL.items()
        },
        "no_record": sources.use(
            "provider.no_record", f, _no_record_text(), NO_RECORD, symbol="ClinDiagCase.record_text"
        ),
        "judge_system": sources.string("judge.system", f, "JUDGE_SYSTEM_PROMPT", JUDGE_SYSTEM),
        "judge_user": sources.string("judge.user", f, "JUDGE_USER_PROMPT", JUDGE_USER),
        # the query and submit tools' descriptions (None: the project's own, benchmarks/clindiag/prompts.py)
        "tools": sources.use("tools", f, _tool_texts(), None, symbol="provider_tool_schemas"),
        "example": {
            section: sources.literal(f"tools.example.{section}", f, "QUERY_TOOLS", None, path=(tool, "example"))
            for section, tool in SECTION_TOOL.items()
        },
    }
