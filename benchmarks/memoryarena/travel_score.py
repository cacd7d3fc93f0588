"""Group Travel Planning scoring, faithful to upstream `eval.py` / `combination.py`
(docs/memoryarena.md §5.1, pitfall 1). Pure functions over plain dicts; fractions in [0, 1].

Upstream quirks kept by default, each with a switch:
- `similarity` compares only the first min(len) characters, so a truncated value ("C" vs
  "Coco Bambu, Rockford") scores 1.0 and another flight with similar times passes
  (`prefix_only=False` compares whole strings);
- `current_city` is not scored;
- SR counts the persons *present in the submission*. Upstream `combination.py` writes every
  traveller that was run, with `plan: null` when nothing parsed, and `eval.py` fails such a
  traveller, so an unparsed plan fails the group; only travellers absent from the submission are
  skipped, in SR, PS and sPS alike (`sr_missing="fail"` makes absent travellers fail too);
- PS: the MemoryArena paper averages per group; upstream code pools persons (`ps_pooling`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any, Literal

SLOTS = ("breakfast", "lunch", "dinner", "accommodation", "transportation", "attraction")
"""The six scored slots (§5.1; not `current_city`)."""
FIELDS = ("current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
"""DayPlan fields in output order (§2.2, §3.2 parsed output format)."""
THRESHOLD = 0.7
DAY_RE = re.compile(r"Day\s*(\d+):(.*?)(?=Day\s*\d+:|$)", re.DOTALL)
HEADER_RE = re.compile(r"===\s*(.+?)'s\s+Plan\s*===")

DayPlan = dict[str, Any]


# ----------------------------------------------------------------------------- text <-> plan
def format_plan(name: str, days: Sequence[Mapping[str, Any]]) -> str:
    """The parsed output format (§3.2): `=== {Name}'s Plan ===` then `Day N:` blocks."""
    lines = [f"=== {name}'s Plan ==="]
    for d in days:
        lines.append(f"Day {d.get('days', d.get('day'))}:")
        for f in FIELDS:
            lines.append(f"{f.replace('_', ' ').title()}: {d.get(f, '-')}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def parse_days(text: str | None) -> list[DayPlan] | None:
    """Upstream parser: `Day N:` blocks; in each, a line with `:` splits at the first `:`, the key
    lower-cased with spaces → `_`; the day number under `day`. No `Day N:` → None. Total."""
    if not isinstance(text, str):
        return None
    found = DAY_RE.findall(text)
    if not found:
        return None
    plans = []
    for num, body in found:
        day: DayPlan = {"day": int(num)}
        for line in body.splitlines():
            if ":" in line:
                key, value = line.split(":", 1)
                day[key.strip().lower().replace(" ", "_")] = value.strip()
        plans.append(day)
    return plans


def plan_blocks(text: str | None) -> list[tuple[str, str]]:
    """(name, block text) for each `=== Name's Plan ===` header, in order."""
    if not isinstance(text, str):
        return []
    heads = list(HEADER_RE.finditer(text))
    return [
        (m.group(1).strip(), text[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)])
        for i, m in enumerate(heads)
    ]


def submission(name: str, texts: Sequence[str | None]) -> str | None:
    """Submission for traveller `name` (§4 Travel 4): the LAST `=== name's Plan ===` block in the
    base plan followed by all outputs so far, so later outputs may revise earlier travellers."""
    last = None
    for t in texts:
        for n, body in plan_blocks(t):
            if n.lower() == name.lower():
                last = body
    return last


def normalise_days(days: Sequence[Mapping[str, Any]] | None) -> list[DayPlan] | None:
    """Accept HF DayPlans (`days`) or parsed ones (`day`); non-dict entries are dropped."""
    if days is None or isinstance(days, (str, bytes)) or not isinstance(days, Sequence):
        return None
    out = []
    for d in days:
        if isinstance(d, Mapping):
            n = d.get("days", d.get("day"))
            try:
                out.append({**{str(k): v for k, v in d.items()}, "day": int(n)})
            except (TypeError, ValueError):
                continue
    return out


# ----------------------------------------------------------------------------- similarity
def similarity(a: Any, b: Any, *, prefix_only: bool = True) -> float:
    """Upstream: 0.0 if either is empty; strip + lower; `-` vs `-` → 1.0; difflib ratio of the
    first min(len) characters of each (quirk: a prefix of the gold passes)."""
    if a is None or b is None or a == "" or b == "":
        return 0.0
    a, b = str(a).strip().lower(), str(b).strip().lower()
    if a == "-" and b == "-":
        return 1.0
    if not a or not b:  # upstream: `... if m else 0.0` (a blank value never matches)
        return 0.0
    if prefix_only:
        m = min(len(a), len(b))
        a, b = a[:m], b[:m]
    return SequenceMatcher(None, a, b).ratio()


def _by_day(days: Sequence[DayPlan]) -> dict[int, DayPlan]:
    """Day number → day; a repeated day keeps its FIRST occurrence (upstream `get_day`)."""
    out: dict[int, DayPlan] = {}
    for d in days:
        out.setdefault(d["day"], d)
    return out


def person_full_pass(
    gold: Sequence[DayPlan], pred: Sequence[DayPlan] | None, *, threshold: float = THRESHOLD, prefix_only: bool = True
) -> bool:
    """Every gold day present in the prediction and all six slots ≥ threshold (missing key = `-`)."""
    if not pred:
        return False
    got = _by_day(pred)
    for g in gold:
        p = got.get(g["day"])
        if p is None:
            return False
        if any(similarity(g.get(s, "-"), p.get(s, "-"), prefix_only=prefix_only) < threshold for s in SLOTS):
            return False
    return True


def constraint_slots(
    gold: Sequence[DayPlan], base: Sequence[DayPlan], *, threshold: float = THRESHOLD, prefix_only: bool = True
) -> list[tuple[int, str]]:
    """(day, slot) pairs where the person's gold differs from the base person's gold (sim < threshold).
    Days the base plan lacks carry no constraint slot (upstream `find_constraint_slots`)."""
    b = _by_day(base)
    return [
        (g["day"], s)
        for g in gold
        if g["day"] in b
        for s in SLOTS
        if similarity(g.get(s, "-"), b[g["day"]].get(s, "-"), prefix_only=prefix_only) < threshold
    ]


def score_person(
    gold: Sequence[Mapping[str, Any]],
    pred: Sequence[Mapping[str, Any]] | None,
    base: Sequence[Mapping[str, Any]],
    *,
    threshold: float = THRESHOLD,
    prefix_only: bool = True,
    present: bool = True,
) -> dict[str, Any]:
    """One traveller: full pass, and constraint slots passed / total (sPS inputs). `present` = the
    traveller is in the submission (upstream writes every traveller run, `plan: null` if unparsed)."""
    g, b, p = normalise_days(gold) or [], normalise_days(base) or [], normalise_days(pred)
    slots = constraint_slots(g, b, threshold=threshold, prefix_only=prefix_only)
    got, want = _by_day(p or []), _by_day(g)
    # upstream `check_slot_pass`: a day missing from the submission fails its slots
    passed = (
        sum(
            d in got and similarity(want[d].get(s, "-"), got[d].get(s, "-"), prefix_only=prefix_only) >= threshold
            for d, s in slots
        )
        if p
        else 0
    )
    return {
        "submitted": present,
        "parsed": p is not None,
        "full_pass": person_full_pass(g, p, threshold=threshold, prefix_only=prefix_only),
        "constraint_slots": len(slots),
        "constraint_passed": int(passed),
    }


def score_group(
    gold_plans: Sequence[Sequence[Mapping[str, Any]]],
    preds: Sequence[Sequence[Mapping[str, Any]] | None],
    base: Sequence[Mapping[str, Any]],
    **kw: Any,
) -> list[dict[str, Any]]:
    """Per-traveller scores of one group; `preds` aligned with `gold_plans` (None = submitted but
    no parsed plan; travellers past the end of `preds` are absent from the submission)."""
    n = len(preds)
    preds = list(preds) + [None] * (len(gold_plans) - n)
    return [score_person(g, p, base, present=i < n, **kw) for i, (g, p) in enumerate(zip(gold_plans, preds))]


# ----------------------------------------------------------------------------- aggregates
def group_success(persons: Sequence[Mapping[str, Any]], *, sr_missing: Literal["skip", "fail"] = "skip") -> bool:
    """Upstream SR rule: every person present in the submission full-passes (one without a parsed
    plan fails). False for a group with nobody to rate (`aggregate` leaves such groups out, as
    upstream scores only groups present in the submission)."""
    rated = [p for p in persons if p["submitted"] or sr_missing == "fail"]
    return bool(rated) and all(p["full_pass"] for p in rated)


def aggregate(
    groups: Sequence[Sequence[Mapping[str, Any]]],
    *,
    ps_pooling: Literal["group", "persons"] = "group",
    sr_missing: Literal["skip", "fail"] = "skip",
) -> dict[str, float | None]:
    """SR, PS (per `ps_pooling`), PS_group, PS_persons and sPS as fractions; None when undefined.

    - PS_group: mean over groups of full-pass persons / persons (MemoryArena paper §4.2);
    - PS_persons: full-pass persons / persons pooled over groups (upstream code; FlowState B.5);
    - sPS: per person with ≥ 1 constraint slot passed/total, mean per group, then over groups.
    As upstream `eval.py`, all three look only at persons present in the submission, and only at
    groups with at least one (`sr_missing="fail"` counts absent persons as failing instead)."""
    if ps_pooling not in ("group", "persons"):
        raise ValueError(f"ps_pooling must be 'group' or 'persons', got {ps_pooling!r}")
    groups = [[p for p in g if p["submitted"] or sr_missing == "fail"] for g in groups]
    groups = [g for g in groups if len(g)]
    if not groups:
        return {"SR": None, "PS": None, "PS_group": None, "PS_persons": None, "sPS": None}
    sr = sum(group_success(g, sr_missing=sr_missing) for g in groups) / len(groups)
    ps_group = sum(sum(p["full_pass"] for p in g) / len(g) for g in groups) / len(groups)
    ps_persons = sum(p["full_pass"] for g in groups for p in g) / sum(len(g) for g in groups)
    per_group = []
    for g in groups:
        rated = [p["constraint_passed"] / p["constraint_slots"] for p in g if p["constraint_slots"]]
        if rated:
            per_group.append(sum(rated) / len(rated))
    sps = sum(per_group) / len(per_group) if per_group else None
    return {
        "SR": sr,
        "PS": ps_group if ps_pooling == "group" else ps_persons,
        "PS_group": ps_group,
        "PS_persons": ps_persons,
        "sPS": sps,
    }
