"""ClinDiag LLM-judge scoring (docs/pos-benchmarks.md §3.6), role `judge`: reference final /
differential / reasoning vs the three submitted fields → {"diagnosis_correct": bool,
"differential_hit": bool, "reason": str}. Valid only when diagnosis_correct is a bool (fenced
JSON accepted); up to `attempts` (3) tries, then a BackboneError (infra, retried on resume).
`scripted_verdict` is the offline judge (§3.7): normalised exact or synonym-list match."""

from __future__ import annotations

import re
from typing import Any

from kit.asking import ask_until
from kit.blocks import load_object
from benchmarks.clindiag import texts as texts_mod
from runners.api import Backbone, Message

SYSTEM = texts_mod.JUDGE_SYSTEM  # the project's wording; a run uses `texts["judge_system"]`

# Offline synonym sets (harness choice, §3.7): every phrase in a set names the same disease.
SYNONYMS: tuple[frozenset[str], ...] = tuple(
    frozenset(s)
    for s in (
        {
            "type 2 diabetes",
            "type 2 diabetes mellitus",
            "t2dm",
            "type ii diabetes",
            "type ii diabetes mellitus",
            "diabetes mellitus type 2",
        },
        {"type 1 diabetes", "type 1 diabetes mellitus", "t1dm", "type i diabetes mellitus"},
        {"laryngotracheoesophageal cleft", "ltec", "laryngotracheo esophageal cleft"},
        {"bipolar disorder", "bipolar affective disorder", "manic depressive illness"},
        {"hepatic failure", "liver failure"},
        {"systemic lupus erythematosus", "sle"},
        {"myocardial infarction", "mi", "heart attack"},
        {"pulmonary embolism", "pe"},
        {"iron deficiency anemia", "iron deficiency anaemia", "ida"},
        {"community acquired pneumonia", "cap"},
        {"diabetic ketoacidosis", "dka"},
        {"kawasaki disease", "mucocutaneous lymph node syndrome"},
        {"hereditary hemorrhagic telangiectasia", "hht", "osler weber rendu syndrome"},
        {"trisomy 18", "edwards syndrome"},
    )
)


def norm(text: str) -> str:
    """Lowercase, '&' → 'and', punctuation → space, collapse spaces, drop a leading article."""
    t = re.sub(r"[^a-z0-9]+", " ", str(text or "").lower().replace("&", " and ")).strip()
    return re.sub(r"^(a|an|the) ", "", t)


def _forms(text: str) -> set[str]:
    """A diagnosis and its parenthetical-free form ('LTEC (type III)' → both)."""
    base = norm(text)
    bare = norm(re.sub(r"\([^)]*\)", " ", str(text or "")))
    return {f for f in (base, bare) if f}


def same_disease(a: str, b: str) -> bool:
    fa, fb = _forms(a), _forms(b)
    if fa & fb:
        return True
    return any(fa & s and fb & s for s in SYNONYMS)


def scripted_verdict(reference: dict[str, str], submitted: dict[str, str]) -> dict[str, Any]:
    """The offline (scripted) judge: normalised exact or synonym match; broader terms fail."""
    ok = same_disease(submitted.get("final_diagnosis", ""), reference["final_diagnosis"])
    items = [i for i in re.split(r"[,;\n]| or ", submitted.get("differential_diagnosis") or "") if i.strip()]
    hit = any(same_disease(i, reference["final_diagnosis"]) for i in items)
    return {
        "diagnosis_correct": ok,
        "differential_hit": hit,
        "reason": "(scripted judge) normalised/synonym match" if ok else "(scripted judge) no normalised/synonym match",
    }


def judge_messages(
    reference: dict[str, str], submitted: dict[str, str], texts: dict[str, Any] | None = None
) -> list[Message]:
    """The release's `judge_submission` messages: JUDGE_SYSTEM_PROMPT, then JUDGE_USER_PROMPT
    filled with the reference and the submitted fields (texts: `texts.clindiag_texts()`)."""
    t = texts if texts is not None else texts_mod.clindiag_texts()
    user = t["judge_user"].format(
        reference_final=reference.get("final_diagnosis", ""),
        reference_differential=reference.get("differential_diagnosis", ""),
        reference_reasoning=reference.get("diagnostic_reasoning", ""),
        submitted_final=submitted.get("final_diagnosis", ""),
        submitted_differential=submitted.get("differential_diagnosis", ""),
        submitted_reasoning=submitted.get("diagnostic_reasoning", ""),
    )
    return [{"role": "system", "content": t["judge_system"]}, {"role": "user", "content": user}]


def parse_verdict(text: str) -> dict[str, Any] | None:
    """The verdict object, or None when it is not valid (total: never raises)."""
    obj, _ = load_object(text or "")  # shared tolerant reader: thinking, fences, prose, JSON repair
    if not isinstance(obj, dict) or not isinstance(obj.get("diagnosis_correct"), bool):
        return None
    hit = obj.get("differential_hit")
    return {
        "diagnosis_correct": obj["diagnosis_correct"],
        "differential_hit": hit if isinstance(hit, bool) else False,
        "reason": str(obj.get("reason") or ""),
    }


async def judge(
    backbone: Backbone,
    reference: dict[str, str],
    submitted: dict[str, str],
    *,
    attempts: int = 3,
    texts: dict[str, Any] | None = None,
    **sampling: Any,
) -> tuple[dict[str, Any], list[str]]:
    """(verdict, raw replies). Raises BackboneError when no attempt gives a valid verdict."""
    asked = await ask_until(
        backbone,
        judge_messages(reference, submitted, texts),
        role="judge",
        read=parse_verdict,
        usable=lambda v: v is not None,
        attempts=max(1, attempts),
        **sampling,
    )
    return asked.require("ClinDiag judge gave no valid verdict"), asked.replies
