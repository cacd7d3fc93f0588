"""Recovery constraints (docs/pos.md §9; upstream `belief/recoveryPlanning.py`, `manager._update_recovery`).

A constraint C_t = C_pattern + " " + C_gap is composed from fixed templates (no LLM call). It only
adds text to the policy prompt: recovery never acts and never changes the Active Gap. The wording
below is the project's fallback (the release's own sentences are used when pinned, `belief_prompts: release`,
pos/release_texts.py); generic recovery is unreleased and always ours."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from pos.health import HealthReport, world_distance
from pos.release_texts import recovery_instruction as release_recovery

PATTERN_TEXT = {
    "static": (
        "Your most recent action changed nothing, and your belief has stayed the same since. Do not issue that "
        "action again while the belief is unchanged; choose a different valid action. Action that changed nothing: "
        "{detail}"
    ),
    "cycle": (
        "You are moving in a loop of length {period}: your recent steps keep bringing the part of your belief that "
        "matters for the Active Gap back to where it was. Do not take the step that would close this loop again; "
        "leave the recurring region with a different valid action. The repeating steps: {detail}"
    ),
    "drift": (
        "Your recent actions changed the world but not the part of it that matters for the Active Gap. Drop actions "
        "unrelated to the Active Gap and base your next decision on that gap again."
    ),
    None: (
        "Your recent steps have not made progress. Step back, reconsider your strategy, and choose an action that the "
        "evidence supports as moving toward the Active Gap."
    ),
}
GAP_TEXT = {
    "epistemic": "Gather fresh evidence that can tell the open explanations apart for this gap: {target}",
    "achievement": "Bring about a relevant change in the world that moves this gap toward satisfied: {target}",
}
GENERIC_TEXT = (
    "Your progress has stalled. Step back, reconsider your approach, and choose a different action that "
    "moves the task forward."
)
"""[harness choice] `recovery.mode: generic` (§10 ablation, unreleased upstream): one fixed
pattern- and gap-agnostic constraint."""


GENERIC_HIDDEN = {"trapping_pattern", "gap_dimension", "recovery_frontier", "trigger_frontier", "recovery_gap"}
"""Directive fields the policy does not see under `recovery.mode: generic`."""


class RecoveryConfig(BaseModel):
    enabled: bool = True
    mode: str = Field("composed", description="composed (§9) | generic (§10 ablation, harness choice)")
    recent_low_progress_count: int = 4

    def model_post_init(self, _ctx: Any) -> None:
        if self.mode not in ("composed", "generic"):
            raise ValueError(f"recovery.mode must be 'composed' or 'generic', got '{self.mode}'")


class RecoveryDirective(BaseModel):
    """`RecoveryDirective` (§1) plus the gap it targets and how it ended."""

    recovery_frontier: dict[str, str]
    trigger_frontier: dict[str, str] | None
    gap_dimension: str
    trapping_pattern: str | None
    started_at_step: int
    applies_from_step: int
    recovery_action_steps: list[int] = Field(default_factory=list)
    low_progress_transitions: list[dict[str, Any]] = Field(default_factory=list)
    instruction: str
    recovery_gap: dict[str, str]
    ended_reason: str | None = None
    ended_at_step: int | None = None

    def prompt_view(self, *, generic: bool = False) -> dict[str, Any]:
        """C_t as the policy reads it: the whole directive plus `recovery_gap` (§4.7). In the
        generic-recovery ablation ([harness choice], §10) the diagnosis fields (pattern, gap
        dimension, recovery/trigger gap) are left out, so the prompt stays pattern- and gap-agnostic;
        they are still recorded in the directive."""
        hidden = {"ended_reason", "ended_at_step"} | (GENERIC_HIDDEN if generic else set())
        return self.model_dump(exclude=hidden)


def cycle_items(
    window: list[dict[str, Any]],
    snapshots: list[dict[str, Any]],
    projections: list[dict[str, Any]],
    period: int,
    epsilon: float,
) -> list[dict[str, Any]]:
    """Transitions of the detected loop: the latest window index i whose projection is within ε
    of i−period; items i−period+1…i with the snapshot worlds before and after each."""
    n = len(window)
    end = next(
        (i for i in range(n - 1, period - 1, -1) if world_distance(projections[i], projections[i - period]) <= epsilon),
        n - 1,
    )
    by_step = {s["step"]: s for s in snapshots}
    out = []
    for t in window[max(0, end - period + 1) : end + 1]:
        before = max((s for s in snapshots if s["step"] < t["step"]), key=lambda s: s["step"], default=None)
        after = by_step.get(t["step"])
        out.append(
            {
                "step": t["step"],
                "action": t["action"],
                "progress": t["progress"],
                "world_before": before["world"] if before else None,
                "world_after": after["world"] if after else None,
            }
        )
    return out


def compose(
    pattern: str | None,
    gap_type: str,
    target: str,
    *,
    detail: Any = None,
    period: int | None = None,
    mode: str = "composed",
) -> str:
    """instruction = C_pattern + " " + C_gap (§9), or the fixed generic text in generic mode."""
    if mode == "generic":
        return GENERIC_TEXT
    c_pattern = PATTERN_TEXT[pattern].format(detail=json.dumps(detail, ensure_ascii=False), period=period or 2)
    return c_pattern + " " + GAP_TEXT[gap_type].format(target=target)


def recovery_target(
    gaps: list[dict[str, str]],
    gap_ids: list[str],
    persistent_ids: list[str],
    active: dict[str, str] | None,
    gap_type: str,
) -> dict[str, str] | None:
    """§9 recovery target: the current gaps of the diagnosed type, narrowed to persistent tracker
    identities when any match; the Active Gap if among them (exact target, same type), else the first."""
    cands = [g for g, i in zip(gaps, gap_ids) if i in set(persistent_ids)] or list(gaps)
    if not cands:
        return None
    if active and active.get("gap_type") == gap_type:
        for g in cands:
            if g["target"] == active["target"]:
                return g
    return cands[0]


def low_progress(transitions: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The last `count` transitions labelled 0, as {step, action, progress, score, reason}."""
    low = [t for t in transitions if t.get("progress") == 0 and not isinstance(t.get("progress"), bool)][-count:]
    return [{k: t.get(k) for k in ("step", "action", "progress", "score", "reason")} for t in low]


