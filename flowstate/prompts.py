"""FlowState prompt text and Serialize (eq. 3; App. B.3 layout, docs/flowstate.md §2.1, §9).

With App. B.3 configured (kit/b3.py: `$HARNESS_FLOWSTATE_B3`), full FlowState's messages are B.3's FlowState
template filled at run time. Otherwise (and for the ablations, whose prompts the paper does not give) the
wording is ours, written from the content list of docs/flowstate.md §2.1 and marked [paraphrased]; the
ablations drop the rules of the component they remove (docs/flowstate.md §7 [harness choice]).

The project's additions for real models are named switches (`ADDITIONS`), on with our wording and off with
B.3 unless set: `no_history_rule`, `cite_raw_results`, `exclusive_decision` (and the method's `feedback`
and `persist_agent_message`)."""

from __future__ import annotations

from runners.api import Message, TaskView
from kit import b3 as b3text
from kit.prompting import REACT_RULES, system_message, tools_text, user_message

ADDITIONS = ("no_history_rule", "cite_raw_results", "exclusive_decision")
"""The rules the project adds for real models; each a FlowState param (None = on with the project's
wording, off with B.3's)."""

NO_HISTORY = "There is no conversation history: only the Active State carries what you learned earlier in this request."
CITE = (
    "A ref may name a current state, a historical state, or a raw tool-result id shown in latest_observation (such "
    "as obs-1-2-0); cite raw results you rely on so they are kept."
)
EXCLUSIVE = "Your decision is either tool calls or a message to the user, never both."

_CORE = """Working state rules:
- The Active State in agent_status is your working memory for the current request. Before an action, check that the \
facts and identifiers it needs are present in the Active State."""

# w/o ISU with `carry_trajectory` (docs/flowstate.md §7 [harness choice]): the current query's trajectory is shown,
# and the Active State holds only disclosed historical content, so the core rules must say so.
_CORE_TRAJECTORY = """Working state rules:
- trajectory_history shows the steps of the current request so far; the Active State in agent_status holds only the \
content of earlier requests that you asked to see.
- Before an action, check that the facts and identifiers it needs are present in the trajectory or the Active State."""

_ISU = """State updates (state_delta):
- Write only what changed in this step: new task facts, requirements, plans, intermediate results. Never restate the \
whole state.
- Every state has a semantic state_id (for example "budget_limit" or "lemma_closed_form"), a state_set naming its \
type, a short summary, a structured JSON value, and refs.
- Types: preferences (the user's wishes, requirements and constraints), knowledge (facts observed in tool outputs), \
attributes (properties of specific entities taken from tool outputs), judgements (your assessments, plans, \
intermediate decisions and risks), artifacts (reusable outputs you produce, such as code or a derivation).
- "add" creates a state under an id nobody has used yet. "update" and "remove" address a state you created for the \
current request, by its id.
- {read_only}
- refs is a list of {"rel", "state_id"} with rel one of supports, derives, follows, supersedes. The edge runs from the \
state carrying the ref to the state_id it names."""

_PSA = """Access to earlier requests (state_focus):
- The Historical State Index lists earlier requests with the ids and summaries of the states they left. Summaries are \
pointers, not facts.
- When you need something from earlier work, name the ids in state_focus (target_id) from the index or from \
related_states entries, with a reason saying what is missing and which decision it serves.
- Exact values and identifiers must come from disclosed content, never be guessed from a summary.
- A related_states entry only points at another node; its content needs its own request.
- Requested content appears in the Active State at your next step. Actions that depend on it wait for that step; do \
other independent work now.
- Do not request content that is already visible in the Active State."""

_HISTORY_ALL = """Earlier requests:
- The Active State also holds the full states left by earlier requests. They are read-only: to correct or extend one, \
add a new state whose refs point at it."""


_READ_ONLY = {
    True: "Ids from the Historical State Index are read-only, even after their content was disclosed. To correct or "
    "extend one, add a new state whose refs point at it.",
    # w/o PSA has no index (docs/flowstate.md §7): the same rule, worded without it
    False: "States left by earlier requests are read-only. To correct or extend one, add a new state whose refs point "
    "at it.",
}


def flowstate_rules(
    *,
    with_focus: bool = True,
    with_delta: bool = True,
    trajectory: bool = False,
    no_history_rule: bool = True,
    cite_raw_results: bool = True,
) -> str:
    """The FlowState rules of the `instructions` block (docs/flowstate.md §2.1); the ablations drop the part
    of the component they remove (docs/flowstate.md §7)."""
    parts = [_CORE_TRAJECTORY if trajectory else _CORE + (f"\n- {NO_HISTORY}" if no_history_rule else "")]
    if with_delta:
        parts.append(_ISU.replace("{read_only}", _READ_ONLY[with_focus]) + (f" {CITE}" if cite_raw_results else ""))
    parts.append(_PSA if with_focus else _HISTORY_ALL)
    return "\n\n".join(parts)


