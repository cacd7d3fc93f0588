"""ZipAct state schema, domain injectables and prompts (docs/baselines.md §5.2–5.3; ZipAct
`src/prompts/*`, `src/agents/zipact.py::_get_empty_state`). The wording is ours; the content
follows the released prompts: init decomposes the task into an ordered sub-goal queue, the updater
runs goal progression, world patching and failure reflection and returns the full state as JSON,
the actor sees only the state and the current observation.

Domain injectables ([harness choice], docs/baselines.md §5.2): a fixed goal / world / constraint core (the
upstream ALFWorld default minus its ALFWorld-only fields), plus per-benchmark extra fields with a
note on what they hold. The action vocabulary is the task's tool list (and the assistant message).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from kit.react import REACT_PROTOCOL

CORE_STATE: dict[str, Any] = {
    "goal_state": {"global_instruction": "", "sub_goal_queue": [], "current_objective": ""},
    "world_state": {"entity_map": {}, "discovered_objects": []},
    "constraint_state": {"negative_constraints": [], "attempted_actions": []},
}

# Extra fields per domain: {section: {field: empty value}} and a note on what they hold.
DOMAINS: dict[str, dict[str, Any]] = {
    "generic": {"fields": {}, "note": "Track whatever facts, identifiers and results the task needs."},
    "alfworld": {  # upstream default schema
        "fields": {"world_state": {"location": "", "inventory": []}, "constraint_state": {"visited_locations": []}},
        "note": "location = where the agent is; inventory = objects held; entity_map = object -> status (open, clean, "
        "heated, ...).",
    },
    "formal": {
        "fields": {"world_state": {"established_results": [], "notation": {}}},
        "docs": {
            "established_results": "Results proved or computed in earlier subtasks (statement and value), reusable "
            "later (list)",
            "notation": "Symbols in use and their meaning (dict)",
        },
        "note": "established_results = results proved or computed in earlier subtasks (statement and value), which "
        "later problems may reuse; notation = symbol -> meaning.",
    },
    "shopping": {
        "fields": {
            "goal_state": {"target_attributes": {}},
            "world_state": {
                "current_products": [],
                "selected_product": "",
                "cart_contents": [],
                "purchases_so_far": [],
            },
            "constraint_state": {"compatibility_constraints": [], "price_violations": []},
        },
        "docs": {
            "target_attributes": "Category, colour, size, material, price limit and brand of the item sought (dict)",
            "current_products": "Products on the page now (list)",
            "selected_product": "The product chosen so far",
            "cart_contents": "Items in the cart (list)",
            "purchases_so_far": "Items bought in earlier subtasks (list)",
            "compatibility_constraints": "What earlier purchases require of this one (list)",
            "price_violations": "Candidates rejected for their price (list)",
        },
        "note": "target_attributes = category, colour, size, material, price limit, brand of the item sought; "
        "compatibility_constraints = what earlier purchases require of this one.",
    },
    "travel": {
        "fields": {
            "goal_state": {"travellers": []},
            "world_state": {"plan_slots": {}},
            "constraint_state": {"traveller_constraints": []},
        },
        "docs": {
            "travellers": "Each group member and their wishes (list)",
            "plan_slots": "Day -> breakfast / lunch / dinner / accommodation / transportation / attraction chosen so "
            "far (dict)",
            "traveller_constraints": "Requirements a traveller's choices must respect (list)",
        },
        "note": "travellers = each group member and their wishes; plan_slots = day -> "
        "breakfast/lunch/dinner/accommodation/transportation/attraction chosen so far.",
    },
    "tau": {
        "fields": {
            "world_state": {"user_identity": {}, "record_ids": []},
            "constraint_state": {"policy_checks_done": []},
        },
        "docs": {
            "user_identity": "The authenticated user's details (dict)",
            "record_ids": "Reservation / order ids in play (list)",
            "policy_checks_done": "Policy conditions already verified (list)",
        },
        "note": "user_identity = the authenticated user's details; record_ids = reservation / order ids in play; "
        "policy_checks_done = policy conditions already verified.",
    },
}


KIND_DOMAINS = {
    "alfworld": "alfworld",
    "formal_math": "formal",
    "formal_phys": "formal",
    "shopping": "shopping",
    "travel": "travel",
    "tau": "tau",
}


def domain_of(kind: str) -> str:
    """Domain of a `TaskView.kind` (used when `domain: auto`); other kinds are generic."""
    return KIND_DOMAINS.get(kind, "generic")


# ---------------------------------------------------------------- released prompts (run time)
ZIPACT_PIN_NOTE = (
    "ZipAct prompts: FlowState pins ZipAct at f025804, which is not public; the latest public commit "
    "(runners/upstream_pins.json) is used"
)
UPSTREAM_PROMPTS = {  # domain -> (pinned prompt file, symbol prefix) for the domains ZipAct released prompts for
    "alfworld": ("src/prompts/zipact_prompts.py", "ALFWORLD"),
    "shopping": ("src/prompts/webshop_prompts.py", "WEBSHOP"),
}
AGENT_FILE = "src/agents/zipact.py"


def state_texts(domain: str, sources: Any = None, *, own_wording: bool = False) -> dict[str, Any]:
    """The state-module prompts of `domain`: the released ones (updater system prompt, init prompt,
    init system message, updater user template; read at run time from the pinned ZipAct copy) for
    the domains ZipAct released prompts for (ALFWorld, WebShop → MemoryArena shopping), our own
    elsewhere (no released prompt exists) or when the pinned files are unavailable. `upstream`
    says which one is in use; `sources` (a TextSources) records each. Domains without released
    prompts (Formal Reasoning, Travel, τ, generic) get the released ALFWorld core with their own
    state items injected (`inject`; FlowState B.5); `own_wording=True` = the project's prompts."""
    from runners.upstream import TextSources, UpstreamFile

    sources = sources if sources is not None else TextSources()
    own = {
        "upstream": False,
        "init_system": INIT_SYSTEM,
        "init_user": INIT_USER,
        "update_system": UPDATE_SYSTEM,
        "update_user": UPDATE_USER,
    }
    if own_wording:
        return own
    if domain not in UPSTREAM_PROMPTS:  # the released core (ALFWorld's prompts) with this domain's state items injected
        core = state_texts("alfworld", sources)
        if not core["upstream"]:
            return own
        return {
            "upstream": True,
            "core": "alfworld",
            "init_system": core["init_system"],
            "update_user": core["update_user"],
            "update_system": inject(core["update_system"], domain, template=False),
            "init_user": inject(core["init_user"], domain, template=True),
        }
    path, prefix = UPSTREAM_PROMPTS[domain]
    f, agent = UpstreamFile("ZipAct", path), UpstreamFile("ZipAct", AGENT_FILE)
    out = {
        "update_system": sources.string(f"{domain}.updater_system", f, f"{prefix}_ZIPACT_UPDATER_SYSTEM_PROMPT", ""),
        "init_user": sources.string(f"{domain}.init", f, f"{prefix}_ZIPACT_INIT_STATE_PROMPT", ""),
        "init_system": sources.literal(
            f"{domain}.init_system", agent, "ZipActAgent.reset.messages", "", (0, "content")
        ),
        "update_user": sources.fstring(f"{domain}.updater_user", agent, "ZipActAgent._update_state.prompt", ""),
    }
    if not all(out.values()):  # any piece missing: the whole set falls back to our own wording (consistent prompts)
        return {
            "upstream": False,
            "init_system": INIT_SYSTEM,
            "init_user": INIT_USER,
            "update_system": UPDATE_SYSTEM,
            "update_user": UPDATE_USER,
        }
    return {"upstream": True, **out}


