"""ZipAct (Thomas-mci-21/ZipAct; docs/baselines.md §5) and ZipAct+BM25 (§6).

A memory-less actor `(τ_t, a_t) ~ π(· | S_t, o_t)` and an LLM state updater
`S_t = U(S_{t−1}, a_{t−1}, o_t)`:
- init (role "state"): one call per episode, on the first request: S_0 ← Init(task);
- update (role "state"): before every step that follows an action, on the newest observation;
- act (role "agent"): the B.3 State-tracking layout — agent_status{S_t}, latest_observation,
  user_query — with a thought block before tool_calls / assistant_message.
Code guarantees (upstream): before an update the last action is appended (deduplicated) to
`constraint_state.attempted_actions`; after it that list is overwritten with the code-tracked one.
Parse failures (§5.5): init → the empty skeleton with global_instruction = task; update → the
previous state is kept; act → a typed protocol error and no action.
[harness choice] across requests (§5.6): the state persists; a new request's query is appended to
`goal_state.sub_goal_queue` and given to the updater as the new observation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kit.agent import SingleCallMethod
from baselines.bm25 import BM25Store
from baselines.memory import PREVIEW_CHARS, RETRIEVED_VIEW, memory_block_text, outcome_chunks
from kit.react import ReactProtocol
from baselines import zipact_prompts
from runners.api import (
    Backbone,
    Completion,
    Role,
    Decision,
    Message,
    Observation,
    Parsed,
    Protocol,
    ProtocolError,
    Request,
    RequestOutcome,
    TaskView,
)
from kit.blocks import find_block, read_message_block
from kit.reader import Reading, read
from kit.reader import load_object as load_reply_object
from kit import b3 as b3text
from kit.prompting import REACT_RULES, system_message, tools_text, user_message

# Upstream `src/agents/zipact.py` sampling (switch `upstream_sampling`); default = the run's agent settings (B.5).
UPSTREAM_SAMPLING = {
    "init": {"temperature": 0, "max_completion_tokens": 512},
    "update": {"temperature": 0, "max_completion_tokens": 800},
    "act": {"temperature": 0, "max_completion_tokens": 256},
}
_FENCED = re.compile(r"```json\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_BARE = re.compile(r"```\s*(.*?)```", re.DOTALL)


def parse_state_json(text: str, reading: Reading | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """Upstream state extraction (a ```json fence, else a bare fence, else the raw text; trailing
    commas stripped; must be a JSON object), through the shared tolerant reader (kit.reader),
    which also takes the last object, repairs JSON and drops thinking. (state, None) or (None, error)."""
    if not isinstance(text, str) or not text.strip():
        return None, "empty state output"
    r = reading if reading is not None else read(text)
    body = r.text if reading is None else text
    m = _FENCED.search(body) or _BARE.search(body)
    if m:
        r.note("fence", "state")
    obj, err = load_reply_object(m.group(1) if m else body, r, where="state")
    if obj is None:
        return None, f"state is not JSON: {err}"
    return obj, None


class StateProtocol(Protocol):
    """Output of the init and update calls: the full state as one JSON object."""

    name = "zipact_state"

    def __init__(self, owner: "ZipAct") -> None:
        self.owner = owner

    def description(self) -> str:
        return "The full state as one JSON object, nothing else."

    def parse(self, text: str) -> Parsed:
        r = read(text)
        state, err = parse_state_json(r.text, r) if r.text.strip() else (None, "empty state output")
        errors = [] if err is None else [ProtocolError(kind="bad_json", detail=err)]
        return Parsed(blocks={"state": state}, errors=errors, **r.parsed_fields)

    def render(self, decision: Decision) -> str:
        # No reference opinion → a perfect updater that learned nothing returns the state unchanged.
        return decision.message if decision.message else zipact_prompts.state_json(self.owner.state or {})


class ZipActProtocol(Protocol):
    """Actor output: [state (single_call only)], thought, tool_calls, assistant_message."""

    name = "zipact"

    def __init__(self, owner: "ZipAct", *, single_call: bool = False) -> None:
        self.owner, self.single_call = owner, single_call
        self.react = ReactProtocol()

    def description(self) -> str:
        return zipact_prompts.SINGLE_CALL_PROTOCOL if self.single_call else zipact_prompts.ACTOR_PROTOCOL

    def parse(self, text: str) -> Parsed:
        r = read(text)
        parsed = self.react.parse_reading(r)
        if not r.text.strip():
            return parsed.model_copy(update=r.parsed_fields)
        errors = list(parsed.errors)
        blocks = dict(parsed.blocks)
        raw = find_block(r.text, "thought", r)
        thought = None if raw is None else read_message_block(raw, "thought", errors, r)
        if raw is None:
            errors.append(ProtocolError(kind="missing_block", detail="<thought> missing"))
        blocks["thought"] = (
            thought if isinstance(thought, str) or thought is None else json.dumps(thought, ensure_ascii=False)
        )
        if self.single_call:
            raw_state = find_block(r.text, "state", r)
            state, err = (None, "<state> missing") if raw_state is None else parse_state_json(raw_state, r)
            if err:
                errors.append(ProtocolError(kind="missing_block" if raw_state is None else "bad_json", detail=err))
            blocks["state"] = state
        decision = parsed.decision.model_copy(update={"extras": {"thought": blocks["thought"]}})
        return Parsed(decision=decision, blocks=blocks, errors=errors, **r.parsed_fields)

    def render(self, decision: Decision) -> str:
        parts = []
        if self.single_call:
            parts.append(
                "<state>\n"
                f"{json.dumps(decision.extras.get('state', self.owner.state or {}), ensure_ascii=False)}"
                "\n</state>"
            )
        parts.append(f"<thought>\n{json.dumps(decision.extras.get('thought') or '', ensure_ascii=False)}\n</thought>")
        parts.append(self.react.render(decision))
        return "\n".join(parts)


class _ActSampling(Backbone):
    """Adds per-call sampling to the actor's (role "agent") calls (switch `upstream_sampling`)."""

    def __init__(self, inner: Backbone, sampling: dict[str, Any]) -> None:
        self.inner, self.sampling, self.name, self.model = inner, sampling, inner.name, inner.model

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        extra = self.sampling if role == "agent" else {}
        return await self.inner.complete(
            messages, role=role, protocol=protocol, attempt=attempt, **{**extra, **sampling}
        )


def action_text(decision: Decision, max_chars: int | None) -> str | None:
    """The text of the action taken (None = no action), cut to `max_chars` for attempted_actions
    (`max_chars=None`: whole, what the updater's "Last action" shows)."""
    if decision.tool_calls:
        text = "; ".join(f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in decision.tool_calls)
    elif decision.message is not None:
        text = f"assistant_message({json.dumps(decision.message, ensure_ascii=False)})"
    else:
        return None
    return text if max_chars is None or len(text) <= max_chars else text[: max_chars - 3] + "..."


class ZipAct(SingleCallMethod):
    memory_enabled = False
    b3_template = "state_tracking"

    def __init__(
        self,
        backbone: Backbone,
        *,
        domain: str = "auto",
        upstream_sampling: bool = False,
        single_call: bool = False,
        action_chars: int = 300,
        released_prompts: bool = True,
        **params: Any,
    ) -> None:
        if domain != "auto" and domain not in zipact_prompts.DOMAINS:
            raise ValueError(
                f"zipact: unknown domain '{domain}'; choose auto or one of {sorted(zipact_prompts.DOMAINS)}"
            )
        if action_chars < 8:
            raise ValueError("zipact: action_chars must be >= 8")
        self.sampling = UPSTREAM_SAMPLING if upstream_sampling else {"init": {}, "update": {}, "act": {}}
        if self.sampling["act"]:
            backbone = _ActSampling(backbone, self.sampling["act"])
        super().__init__(backbone, **params)
        self.domain_param, self.single_call, self.action_chars = domain, single_call, action_chars
        self.protocol = ZipActProtocol(self, single_call=single_call)
        self.state_protocol = StateProtocol(self)
        self.state: dict[str, Any] | None = None
        self.tracked: list[str] = []  # code-tracked attempted_actions
        self.last_action: str | None = None
        self.last_action_full: str | None = None
        self.released_prompts = (
            released_prompts  # ZipAct's released state-module prompts where they exist (FlowState B.5)
        )
        self._final_obs = ""
        self.t = 0
        self._state_log: list[dict[str, Any]] = []
        self._mem_log: dict[str, Any] | None = None
        self.b3 = b3text.load()[0]  # App. B.3's State Tracking template (kit/b3.py), else the project's layout

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: the source of the released state-module prompts and the pin note."""
        from runners.upstream import TextSources

        sources = TextSources()
        released = (params or {}).get("released_prompts", True)
        injected = sorted(set(zipact_prompts.DOMAINS) - set(zipact_prompts.UPSTREAM_PROMPTS))
        if released:
            for domain in zipact_prompts.UPSTREAM_PROMPTS:
                zipact_prompts.state_texts(domain, sources)
            for domain in injected:
                sources.own(
                    f"{domain}.state_items",
                    "FlowState B.5: the released ALFWorld state-module prompts with this "
                    "domain's state items injected (baselines/zipact_prompts.py DOMAINS, inject)",
                )
        else:
            for domain in zipact_prompts.DOMAINS:
                sources.own(f"{domain}.state_prompts", "released_prompts=false: the project's own state-module prompts")
        return {
            "text_sources": b3text.manifest(
                cls.b3_template, sources.entries, fallback=(f"{REACT_RULES}\n{zipact_prompts.STATE_TRACKING_RULES}")
            ),
            "pin": zipact_prompts.ZIPACT_PIN_NOTE,
            "released_core_with_injectables_for": injected if released else [],
        }

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.domain = zipact_prompts.domain_of(task.kind) if self.domain_param == "auto" else self.domain_param
        self.note = zipact_prompts.DOMAINS[self.domain]["note"]
        self.texts = zipact_prompts.state_texts(self.domain, own_wording=not self.released_prompts)

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.t = 0
        if self.state is None:
            await self.init_state(request.text)
        else:
            if not isinstance(self.state.get("goal_state"), dict):
                self.state["goal_state"] = {}
            goal = self.state["goal_state"]
            if not isinstance(goal.get("sub_goal_queue"), list):
                goal["sub_goal_queue"] = []
            goal["sub_goal_queue"].append(request.text)
            # The previous request's last observation (the answer to its last action) reaches the
            # updater together with the new request.
            last = f"{self._final_obs}\n\n" if self._final_obs else ""
            self._final_obs = ""
            if not self.single_call:
                await self.update_state(f"{last}New user request:\n{request.text}")
        # attempted_actions are per request: a new request starts with an empty list
        self.tracked, self.last_action, self.last_action_full = [], None, None
        if self.state is not None:
            self._sync_attempted(self.state)

    async def end_request(self, outcome: RequestOutcome) -> None:
        await super().end_request(outcome)
        self._final_obs = outcome.final_observation.as_text()

    async def _state_call(self, kind: str, messages: list[Message]) -> dict[str, Any] | None:
        c = await self.backbone.complete(messages, role="state", protocol=self.state_protocol, **self.sampling[kind])
        parsed = self.state_protocol.parse(c.text)
        self._state_log.append({"call": kind, "ok": parsed.ok, "errors": [e.model_dump() for e in parsed.errors]})
        return parsed.blocks.get("state")

    async def init_state(self, task_text: str) -> None:
        skeleton = zipact_prompts.empty_state(self.domain)
        skeleton["goal_state"]["global_instruction"] = task_text
        self.state = skeleton  # also what the scripted backbone renders when it has no opinion
        if self.single_call:
            return
        tools = [t.name for t in self.task.tools]
        state = await self._state_call(
            "init",
            [
                {"role": "system", "content": self.texts["init_system"]},
                {
                    "role": "user",
                    "content": self.texts["init_user"].format(
                        task=task_text,
                        instruction=task_text,
                        note=self.note,
                        actions=zipact_prompts.actions_text(tools),
                        skeleton=zipact_prompts.state_json(skeleton),
                    ),
                },
            ],
        )
        if state is not None:  # on failure the skeleton stays (upstream)
            if not isinstance(state.get("goal_state"), dict):
                state["goal_state"] = {}
            if not state["goal_state"].get("global_instruction"):
                state["goal_state"]["global_instruction"] = task_text
            self.state = state

    def _sync_attempted(self, state: dict[str, Any] | None) -> None:
        assert state is not None  # set by begin_task
        if not isinstance(state.get("constraint_state"), dict):
            state["constraint_state"] = {}
        state["constraint_state"]["attempted_actions"] = list(self.tracked)

    def _track(self) -> None:
        if self.last_action is not None and self.last_action not in self.tracked:
            self.tracked.append(self.last_action)

    async def update_state(self, observation: str) -> None:
        """S ← Update(S, a_{t−1}, o_t); a parse failure keeps the previous state."""
        self._track()
        self._sync_attempted(self.state)
        assert self.state is not None  # set by begin_task
        full = self.last_action_full
        state = await self._state_call(
            "update",
            [
                {"role": "system", "content": self.texts["update_system"]},
                {
                    "role": "user",
                    "content": self.texts["update_user"].format(
                        state=zipact_prompts.state_json(self.state),
                        state_str=json.dumps(self.state, indent=2, ensure_ascii=False),
                        action=full or "(none)",
                        last_action=full,
                        observation=observation or "(empty)",
                        note=self.note,
                    ),
                },
            ],
        )
        if state is not None:
            self.state = state
        self._sync_attempted(self.state)

    def user_blocks(self, latest: str) -> list[tuple[str, str]]:
        return [
            ("agent_status", zipact_prompts.state_json(self.state or {})),
            ("latest_observation", latest),
            ("user_query", self.request.text),
        ]

    def b3_inputs(self, latest: str) -> dict[str, str]:
        return {
            "execution_state": zipact_prompts.state_json(self.state or {}),
            "observation": latest,
            "query": self.request.text,
        }

    def messages(self, latest: str) -> list[Message]:
        if self.b3 is not None:
            return b3text.messages(
                self.b3,
                self.b3_template,
                system={
                    "react_rules": REACT_RULES,
                    "state_tracking_rules": zipact_prompts.STATE_TRACKING_RULES,
                    "task_policy": self.task.policy or "",
                    "available_tools": tools_text(self.task.tools),
                    "state_output_protocol": self.protocol.description(),
                },
                user=self.b3_inputs(latest),
            )
        return [
            system_message(
                instructions=f"{REACT_RULES}\n\n{zipact_prompts.STATE_TRACKING_RULES}",
                policy=self.task.policy,
                tools=self.task.tools,
                output_protocol=self.protocol.description(),
            ),
            user_message(self.user_blocks(latest)),
        ]

    async def step(self, observation: Observation) -> Decision:
        self.t += 1
        latest = observation.as_text()
        if self.t > 1 and not self.single_call:
            await self.update_state(latest)
        if self.single_call:
            # The actor is the updater here: a_{t-1} joins attempted_actions BEFORE it sees the
            # state (upstream appends the last action before the update call).
            self._track()
            self._sync_attempted(self.state)
        await self.before_act(latest)
        parsed, _ = await self.ask(self.messages(latest))
        if self.single_call:
            if isinstance(parsed.blocks.get("state"), dict):
                self.state = parsed.blocks["state"]
            self._sync_attempted(self.state)
        # attempted_actions holds the compact text (action_chars); the updater sees the whole action
        self.last_action = action_text(parsed.decision, self.action_chars)
        self.last_action_full = action_text(parsed.decision, None)
        self._log["state_calls"], self._state_log = self._state_log, []
        if self._mem_log is not None:
            self._log["memory"], self._mem_log = self._mem_log, None
        return parsed.decision

    async def before_act(self, latest: str) -> None:
        """Hook for ZipAct+BM25 (per-step retrieval)."""


class ZipActBM25(ZipAct):
    """ZipAct plus the §2 BM25 store over the interaction history (B.3 State tracking + memory):
    same chunks, same top-3, the current subtask prompt as the query; the retrieved items go to
    the actor only (§6). Switch `query: objective` retrieves at every step with
    current_objective + the latest observation instead."""

    step_views = (RETRIEVED_VIEW,)

    def __init__(
        self,
        backbone: Backbone,
        *,
        query: str = "request",
        chunk_tokens: int = 2048,
        top_k: int = 3,
        include_feedback: bool = True,
        **params: Any,
    ) -> None:
        if query not in ("request", "objective"):
            raise ValueError("zipact_bm25: query must be 'request' or 'objective'")
        super().__init__(backbone, **params)
        self.query_mode, self.include_feedback = query, include_feedback
        self.store = BM25Store(chunk_tokens=chunk_tokens, top_k=top_k)
        self.retrieved: list[str] = []

    async def begin_task(self, task: TaskView) -> None:
        task = task.for_memory_method()  # e.g. travel: the base traveller comes through memory, as upstream
        await super().begin_task(task)
        self.store.add_many([c for c in task.initial_memory if c and c.strip()])

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if self.query_mode == "request":
            self.retrieved = self.store.search(request.text)

    async def before_act(self, latest: str) -> None:
        if self.query_mode == "objective":
            goal = (self.state or {}).get("goal_state", {})
            objective = goal.get("current_objective", "") if isinstance(goal, dict) else ""
            self.retrieved = self.store.search(f"{objective}\n{latest}")
        if self.t == 1 or self.query_mode == "objective":
            self._mem_log = {"stored_pieces": len(self.store), "retrieved": [r[:PREVIEW_CHARS] for r in self.retrieved]}

    def user_blocks(self, latest: str) -> list[tuple[str, str]]:
        return [("memory", memory_block_text(self.retrieved))] + super().user_blocks(latest)

    b3_template = "state_tracking_memory"

    def b3_inputs(self, latest: str) -> dict[str, str]:
        return {"retrieved_memory": memory_block_text(self.retrieved), **super().b3_inputs(latest)}

    async def end_request(self, outcome: RequestOutcome) -> None:
        await super().end_request(outcome)
        self.store.add_many(outcome_chunks(outcome, include_feedback=self.include_feedback))
