"""Gap bookkeeping across updates (docs/pos.md §3): target stabilisation, stable gap identities and
Active-Gap (frontier) selection. All pure except the tracker's episode counters."""

from __future__ import annotations

from typing import Callable

from pos.text import gaps_semantically_equivalent

Gap = dict[str, str]
Equiv = Callable[[str, str], bool]


def _unique_unused(target: str, previous: list[str], used: set[int], equiv: Equiv) -> int | None:
    """Index of the single unused previous target equivalent to `target`, else None."""
    hits = [i for i, p in enumerate(previous) if i not in used and equiv(target, p)]
    return hits[0] if len(hits) == 1 else None


def stabilize_targets(
    proposed: list[Gap], previous: list[Gap], equiv: Equiv = gaps_semantically_equivalent
) -> list[Gap]:
    """§3 target stabilisation for one gap type: a proposed gap with exactly one unused
    equivalent previous gap takes the old `target` string (its new `reason` is kept)."""
    prev = [g["target"] for g in previous]
    used: set[int] = set()
    out = []
    for g in proposed:
        j = _unique_unused(g["target"], prev, used, equiv)
        if j is not None:
            used.add(j)
            g = {**g, "target": prev[j]}
        out.append(g)
    return out


class StableGapIdentityTracker:
    """§3 `StableGapIdentityTracker`: per gap type, a gap keeps the identity of the previous
    committed set only if exactly one unused equivalent gap exists there; otherwise it gets a
    new episode-unique ID (`e:N` / `a:N`). A gap that disappears and returns is new."""

    PREFIX = {"epistemic": "e", "achievement": "a"}

    def __init__(self, equiv: Equiv = gaps_semantically_equivalent) -> None:
        self.equiv = equiv
        self.counters = {t: 0 for t in self.PREFIX}
        self.previous: dict[str, list[tuple[str, str]]] = {t: [] for t in self.PREFIX}  # (id, target)

    def reconcile(self, gap_type: str, gaps: list[Gap]) -> list[str]:
        """IDs of `gaps` (in order) after a commit; updates the previous committed set."""
        prev = self.previous[gap_type]
        used: set[int] = set()
        ids = []
        for g in gaps:
            j = _unique_unused(g["target"], [t for _, t in prev], used, self.equiv)
            if j is not None:
                used.add(j)
                ids.append(prev[j][0])
            else:
                self.counters[gap_type] += 1
                ids.append(f"{self.PREFIX[gap_type]}:{self.counters[gap_type]}")
        self.previous[gap_type] = list(zip(ids, (g["target"] for g in gaps)))
        return ids

    def id_of(self, gap_type: str, target: str) -> str | None:
        for i, t in self.previous[gap_type]:
            if t == target:
                return i
        return None


def _resolve(pointer: dict[str, str] | None, gaps: dict[str, list[Gap]], equiv: Equiv) -> dict[str, str] | None:
    """The pointer re-aimed at the single equivalent gap of its type, else None."""
    if not pointer or pointer.get("gap_type") not in gaps or not isinstance(pointer.get("target"), str):
        return None
    hits = [g for g in gaps[pointer["gap_type"]] if equiv(pointer["target"], g["target"])]
    return {"gap_type": pointer["gap_type"], "target": hits[0]["target"]} if len(hits) == 1 else None


def select_frontier(
    previous: dict[str, str] | None,
    proposed: dict[str, str] | None,
    epistemic: list[Gap],
    achievement: list[Gap],
    equiv: Equiv = gaps_semantically_equivalent,
) -> dict[str, str] | None:
    """§3 `_select_frontier`, first match: previous frontier if it still resolves to exactly one
    equivalent gap of its type → proposed frontier if it resolves uniquely → first epistemic gap
    → first achievement gap → None."""
    gaps = {"epistemic": epistemic, "achievement": achievement}
    for pointer in (previous, proposed):
        hit = _resolve(pointer, gaps, equiv)
        if hit is not None:
            return hit
    if epistemic:
        return {"gap_type": "epistemic", "target": epistemic[0]["target"]}
    if achievement:
        return {"gap_type": "achievement", "target": achievement[0]["target"]}
    return None


def frontier_changed(
    old: dict[str, str] | None, new: dict[str, str] | None, equiv: Equiv = gaps_semantically_equivalent
) -> bool:
    """Whether two Active-Gap pointers differ (`frontier_episode += 1` when they do)."""
    if old is None or new is None:
        return old is not new
    return old["gap_type"] != new["gap_type"] or not equiv(old["target"], new["target"])
