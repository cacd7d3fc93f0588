"""Belief Sentinel (docs/pos.md §5, §6): audit scope and payload, mechanical grounding of issues,
the audit call, and progress labels (execution: LLM; diagnostic: confidence change)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from pos.repair_text import progress_repair, sentinel_repair
from pos.protocols import AuditProtocol, ProgressProtocol
from pos import release_texts as release
from pos.prompts import audit_messages, progress_messages
from pos.text import quote_norm
from pos.world import Belief, World, changed_ids
from runners.api import Backbone, ProtocolError

TRUNCATION_MARK = "\n...[truncated]...\n"


class SentinelConfig(BaseModel):
    """`sentinel` block (§11)."""

    enabled: bool = Field(True, description="False removes audits AND progress labels")
    consistency_enabled: bool = Field(True, description="False = ablation w/o consistency validation (§10)")
    progress_enabled: bool = True
    local_audit_every_steps: int = 1
    global_audit_every_steps: int = Field(8, description="ALFWorld/RCA/ClinDiag 8, LOCA 32 (§5, §11)")
    recent_transition_count: int = Field(4, description="local audit evidence: last N trajectory entries")
    audit_observation_max_chars: int = 6000
    max_json_retries: int = Field(1, description="re-asks of a Sentinel reply that is not valid JSON / schema")

    def model_post_init(self, _ctx: Any) -> None:
        for k in (
            "local_audit_every_steps",
            "global_audit_every_steps",
            "recent_transition_count",
            "audit_observation_max_chars",
        ):
            if getattr(self, k) < 1:
                raise ValueError(f"sentinel.{k} must be ≥ 1, got {getattr(self, k)}")


def audit_scope(
    trajectory: list[dict[str, Any]], n: int, cfg: SentinelConfig, *, initial: bool = False
) -> tuple[str | None, list[dict[str, Any]]]:
    """(mode, evidence items) for the n-th update (§5 `_audit_scope`): initialisation → local over
    the whole trajectory; n % global == 0 → global (full trajectory); n % local == 0 → local (last
    `recent_transition_count` entries); else no audit."""
    if initial:
        return "local", list(trajectory)
    if n % cfg.global_audit_every_steps == 0:
        return "global", list(trajectory)
    if n % cfg.local_audit_every_steps == 0:
        return "local", list(trajectory[-cfg.recent_transition_count :])
    return None, []


def truncate(text: str, max_chars: int) -> str:
    """Observations longer than max_chars keep the first and last max_chars/2 characters."""
    if text is None or len(text) <= max_chars:
        return text
    half = max_chars // 2
    return text[:half] + TRUNCATION_MARK + text[-half:]


def evidence_items(scope: list[dict[str, Any]], max_chars: int) -> list[dict[str, Any]]:
    return [
        {"step": it["step"], "action": it.get("action"), "observation": truncate(it["observation"], max_chars)}
        for it in scope
    ]


def ground_issue(issue: dict[str, Any], items: list[dict[str, Any]], allowed_targets: set[str]) -> str | None:
    """Why an issue is ungrounded (§5 `_valid_issue`), or None when it is grounded: targets
    non-empty ⊆ allowed; evidence_step in scope; the normalised quote is a substring of the
    normalised JSON of that step's {action, observation}."""
    targets = issue.get("targets") or []
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        return f"targets {targets!r} are not a list of record IDs or gap targets"
    if not targets or not set(targets) <= allowed_targets:
        return f"targets {targets} are not record IDs or gap targets of the belief"
    step = issue.get("evidence_step")
    if isinstance(step, bool) or not isinstance(
        step, (int, float)
    ):  # upstream: the step lookup of a string finds nothing
        return f"evidence_step {step!r} is not an integer trajectory step"
    item = next((it for it in items if it["step"] == step), None)
    if item is None:
        return f"evidence_step {step} is not in the audit scope"
    if not isinstance(issue.get("evidence_quote"), str):
        return "evidence_quote is not a string"
    quote = quote_norm(issue.get("evidence_quote", ""))
    hay = quote_norm(json.dumps({"action": item["action"], "observation": item["observation"]}, ensure_ascii=False))
    if not quote or quote not in hay:
        return f"evidence_quote not found in step {item['step']}"
    return None


class AuditResult(BaseModel):
    verdict: str = Field(description="clean | issue | failed")
    issue: dict[str, Any] | None = None
    discarded: list[dict[str, Any]] = Field(default_factory=list, description="ungrounded issues with the reason")
    errors: list[ProtocolError] = Field(default_factory=list)