# ---------------------------------------------------------------- domain injectables
# The released prompts are ALFWorld's; a domain keeps their text and changes only the state items:
# the field lines of each state component, the bullets that name a field the domain lacks, and the
# JSON skeletons. Located by structure (indented `- name: ...` field lines, `- ` bullets naming
# `field`s, the fenced JSON block), never by upstream wording.
_FIELD_LINE = re.compile(r"^(\s+)- (\w+): ")
_TICKED = re.compile(r"`(\w+)`")
_JSON_KEY = re.compile(r'^(\s*)"(\w+)": (.*?)(,?)$')


def _fields(domain: str) -> dict[str, dict[str, Any]]:
    return empty_state(domain)


def _all_fields() -> set[str]:
    names = {k for sec in CORE_STATE.values() for k in sec}
    for d in DOMAINS.values():
        names |= {k for sec in d["fields"].values() for k in sec}
    return names


def _placeholder(value: Any, template: bool) -> str:
    if template:  # the init skeleton: the empty value, braces doubled for str.format
        return json.dumps(value, ensure_ascii=False).replace("{", "{{").replace("}", "}}")
    return '"..."' if isinstance(value, str) else "[...]" if isinstance(value, list) else "{...}"


def _reshape_json(block: str, domain: str, template: bool) -> str:
    """A fenced JSON skeleton with the domain's fields: upstream's lines for fields the domain has,
    the others dropped, the domain's extra fields added at the end of their section."""
    schema = _fields(domain)
    out: list[str] = []
    section: str | None = None
    pending: list[tuple[str, str, str]] = []  # (indent, "key": value) of the current section

    def flush() -> None:
        nonlocal pending
        if section is not None:
            have = {k for _, k, _ in pending}
            indent = pending[0][0] if pending else "    "
            extra = [
                (indent, k, _placeholder(v, template)) for k, v in schema.get(section, {}).items() if k not in have
            ]
            rows = [*pending, *extra]
            out.extend(f'{i}"{k}": {v}' + ("," if n < len(rows) - 1 else "") for n, (i, k, v) in enumerate(rows))
        pending = []

    for line in block.split("\n"):
        m = _JSON_KEY.match(line)
        if m and m.group(3).rstrip().endswith("{") and m.group(2) in CORE_STATE:
            flush()
            section = m.group(2)
            out.append(line)
        elif m and section is not None:
            if m.group(2) in schema.get(section, {}):
                pending.append((m.group(1), m.group(2), m.group(3)))
        else:
            if section is not None and line.strip().startswith("}"):
                flush()
                section = None
            out.append(line)
    return "\n".join(out)


