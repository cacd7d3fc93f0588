"""What every method is told about ClinDiag (docs/pos-benchmarks.md §3.5): the doctor policy, the
tools, and the fixed notice after the task. Our own wording."""

from __future__ import annotations

import json
from typing import Any

from runners.api import ToolSpec

SUBMIT = "submit_diagnosis"
QUERY_TOOLS: dict[str, tuple[str, str]] = {  # tool → (section, description)
    "ask_history": (
        "history",
        "Ask one specific question about the patient's medical history (complaint, present illness, past, family, "
        "social history).",
    ),
    "ask_physical_exam": (
        "physical_exam",
        "Ask one specific question about the physical examination (vital signs, findings, changes over time).",
    ),
    "order_lab_test": ("lab", "Order / ask about one specific laboratory test and get its result."),
    "order_radiographic_test": (
        "radiographic",
        "Order / ask about one specific imaging study (X-ray, CT, MRI, ultrasound) and get its result.",
    ),
    "order_other_test": (
        "other",
        "Order / ask about one other specific test (endoscopy, biopsy/pathology, genetic test, ECG, …) and get its "
        "result.",
    ),
}
NOTICE = (
    "Notice: only the initial presentation above is known. Gather everything else with the tools, one specific "
    f"question per turn. When the evidence is sufficient, submit exactly once with `{SUBMIT}`."
)


OWN_TOOL_TEXT = {
    "question": "one specific question",
    "submit": "Submit your diagnosis. Ends the case when final_diagnosis is not empty.",
    "final_diagnosis": "the single most likely diagnosis",
    "differential_diagnosis": "other diagnoses considered, comma-separated",
    "diagnostic_reasoning": "the case evidence supporting the diagnosis",
}


def tool_specs(texts: dict[str, Any] | None = None) -> list[ToolSpec]:
    """The five query tools and `submit_diagnosis`: the release's descriptions (`provider_tool_schemas`,
    with each tool's scope and example question; benchmarks/clindiag/texts.py) when `texts` carries
    them, else the project's own."""
    from runners.upstream import fill_fields

    up = (texts or {}).get("tools")
    t = up or OWN_TOOL_TEXT

    def query_text(name: str, section: str, own: str) -> str:
        example = (texts or {}).get("example", {}).get(section)
        if up is None or example is None:
            return own
        return fill_fields(up["query"], {"spec['scope']": texts["scope"][section], "spec['example']": example})  # type: ignore[index]

    q = {
        "type": "object",
        "properties": {"question": {"type": "string", "description": t["question"]}},
        "required": ["question"],
    }
    specs = [ToolSpec(name=n, description=query_text(n, sec, d), parameters=q) for n, (sec, d) in QUERY_TOOLS.items()]
    specs.append(
        ToolSpec(
            name=SUBMIT,
            description=t["submit"],
            parameters={
                "type": "object",
                "required": ["final_diagnosis"],
                "properties": {
                    k: {"type": "string", "description": t[k]}
                    for k in ("final_diagnosis", "differential_diagnosis", "diagnostic_reasoning")
                },
            },
        )
    )
    return specs


def policy(max_steps: int) -> str:
    return f"""You are the attending physician diagnosing one patient. The patient's record is held by an information \
provider you reach only through the tools.

Workflow (usual order; you may go back to any step): take the history → examine the patient → order laboratory, \
imaging and other tests → submit the diagnosis.

Questioning discipline:
- One specific question per turn (e.g. "What is the serum sodium?", not "Tell me everything").
- Choose the question that best separates the diagnoses still in play; do not repeat a question already answered.
- Missing items are reported as not specified: move on instead of asking again.

Submission: call `{SUBMIT}` once with the single most likely final diagnosis (a specific disease name), a \
differential, and your reasoning from the case evidence. You have {max_steps} turns, one tool call each; submit before \
they run out."""


def request_text(case_id: str, subset: str, initial: str) -> str:
    """The task JSON of §3.5 followed by the fixed notice."""
    task = {"case_id": case_id, "subset": subset, "initial_presentation": initial}
    return f"Diagnostic task:\n{json.dumps(task, indent=2, ensure_ascii=False)}\n\n{NOTICE}"


def as_field(value: Any) -> str:
    """A submitted optional field as text (strings kept; lists joined; other JSON dumped)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "; ".join(as_field(v) for v in value)
    return json.dumps(value, ensure_ascii=False)