def output_protocol_text(*, with_focus: bool = True, with_delta: bool = True, exclusive_decision: bool = True) -> str:
    """The output_protocol block: the blocks in order, their JSON shapes and the bundling rule."""
    blocks = []
    if with_focus:
        blocks.append(
            '<state_focus>\n[{"target_id": "<historical state id or referenced raw-result id>", "reason": "<what is '
            'missing and how it will be used>"}]\n</state_focus>'
        )
    if with_delta:
        blocks.append(
            '<state_delta>\n[{"state_set": "preferences|knowledge|attributes|judgements|artifacts", "operation": '
            '"add|update|remove", "state_id": "<semantic id>", "summary": "<short summary>", "value": <JSON '
            'value>, "refs": [{"rel": "supports|derives|follows|supersedes", "state_id": "<target '
            'id>"}]}]\n</state_delta>'
        )
    blocks.append(
        '<tool_calls>\n[{"name": "<tool name>", "arguments": {<arguments as the tool schema says>}}]\n</tool_calls>'
    )
    blocks.append(
        '<assistant_message>\n{"content": "<message to the user or final answer, or null>"}\n</assistant_message>'
    )
    n = len(blocks)
    words = {2: "two", 3: "three", 4: "four"}[n]
    rules = [
        f"Reply with exactly these {words} blocks, always all of them and in this order, each holding valid JSON, with "
        f"no code fences and no text outside the blocks:",
        "\n".join(blocks),
        'Use [] for an unused list and {"content": null} when you send no message. At least one block must be '
        "non-empty.",
        *([EXCLUSIVE] if exclusive_decision else []),
        "Bundle in one step everything the current information already supports: state changes, access requests and "
        "the decision. Requests for missing content go together with independent work; anything that needs the "
        "requested content waits for the next step.",
    ]
    if with_focus:
        rules.append(
            "If the decision depends on content you are requesting now, leave tool_calls empty and the message null."
        )
    return "\n".join(rules)


def _insert_before(text: str, closing: str, lines: list[str]) -> str:
    """`lines` added just before the last `closing` tag line of `text` (a switch's addition to B.3)."""
    if not lines:
        return text
    at = text.rfind(closing)
    if at < 0:
        return text
    return text[:at] + "".join(f"{ln}\n" for ln in lines) + text[at:]


def b3_type_names(template: str) -> dict[str, str]:
    """The state type names as B.3's FlowState instruction writes them (e.g. singular "preference");
    our plural name where B.3 does not write the singular followed by its gloss."""
    import re

    from flowstate.state import StateType

    out = {}
    for t in StateType:
        singular = t.value[:-1] if t.value.endswith("s") else t.value
        out[t.value] = singular if re.search(rf"\b{re.escape(singular)} \(", template) else t.value
    return out


def serialize_b3(
    b3: "b3text.B3",
    *,
    task: TaskView,
    query: str,
    latest_observation: str,
    index: list[dict],
    active: list[dict],
    feedback: str | None = None,
    no_history_rule: bool = False,
    cite_raw_results: bool = False,
    exclusive_decision: bool = False,
) -> list[Message]:
    """Full FlowState's messages as App. B.3's FlowState template filled (kit/b3.py): {react_rules} =
    the shared ReAct rules, {task_policy}, {available_tools}; the Historical State Index (`index`:
    entries with `query_number`) and the Active State (`active`) fill the agent_status examples.
    The switches add the project's sentences before `</instructions>` / `</output_protocol>`, and
    `feedback` a line group before `</agent_status>`."""
    system = b3text.fill(
        b3.system("flowstate"),
        {"react_rules": REACT_RULES, "task_policy": task.policy or "", "available_tools": tools_text(task.tools)},
    )
    system = _insert_before(
        system,
        "</instructions>",
        [f"- {s}" for s, on in ((NO_HISTORY, no_history_rule), (CITE, cite_raw_results)) if on],
    )
    system = _insert_before(system, "</output_protocol>", [EXCLUSIVE] if exclusive_decision else [])
    names = b3_type_names(b3.system("flowstate"))
    active = [{**n, "type": names.get(n["type"], n["type"])} for n in active]
    user = b3text.fill_flowstate_input(
        b3.input("flowstate"), index=index, active=active, values={"observation": latest_observation, "query": query}
    )
    if feedback:  # [harness choice] switch `feedback`: what the last step's state requests came to
        user = _insert_before(user, "</agent_status>", [f"Last step's state requests:\n{feedback}"])
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def serialize(
    *,
    task: TaskView,
    protocol_text: str,
    query: str,
    latest_observation: str,
    index_text: str | None,
    active_state_text: str,
    trajectory: str | None = None,
    with_focus: bool = True,
    with_delta: bool = True,
    feedback: str | None = None,
    no_history_rule: bool = True,
    cite_raw_results: bool = True,
    exclusive_decision: bool = True,
) -> list[Message]:
    """C_{k,t} = Serialize(q_k, O_{k,t}, G_k, S_{k,t}): one system message (instructions, policy,
    tools, output_protocol) and one user message (agent_status, [trajectory_history for w/o ISU],
    latest_observation, user_query). No trajectory history otherwise (docs/flowstate.md §2.1)."""
    status = []
    if index_text is not None:
        status.append(f"Historical State Index:\n{index_text}")
    status.append(f"Active State:\n{active_state_text}")
    if feedback:  # [harness choice] what the last step's state operations and accesses came to (FlowState `feedback`)
        status.append(f"Last step's state requests:\n{feedback}")
    blocks = [("agent_status", "\n\n".join(status))]
    if trajectory is not None:
        blocks.append(("trajectory_history", trajectory))
    blocks += [("latest_observation", latest_observation), ("user_query", query)]
    return [
        system_message(
            instructions=REACT_RULES
            + "\n\n"
            + flowstate_rules(
                with_focus=with_focus,
                with_delta=with_delta,
                trajectory=trajectory is not None,
                no_history_rule=no_history_rule,
                cite_raw_results=cite_raw_results,
            ),
            policy=task.policy,
            tools=task.tools,
            output_protocol=protocol_text,
        ),
        user_message(blocks),
    ]
