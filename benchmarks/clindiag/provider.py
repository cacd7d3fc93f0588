"""The ClinDiag information provider (docs/pos-benchmarks.md §3.5): answers one doctor question from
one section of the patient record. It is the benchmark's simulated counterpart of the doctor,
so its model calls use role `user_sim` (reported apart from the method's tokens). Offline
fakes (§3.7 harness choice): `keyword_answer` returns the record lines sharing a content word
with the question, else "not specified"; scripted runs answer with it as the reference."""

from __future__ import annotations

import json
import re
from typing import Any

from benchmarks.clindiag import texts as texts_mod
from runners.api import Backbone, Message

NOT_SPECIFIED = "Not specified in the record."
TRUNCATION_NOTE = "[answer truncated at {n} characters]"
NO_RECORD = texts_mod.NO_RECORD  # the project's wording; a run uses `texts["no_record"]` (the release's when pinned)
RULES = texts_mod.PROVIDER_RULES
STOPWORDS = frozenset(
    "what which when where were was does have has had with from that this there their about the and for any are "
    "patient patients please tell show give result results findings finding test tests were done performed value "
    "values level levels history exam examination".split()
)


def record_text(record: Any) -> str:
    """A section as the provider sees it: strings as they are, other JSON pretty-printed (§3.2)."""
    return record if isinstance(record, str) else json.dumps(record, indent=2, ensure_ascii=False)


def provider_messages(section: str, record: Any, question: str, texts: dict[str, Any] | None = None) -> list[Message]:
    """The release's `ask_provider` messages: PROVIDER_SYSTEM_PROMPT filled with the section's
    scope and record, then the doctor's question (texts: `texts.clindiag_texts()`)."""
    t = texts if texts is not None else texts_mod.clindiag_texts()
    system = t["provider_system"].format(scope=t["scope"][section], record=record_text(record))
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def _lines(value: Any, path: str = "") -> list[str]:
    """Leaf values of a JSON record as 'path: value' lines."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _lines(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, list):
        return [line for i, v in enumerate(value) for line in _lines(v, f"{path}[{i}]")]
    return [f"{path}: {value}" if path else str(value)]


def keywords(question: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", question.lower()) if len(w) >= 3 and w not in STOPWORDS}


def _groups(record: Any) -> list[list[str]]:
    """The record split into items (list entries or top-level keys), each as its leaf lines."""
    if isinstance(record, list):
        return [_lines(v, f"[{i}]") for i, v in enumerate(record)]
    if isinstance(record, dict):
        return [_lines(v, str(k)) for k, v in record.items()]
    return [_lines(record)]


def _informative(line: str) -> bool:
    return line.split(": ", 1)[-1].strip().lower().rstrip(".") not in ("not specified", "")


def keyword_answer(record: Any, question: str, max_lines: int = 12) -> str:
    """Deterministic fake provider: the record items (list entries or top-level keys) with a
    line sharing a content word with the question; a question without content words gets the
    first items. Uninformative "Not specified" lines are left out."""
    words = keywords(question)
    hits = [
        ln
        for g in _groups(record)
        if not words or any(words & set(re.findall(r"[a-z0-9]+", ln.lower())) for ln in g)
        for ln in g
        if _informative(ln)
    ]
    return "\n".join(hits[:max_lines]) if hits else NOT_SPECIFIED


async def ask(
    backbone: Backbone,
    section: str,
    record: Any,
    question: str,
    *,
    max_chars: int,
    attempts: int = 2,
    texts: dict[str, Any] | None = None,
    **sampling: Any,
) -> str:
    """The provider's reply (stripped, capped at `max_chars` + note). An empty reply is re-asked
    up to `attempts` times in all, then reported as not specified [harness choice]."""
    msgs = provider_messages(section, record, question, texts)
    text = ""
    for attempt in range(max(1, attempts)):
        c = await backbone.complete(msgs, role="user_sim", attempt=attempt, **sampling)
        text = (c.text or "").strip()
        if text:
            break
    text = text or NOT_SPECIFIED
    return text if len(text) <= max_chars else f"{text[:max_chars]}\n{TRUNCATION_NOTE.format(n=max_chars)}"