def build_directive(
    report: HealthReport,
    *,
    gaps: dict[str, list[dict[str, str]]],
    gap_ids: dict[str, list[str]],
    active_gap: dict[str, str] | None,
    window: list[dict[str, Any]],
    snapshots: list[dict[str, Any]],
    projections: list[dict[str, Any]],
    transitions: list[dict[str, Any]],
    action_count: int,
    cfg: RecoveryConfig,
    epsilon: float,
    texts: dict[str, Any] | None = None,
) -> RecoveryDirective | None:
    """A new directive from the current diagnosis; None without a dimension, Active Gap or gaps.
    `gaps`/`gap_ids`: the current gaps and their stable IDs per gap type."""
    dim = report.gap_dimension
    if dim is None or active_gap is None:
        return None
    persistent = report.persistent_epistemic_gaps if dim == "epistemic" else report.persistent_achievement_gaps
    target = recovery_target(gaps.get(dim, []), gap_ids.get(dim, []), persistent, active_gap, dim)
    if target is None:
        return None
    pattern, detail = report.trapping_pattern, None
    if pattern == "static":
        detail = window[-1]["action"]
    elif pattern == "cycle":
        detail = cycle_items(window, snapshots, projections, report.recurrence_period or 2, epsilon)
    trigger = {"gap_type": active_gap["gap_type"], "target": active_gap["target"]}
    return RecoveryDirective(
        recovery_frontier={"gap_type": dim, "target": target["target"]},
        trigger_frontier=trigger,
        gap_dimension=dim,
        trapping_pattern=pattern,
        started_at_step=action_count,
        applies_from_step=action_count,
        low_progress_transitions=low_progress(transitions, cfg.recent_low_progress_count),
        instruction=(
            release_recovery(texts, pattern, dim, target["target"], detail=detail, period=report.recurrence_period)
            if texts is not None and cfg.mode == "composed"
            else compose(pattern, dim, target["target"], detail=detail, period=report.recurrence_period, mode=cfg.mode)
        ),
        recovery_gap={"gap_type": dim, "target": target["target"], "reason": target.get("reason", "")},
    )
