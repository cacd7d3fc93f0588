"""Prompt text of PoS's calls (our wording of docs/pos.md §3–§6). Each builder returns chat messages;
the JSON key sets live in `pos.protocols`."""

from __future__ import annotations

import json
from typing import Any

from runners.api import Message

RECORDS = """World records:
- Entity {"entity_id": "e<n>", "entity_type": str, "name": str, "attributes": {key: string|number|boolean|null}}. \
Include the acting agent only if it can change the environment. Attributes merge into existing ones; null deletes a \
key. Entities are never deleted.
- State {"state_id": "s<n>", "entity_id": owner, "description": one entity's own condition, "source_type": \
"observed"|"inferred", "probability": number, "reason": str|null}.
- Relation {"relation_id": "r<n>", "source_id": entity or state ID, "target_id": entity or state ID, "description": \
str, "source_type", "probability", "reason"}.
Observed records are facts seen in an observation (probability 1, no reason). Inferred records are hypotheses: give \
probability < 1 and a reason. Probabilities are independent; never normalise them.
Gaps: an epistemic gap {"target", "reason"} is something the task needs to know that is not yet known or confirmed; an \
achievement gap is a way in which the world still differs from the goal. The frontier (Active Gap) points at exactly \
one gap: {"gap_type": "epistemic"|"achievement", "target": the gap's target} (null only when there are no gaps)."""

MODE_EXAMPLE = {
    "execution": (
        "Example (execution task): after `open drawer 1` shows the drawer holds a key, replace the state that said the "
        "drawer was closed with an observed state that it is open and holds the key; drop only the gap the key "
        'resolves ("find the key") and keep every other gap.'
    ),
    "diagnostic": (
        "Example (diagnostic task): when a test comes back negative for one hypothesis, add the observed test "
        "result as a state, lower that inferred hypothesis's probability, and keep competing hypotheses the "
        "test did not address unchanged."
    ),
}

INIT_SYSTEM = f"""You build the initial belief of an agent about its task and environment. From the task and the first \
observation, write:
- goal_specification: the condition under which the task counts as done;
- entities, states, relations: what the observation establishes, and well-founded hypotheses marked inferred;
- epistemic_gaps and achievement_gaps: everything still unknown or still to be achieved;
- frontier: the single gap the agent should work on first.
{RECORDS}"""

DELTA_SYSTEM = f"""You maintain an agent's structured belief. You get the current belief and one realised transition \
(thought, action, observation). Reply with the change to the belief as a delta:
- remove_state_ids, remove_relation_ids: records the observation contradicts or makes obsolete (removing a state \
removes its relations);
- upsert_entities, upsert_states, upsert_relations: new or changed records (records you omit stay unchanged);
- epistemic_gaps, achievement_gaps: the COMPLETE current gap lists (drop a gap only when the evidence resolves it; \
keep the others' wording);
- frontier: the gap to work on next, or null.
Use only what the transition and the belief support. Keep existing IDs for existing things.
{RECORDS}"""

AUDIT_SYSTEM = """You are the Belief Sentinel. You check one candidate belief update for consistency before it is \
committed.
Flag a problem only if a record touched by the update (see changed_ids; a State, Relation or Gap) conflicts with the \
rest of the belief or with the trajectory evidence. A fact that is merely missing because an observation is partial is \
not a conflict. Report at most one issue, and only with evidence. Never suggest actions to take in the environment.
Reply {"issues": []} when the update is consistent, else {"issues": [{"targets": [record IDs or gap targets], \
"issue_type": "internal"|"external", "problem": str, "evidence_step": the trajectory step that shows it, \
"evidence_quote": text copied exactly from that step's action or observation, "evidence": str, "suggestion": how to \
fix the belief}]}. internal = conflict inside the belief; external = conflict with the trajectory."""

PROGRESS_SYSTEM = """You judge whether one executed step made progress on the agent's Active Gap (the frontier before \
the step).
progress = 1 when the step shrank the Active Gap, gathered evidence the gap requires, or added a State or Relation \
that plausibly leads to the goal; 0 for repeated failures or changes irrelevant to the gap.
Reply {"progress": 0|1, "score": number ≥ 0, "affected_record_ids": [IDs of world records this step changed that show \
the progress], "reason": str}."""

BELIEF_TEXT_SYSTEM = """Write a concise plain-language summary of the agent's belief for the agent itself: the goal, \
what is known (observed) and suspected (inferred, with confidence), and the open gaps with the Active Gap first. Add \
nothing that is not in the belief. Reply {"belief_text": str}."""

ACTION_CONTRACT = (
    "Choose the next action to close or shrink the Active Gap directly. Take an enabling step first only while "
    "some argument such an action needs is still missing. Your belief above is your only memory of earlier steps."
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _call(system: str, protocol_text: str, payload: dict[str, Any]) -> list[Message]:
    return [{"role": "system", "content": f"{system}\n\n{protocol_text}"}, {"role": "user", "content": _json(payload)}]


def init_messages(
    *, task: str, observation: str, mode: str, protocol_text: str, carried: dict[str, Any] | None
) -> list[Message]:
    payload: dict[str, Any] = {"task": task, "first_observation": observation, "mode_example": MODE_EXAMPLE[mode]}
    if carried:  # [harness choice] multi-request tasks: the previous request's world and outcomes
        payload["carried_from_earlier_requests"] = carried
    return _call(INIT_SYSTEM, protocol_text, payload)


def delta_messages(
    *,
    belief: dict[str, Any],
    transition: dict[str, Any],
    mode: str,
    protocol_text: str,
    repair: dict[str, Any] | None = None,
    build_error: str | None = None,
) -> list[Message]:
    payload: dict[str, Any] = {"belief": belief, "transition": transition, "mode_example": MODE_EXAMPLE[mode]}
    if repair:
        payload["repair"] = {
            **repair,
            "instruction": "The Sentinel found this issue in your previous update. Write the delta again from the same "
            "belief, fixing it.",
        }
    if build_error:
        payload["build_error"] = f"Your previous delta could not be applied: {build_error}. Write it again."
    return _call(DELTA_SYSTEM, protocol_text, payload)


def audit_messages(payload: dict[str, Any], protocol_text: str) -> list[Message]:
    return _call(AUDIT_SYSTEM, protocol_text, payload)


def progress_messages(payload: dict[str, Any], protocol_text: str) -> list[Message]:
    return _call(PROGRESS_SYSTEM, protocol_text, payload)


def belief_text_messages(payload: dict[str, Any], protocol_text: str) -> list[Message]:
    return _call(BELIEF_TEXT_SYSTEM, protocol_text, payload)


def with_repair(messages: list[Message], repair: dict[str, Any] | None, build_error: str | None) -> list[Message]:
    """Initialisation messages plus a Sentinel issue or a build error to fix (§5 repair)."""
    if not repair and not build_error:
        return messages
    payload = json.loads(messages[1]["content"])
    if repair:
        payload["repair"] = {
            **repair,
            "instruction": "The Sentinel found this issue in your previous belief. Write it again, fixing it.",
        }
    if build_error:
        payload["build_error"] = f"Your previous reply could not be applied: {build_error}. Write it again."
    return [messages[0], {"role": "user", "content": _json(payload)}]
