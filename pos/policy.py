"""The policy prompt with no raw history (docs/pos.md §4) and the Belief Text view it carries."""

from __future__ import annotations

import json
from typing import Any

from pos.projection import frontier_subgraph, semantic_view
from pos.prompts import ACTION_CONTRACT
from pos.world import Belief
from runners.api import Decision, Message, TaskView, ToolCall, actions_json
from kit.prompting import REACT_RULES, system_message, user_message
from runners.upstream import TextSources, UpstreamFile

POLICY_RULES = (
    REACT_RULES.rsplit("\n- Reply in the output protocol", 1)[0]
    + "\n- Reply in the output protocol exactly: one JSON object, with no other text and no code fences."
)
"""The ReAct rules with the reply-format line of PoS's policy (one JSON object, pos.protocols.PolicyProtocol)."""

NO_OBSERVATION = "(no observation yet; the task is the goal's user_input)"
FORCED_SUBMISSION = (
    "This is your last turn: no further investigation is possible. Submit your final answer now with the "
    "task's submission tool (or as your final message), based on the evidence in your belief."
)
"""§4: RCA-100/ClinDiag append a forced-submission directive on the last turn (our wording)."""


def action_text(decision: Decision) -> str:
    """One line for a decision as the raw trajectory, the belief model and the Sentinel see it, in
    upstream's form: a text command as the command itself (ALFWorld `go to desk 1`: a tool call whose
    only argument is a string `command`), any other tool call as the JSON `{"name", "arguments"}`
    the upstream policy writes (RCA-100, ClinDiag, LOCA)."""
    if decision.tool_calls:
        return "; ".join(_call_text(c) for c in decision.tool_calls)
    if decision.message is not None:
        return f"message {json.dumps(decision.message, ensure_ascii=False)}"
    return "(no action)"


REACT_PROMPT = UpstreamFile("PoS", "prompts/react_prompt.py")
EXAMPLES = {"alfworld": "ALFWORLD_EXAMPLE", "loca": "LOCA_BENCH_EXAMPLE", "clindiag": "CLINDIAG_EXAMPLE"}
"""Upstream's format example per task kind (RCA-100 has none in the PoS policy prompt)."""


def format_example(kind: str, sources: TextSources) -> str | None:
    """Upstream's format example for a task kind, read at run time from prompts/react_prompt.py
    (None for kinds without one, or when the upstream file is unavailable: we write no example of
    our own, and the manifest records the paraphrase as the absence)."""
    symbol = EXAMPLES.get(kind)
    if symbol is None:
        return None
    return sources.string(f"pos.format_example.{kind}", REACT_PROMPT, symbol, "") or None


def _call_text(call: ToolCall) -> str:
    if set(call.arguments) == {"command"} and isinstance(call.arguments["command"], str):
        return call.arguments["command"]
    return json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)


def belief_text_input(belief: Belief) -> dict[str, Any]:
    """What the Belief Text model reads: {goal, world: semantic view, gaps, active_gap} (§4)."""
    return {
        "goal": belief.goal,
        "world": semantic_view(belief.world),
        "epistemic_gaps": belief.epistemic_gaps,
        "achievement_gaps": belief.achievement_gaps,
        "active_gap": belief.frontier_gap(),
    }


def describe(view: dict[str, Any]) -> str:
    """A deterministic plain-text Belief Text (scripted runs; fallback when the model's fails)."""
    lines = [f"Goal: {view['goal'].get('specification') or view['goal'].get('user_input', '')}"]
    for comp in view["world"]:
        for e in comp["entities"]:
            facts = [
                f"{s['description']}" + ("" if s["source_type"] == "observed" else f" (inferred, p={s['probability']})")
                for s in e["states"]
            ]
            lines.append(f"- {e['name']} [{e['entity_type']}]" + (": " + "; ".join(facts) if facts else ""))
        for r in comp["relations"]:
            src, dst = (
                r["source"].get("name") or r["source"].get("description"),
                r["target"].get("name") or r["target"].get("description"),
            )
            lines.append(
                f"- {src} {r['description']} {dst}"
                + ("" if r["source_type"] == "observed" else f" (inferred, p={r['probability']})")
            )
    gap = view.get("active_gap")
    if gap:
        lines.append(f"Active Gap ({gap['gap_type']}): {gap['target']}")
    for kind in ("epistemic_gaps", "achievement_gaps"):
        for g in view[kind]:
            if not gap or g["target"] != gap["target"]:
                lines.append(f"Open {kind[:-5]} gap: {g['target']}")
    return "\n".join(lines)


def policy_messages(
    *,
    task: TaskView,
    protocol_text: str,
    observation: str,
    belief: Belief,
    belief_text: str,
    recovery: dict[str, Any] | None,
    forced_submission: bool = False,
    actions: list[str] | None = None,
    example: str | None = None,
) -> list[Message]:
    """System = the benchmark's ReAct system prompt; user = latest observation, Belief Text, the
    Goal and Active-Gap subgraph, the Active Gap, the action-selection contract, and the recovery
    constraint C_t when one is active, the actions valid now where the benchmark lists them
    (upstream `build_belief_prompt`, `include_actions: true`), and on the last turn the
    forced-submission directive when `forced_submission` (§4); `example` (upstream's format example
    of the task kind, `policy_format_example`) comes first, as upstream's `build_belief_prompt`
    puts it. No past observations, actions or thoughts."""
    gap = belief.frontier_gap()
    blocks = [
        ("latest_observation", observation or NO_OBSERVATION),
        ("belief_text", belief_text),
        (
            "goal_and_active_gap_subgraph",
            json.dumps({"goal": belief.goal, "world": frontier_subgraph(belief.world, gap)}, ensure_ascii=False),
        ),
        ("active_gap", json.dumps(gap, ensure_ascii=False)),  # no gap: `null`, as upstream shows it
        ("action_contract", ACTION_CONTRACT),
    ]
    if recovery is not None:
        blocks.append(("recovery_constraint", json.dumps(recovery, ensure_ascii=False)))
    if task.workspace:  # upstream: "Runtime workspace: <path>" before the action schemas
        blocks.append(("runtime_workspace", task.workspace))
    if actions is not None:
        blocks.append(("available_actions", actions_json(actions)))
    if forced_submission:
        blocks.append(("forced_submission", FORCED_SUBMISSION))
    if example:
        blocks.insert(0, ("format_example", example))
    return [
        system_message(
            instructions=POLICY_RULES,
            policy=task.policy,
            tools=task.tools,
            output_protocol=protocol_text,
            tools_indent=None,
        ),  # upstream: json.dumps(action schemas, ensure_ascii=False)
        user_message(blocks),
    ]