async def run_audit(
    backbone: Backbone,
    protocol: AuditProtocol,
    *,
    step: int,
    before: Belief,
    candidate: Belief,
    items: list[dict[str, Any]],
    cfg: SentinelConfig,
    before_step: int,
    sampling: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    texts: dict[str, Any] | None = None,
) -> AuditResult:
    """One Sentinel audit of a candidate update (role `sentinel`); both beliefs as full contexts
    (§3, health included)."""
    payload = {
        "step": step,
        "belief_before": before.context(step=before_step, health=health),
        "candidate_belief": candidate.context(step=step, health=health),
        "changed_ids": changed_ids(before.world, candidate.world),
        "raw_trajectory": items,
    }
    msgs = (
        release.audit_messages(texts, payload) if texts is not None else audit_messages(payload, protocol.description())
    )
    errors: list[ProtocolError] = []
    protocol.fallback = protocol.minimal
    for attempt in range(min(1, cfg.max_json_retries) + 1):
        if attempt:  # upstream's repair turn: the same messages + its correction (pos.repair_text)
            msgs = [*msgs, {"role": "user", "content": sentinel_repair()}]
        parsed = protocol.parse(
            (
                await backbone.complete(msgs, role="sentinel", protocol=protocol, attempt=attempt, **(sampling or {}))
            ).text
        )
        errors += parsed.errors
        if parsed.ok:
            break
    else:
        return AuditResult(verdict="failed", errors=errors)
    issues = parsed.blocks["json"]["issues"]
    if not issues:
        return AuditResult(verdict="clean", errors=errors)
    why = ground_issue(issues[0], items, before.reference_ids() | candidate.reference_ids())
    if why is not None:  # an ungrounded issue is discarded; the candidate counts as validated
        return AuditResult(verdict="clean", discarded=[{"issue": issues[0], "why": why}], errors=errors)
    return AuditResult(verdict="issue", issue=issues[0], errors=errors)


# ----------------------------------------------------------------------------- progress (§6)
def world_record_ids(before: World, after: World) -> set[str]:
    return {i for ids in changed_ids(before, after).values() for i in ids}


async def execution_progress(
    backbone: Backbone,
    protocol: ProgressProtocol,
    *,
    step: int,
    frontier: dict[str, str] | None,
    action: Any,
    observation: str,
    before: Belief,
    after: Belief,
    cfg: SentinelConfig,
    sampling: dict[str, Any] | None = None,
    health: dict[str, Any] | None = None,
    texts: dict[str, Any] | None = None,
) -> tuple[dict[str, Any] | None, list[ProtocolError]]:
    """Execution-mode label from the progress model (role `sentinel`); None = unverified."""
    payload = {
        "step": step,
        "frontier": frontier,
        "action": action,
        "observation": observation,
        "belief_before": before.context(step=step - 1, health=health),
        "belief_after": after.context(step=step, health=health),
    }
    msgs = (
        release.progress_messages(texts, payload)
        if texts is not None
        else progress_messages(payload, protocol.description())
    )
    errors: list[ProtocolError] = []
    protocol.fallback = protocol.minimal
    allowed = world_record_ids(before.world, after.world)
    for attempt in range(min(1, cfg.max_json_retries) + 1):
        if attempt:  # upstream's repair turn (pos.repair_text)
            msgs = [*msgs, {"role": "user", "content": progress_repair()}]
        parsed = protocol.parse(
            (
                await backbone.complete(msgs, role="sentinel", protocol=protocol, attempt=attempt, **(sampling or {}))
            ).text
        )
        errs = list(parsed.errors)
        if parsed.ok:
            out = parsed.blocks["json"]
            stray = set(out["affected_record_ids"]) - allowed
            if stray:
                errs.append(
                    ProtocolError(
                        kind="bad_field", detail=f"affected_record_ids {sorted(stray)} did not change in this step"
                    )
                )
            else:
                return {
                    "progress": out["progress"],
                    "score": float(out["score"]),
                    "affected_record_ids": list(out["affected_record_ids"]),
                    "reason": out["reason"],
                    "scoring_method": "execution_llm",
                }, errors
        errors += errs
    return None, errors


def _confidence(rec: dict[str, Any] | None) -> float:
    return float(rec["probability"]) if rec and rec.get("source_type") == "inferred" else 0.0


def confidence_change(before: World, after: World) -> tuple[float, list[str]]:
    """d = round(0.5 · Σ|c_t(x) − c_{t−1}(x)|, 12) over states and relations that are inferred on
    at least one side (c = probability where inferred, 0 where missing or observed) (§6)."""
    total, affected = 0.0, []
    for kind in ("states", "relations"):
        a, b = before.kind(kind), after.kind(kind)
        for i in sorted(set(a) | set(b)):
            ra, rb = a.get(i), b.get(i)
            if not any(r and r.get("source_type") == "inferred" for r in (ra, rb)):
                continue
            diff = abs(_confidence(rb) - _confidence(ra))
            if diff:
                total += diff
                affected.append(i)
    return round(0.5 * total, 12), affected


def diagnostic_progress(before: World, after: World, threshold: float) -> dict[str, Any]:
    """Diagnostic-mode label: u = 1 iff d > threshold (strict; d may exceed 1)."""
    d, affected = confidence_change(before, after)
    return {
        "progress": int(d > threshold),
        "score": d,
        "affected_record_ids": affected,
        "reason": f"confidence change {d} vs threshold {threshold}",
        "scoring_method": "diagnostic_confidence_change",
    }