def inject(text: str, domain: str, *, template: bool) -> str:
    """The released ALFWorld prompt `text` with `domain`'s state items (see the comment above)."""
    schema = _fields(domain)
    present = {k for sec in schema.values() for k in sec}
    docs = DOMAINS[domain].get("docs", {})
    known = _all_fields()
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```json"):
            j = next(k for k in range(i + 1, len(lines)) if lines[k].strip().startswith("```"))
            out.append(line)
            out.extend(_reshape_json("\n".join(lines[i + 1 : j]), domain, template).split("\n"))
            out.append(lines[j])
            i = j + 1
            continue
        m = _FIELD_LINE.match(line)
        if m and m.group(2) in known:
            if m.group(2) in present:
                out.append(line)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            n2 = _FIELD_LINE.match(nxt)
            if not (n2 and n2.group(2) in known):  # the component's last field line: add the domain's own
                section = next(
                    (
                        sec
                        for sec, names in schema.items()
                        if m.group(2) in names or m.group(2) in CORE_STATE.get(sec, {})
                    ),
                    None,
                )
                owner = section or next(
                    (sec for sec, names in empty_state("alfworld").items() if m.group(2) in names), None
                )
                for k in DOMAINS[domain]["fields"].get(owner or "", {}):
                    out.append(f"{m.group(1)}- {k}: {docs.get(k, k)}")
            i += 1
            continue
        ticked = [t for t in _TICKED.findall(line) if t in known]
        if line.lstrip().startswith("- ") and ticked and not all(t in present for t in ticked):
            i += 1  # a bullet about a field this domain does not have
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def empty_state(domain: str) -> dict[str, Any]:
    """The JSON skeleton: core plus the domain's extra fields."""
    if domain not in DOMAINS:
        raise ValueError(f"zipact: unknown domain '{domain}'; choose auto or one of {sorted(DOMAINS)}")
    state = copy.deepcopy(CORE_STATE)
    for section, fields in DOMAINS[domain]["fields"].items():
        state[section].update(copy.deepcopy(fields))
    return state


INIT_SYSTEM = """You set up the working state of an agent before it starts a task.
Read the task and fill in the JSON state skeleton:
- goal_state.global_instruction: the task text, unchanged.
- goal_state.sub_goal_queue: the task broken into an ordered list of concrete sub-goals.
- goal_state.current_objective: the first sub-goal.
- world_state and constraint_state: whatever the task already tells you; leave the rest empty.
Return the filled JSON object only, with no other text."""

INIT_USER = """Task:
{task}

Domain notes: {note}
Available actions: {actions}

State skeleton:
{skeleton}"""

UPDATE_SYSTEM = """You maintain the working state of an agent. You get the current state, the agent's last action and \
the newest observation. Update the state in three passes:
1. Goal progression: if the observation confirms current_objective is done, remove it from the front of sub_goal_queue \
and set current_objective to the next sub-goal; append sub-goals the observation newly reveals.
2. World patching: record changes the observation shows - new facts, results, identifiers, entity statuses, discovered \
objects.
3. Failure reflection: if the action failed or was refused, turn the reason into a specific entry in \
negative_constraints (what not to do again and why).
Change only what the observation supports; keep every other field as it is; never invent facts.
Return the full updated state as one JSON object only, with no other text."""

UPDATE_USER = """Current state:
{state}

Last action:
{action}

Newest observation:
{observation}

Domain notes: {note}"""

STATE_TRACKING_RULES = """State tracking (ZipAct):
- You have no history. The execution state in <agent_status> is your whole memory of the task: its goal_state \
(instruction, sub-goal queue, current objective), world_state (facts and results found so far) and constraint_state \
(what failed, what was already tried).
- Work on goal_state.current_objective, using the facts in world_state and the latest observation.
- Check constraint_state first: never repeat an action listed in attempted_actions that failed, and respect every \
negative constraint.
- Think briefly about the objective and the observation, then act."""

# The ReAct blocks and their rules are shared with every protocol (baselines/react.py), after a thought.
ACTOR_PROTOCOL = """Reply with exactly these blocks, in this order, each holding valid JSON:
<thought>
"<one or two sentences: what the objective needs now and why the action below does it>"
</thought>
""" + REACT_PROTOCOL.split("\n", 1)[1]

SINGLE_CALL_PROTOCOL = """Reply with exactly these blocks, in this order, each holding valid JSON:
<state>
{the full updated execution state: apply goal progression, world patching and failure reflection for the latest \
observation}
</state>
""" + ACTOR_PROTOCOL.split("\n", 1)[1]


def actions_text(tool_names: list[str]) -> str:
    return ", ".join(tool_names + ["assistant_message (reply to the user / final answer)"])


def state_json(state: dict[str, Any]) -> str:
    return json.dumps(state, ensure_ascii=False, indent=1)
