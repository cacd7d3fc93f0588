"""The FlowState method (arXiv 2609.34565, Algorithm 1; docs/flowstate.md §5): per step Serialize → one agent
call → Validate_upd + Validate_acc against S_{k,t} → Commit → Disclose → act; Persist + Index at
each request end. The ablations (`flowstate.ablations`) subclass this class."""

from __future__ import annotations

import json
from typing import Any

from kit.agent import SingleCallMethod
from flowstate.isu import commit, validate_update
from flowstate.prompts import ADDITIONS, serialize, serialize_b3
from kit import b3 as b3text
from flowstate.protocol import FlowStateProtocol
from flowstate.psa import AccessResult, disclose, validate_access
from flowstate.repository import ActiveState, HistoricalIndex, RawObs, Repository
from flowstate.state import StateOp, StateType, normalise_type
from runners.api import (
    Backbone,
    Decision,
    Message,
    Observation,
    Parsed,
    Request,
    RequestOutcome,
    StepView,
    TaskView,
    actions_json,
)
from runners.tokens import count

USER_TURN_MODES = ("request", "observation")


def parse_persist_types(value: str | list[str]) -> frozenset[StateType] | None:
    """`all` (None = keep every surviving state) or a list of type names (singular or plural)."""
    if value == "all" or value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    out = set()
    for n in names:
        t = normalise_type(n)
        if t is None:
            raise ValueError(
                f"persist_types: unknown state type {n!r}; use 'all' or a list of "
                f"{', '.join(s.value for s in StateType)}"
            )
        out.add(t)
    return frozenset(out)


def feedback_text(log: dict[str, Any], *, limit: int = 6) -> str | None:
    """Brief lines on what the last step's state requests came to: rejected state_delta operations
    and state_focus requests that disclosed nothing, each with its reason (None when all went through)."""
    lines = []
    for r in log.get("delta_rejected", []):
        op = r.get("op") or {}
        lines.append(
            f"- state_delta #{r.get('index')} ({op.get('operation')} {op.get('state_id')}) was rejected: "
            f"{r.get('reason')}"
        )
    access = log.get("access") or {}
    for r in access.get("rejected", []):
        lines.append(f"- state_focus {r['state_id']} was refused: {r['reason']}")
    for r in access.get("ignored", []):
        lines.append(f"- state_focus {r['state_id']} disclosed nothing: {r['reason']}")
    if not lines:
        return None
    cut = [ln if len(ln) <= 240 else ln[:237] + "..." for ln in lines[:limit]]
    if len(lines) > limit:
        cut.append(f"- ... and {len(lines) - limit} more")
    return "\n".join(cut)


class FlowState(SingleCallMethod):
    """Full FlowState: ISU + PSA. Params (all [harness choice] switches, docs/flowstate.md §2.2, §4, §5, §6):
    max_resamples (3: re-samples on all-empty/unparseable output), persist_types ('all' or a list:
    which surviving current-request states persist), disclose_current_request_observations,
    disclose_incoming_relations, user_turn_mode ('request': each simulated-user message starts a
    new request; 'observation': it is shown in latest_observation), log_tokens (count Active State
    tokens in the step log), persist_agent_message (true: when a request ends because the user
    answers, i.e. each user message is a request, the agent's last message to the user is kept
    with that request and shown in the Historical State Index as `agent_response`, so a reply
    like "yes" can be resolved; false = the literal reading, the message is not kept),
    strict_relations (false: a relation label outside supports/derives/follows/supersedes is kept
    and listed as `unknown_relations` in the validated op, since App. B.4 requires only that ids
    resolve; true: such an operation is rejected).

    Step log: delta_validated, delta_rejected (index, op, reason), access (requested, granted,
    rejected, ignored, disclosed), disclosed, query_id, t, raw_ids, active_state_nodes and
    active_state_tokens (of S_{k,t}, the state the model saw), and
    new_request/persisted when a user message opened a request."""

    # The report's state graph: the validated delta operations per step, the rejected ones, what PSA
    # disclosed, and what persisted (at a user-opened request, and at the request's end).
    step_views = (
        StepView(
            kind="state_graph",
            name="flowstate",
            title="FlowState state graph",
            fields={
                "ops": "delta_validated",
                "rejected": "delta_rejected",
                "disclosed": "disclosed",
                "persisted": "persisted",
                "boundary": "persisted",
            },
        ),
    )

    with_focus = True  # PSA on: index + state_focus
    with_delta = True  # ISU on: model-written state_delta
    uses_b3 = True  # App. B.3 gives this method's template (the ablations': no)

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: the source of the prompt templates (App. B.3 or the project's wording)."""
        from runners.upstream import TextSources

        sources = TextSources()
        if cls.uses_b3:
            from flowstate.prompts import flowstate_rules, output_protocol_text
            from kit.prompting import REACT_RULES

            b3text.record(
                sources, "flowstate", fallback=f"{REACT_RULES}\n{flowstate_rules()}\n{output_protocol_text()}"
            )
        else:
            sources.own(
                "flowstate.ablation_prompts",
                "App. B.3 gives no template for the ablations: the project's "
                "wording with the removed component's rules dropped (flowstate/prompts.py)",
            )
        return {"text_sources": sources.as_manifest()}

    def __init__(
        self,
        backbone: Backbone,
        *,
        max_resamples: int = 3,
        persist_types: str | list[str] = "all",
        disclose_current_request_observations: bool = False,
        disclose_incoming_relations: bool = False,
        user_turn_mode: str = "request",
        log_tokens: bool = True,
        feedback: bool | None = None,
        persist_agent_message: bool | None = None,
        strict_relations: bool = False,
        no_history_rule: bool | None = None,
        cite_raw_results: bool | None = None,
        exclusive_decision: bool | None = None,
        **params: Any,
    ) -> None:
        super().__init__(backbone, max_resamples=max_resamples, **params)
        # App. B.3 as the text source (kit/b3.py) where the paper gives this method's template; the
        # project's additions (None) are on with our wording and off with B.3's (docs/flowstate.md §2.1).
        self.b3 = b3text.load()[0] if self.uses_b3 else None
        own = self.b3 is None
        self.additions = {
            name: own if v is None else bool(v)
            for name, v in zip(ADDITIONS, (no_history_rule, cite_raw_results, exclusive_decision))
        }
        feedback = own if feedback is None else feedback
        persist_agent_message = own if persist_agent_message is None else persist_agent_message
        if user_turn_mode not in USER_TURN_MODES:
            raise ValueError(f"user_turn_mode must be one of {', '.join(USER_TURN_MODES)}, got {user_turn_mode!r}")
        self.persist_types = parse_persist_types(persist_types)
        self.disclose_current = bool(disclose_current_request_observations)
        self.disclose_incoming = bool(disclose_incoming_relations)
        self.user_turn_mode = user_turn_mode
        self.log_tokens = log_tokens
        self.feedback = bool(
            feedback
        )  # [harness choice] report rejected ops / empty accesses in the next step (docs/flowstate.md)
        self._feedback: str | None = None
        self.persist_agent_message = bool(persist_agent_message)
        self.strict_relations = bool(strict_relations)
        self.protocol: FlowStateProtocol = FlowStateProtocol(with_focus=self.with_focus, with_delta=self.with_delta)
        self.protocol.exclusive_decision = self.additions["exclusive_decision"]
        self.repo = Repository()
        self.k = 0

    # ------------------------------------------------------------------ request boundaries
    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.repo = Repository()  # M_1 = ∅ (initial_memory is a memory-baseline notion)
        self.k = 0
        self._system: Message | None = None
        self._request_log: dict[str, Any] = {}

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self._turns = 0
        self._start(request.request_id, request.text)

    def _start(self, query_id: str, text: str) -> None:
        """Begin internal request q_k: G_k ← Index(M_k), S_{k,1} ← ∅, t ← 0."""
        self.k += 1
        self.query_id, self.query = query_id, text
        self.index = HistoricalIndex(self.repo) if self.with_focus else None
        self.active = ActiveState(query_id)
        self.t = 0
        self._last_message: str | None = None
        self._feedback = None

    def _persist(self, final_response: str | None, agent_message: str | None = None) -> list[str]:
        """Eq. 4: persist the surviving current-request states (filtered by `persist_types`) and
        the raw results they reference; `agent_message` (the agent's last message to the user,
        when the user's reply opens the next request) is kept with the request entry."""
        states = [n for n in self.active.current.values() if self.persist_types is None or n.type in self.persist_types]
        kept = agent_message if self.persist_agent_message else None
        return self.repo.persist(self.query_id, self.query, states, self.active.raw_pool, response=kept)

    async def end_request(self, outcome: RequestOutcome) -> None:
        # τ requests are dialogue turns (the next one is the user's reply to this message); other
        # benchmarks' final responses are answers, kept as in the paper (states only).
        final = outcome.final_response if outcome.final_response is not None else self._last_message
        self._request_log = {
            "persisted": self._persist(final, agent_message=final if self.task.kind == "tau" else None)
        }

    def request_log(self) -> dict[str, Any]:
        return self._request_log

    # ------------------------------------------------------------------ one step
    def _observe(self, obs: Observation) -> str:
        """Register this step's raw results under `obs-<k>-<t>-<i>` and render latest_observation."""
        lines = []
        for i, r in enumerate(obs.tool_results):
            rid = f"obs-{self.k}-{self.t}-{i}"
            self.active.raw_pool[rid] = RawObs(state_id=rid, name=r.name, content=r.content, error=r.error)
            lines.append(f"[{rid}] {r.name} -> {'ERROR: ' if r.error else ''}{r.content}")
        if obs.note:
            lines.append(obs.note)
        if obs.user_message is not None and self.user_turn_mode == "observation":
            lines.append(f"User: {obs.user_message}")
        if obs.actions is not None:  # the actions valid now (ALFWorld), as Observation.as_text shows them
            lines.append(f"Available actions: {actions_json(obs.actions)}")
        return "\n".join(lines)

    def active_state_view(self) -> list[dict[str, Any]]:
        return self.active.render(self.repo, incoming=self.disclose_incoming)

    def trajectory_text(self) -> str | None:
        return None

    def messages(self, latest: str) -> list[Message]:
        view = self.active_state_view()
        self._active_text = json.dumps(view, ensure_ascii=False, default=str)
        if self.b3 is not None:
            index = (
                [{**e, "query_number": i + 1} for i, e in enumerate(self.index.entries)]
                if self.index is not None
                else []
            )
            msgs = serialize_b3(
                self.b3,
                task=self.task,
                query=self.query,
                latest_observation=latest,
                index=index,
                active=view,
                feedback=self._feedback,
                **self.additions,
            )
            if self._system is None:
                self._system = msgs[0]
            return [self._system, msgs[1]]
        msgs = serialize(
            task=self.task,
            protocol_text=self.protocol.description(),
            query=self.query,
            latest_observation=latest,
            index_text=self.index.text if self.index is not None else None,
            active_state_text=self._active_text,
            trajectory=self.trajectory_text(),
            with_focus=self.with_focus,
            with_delta=self.with_delta,
            feedback=self._feedback,
            **self.additions,
        )
        if self._system is None:  # the system message never changes within a task
            self._system = msgs[0]
        return [self._system, msgs[1]]

    def usable(self, parsed: Parsed) -> bool:
        return FlowStateProtocol.nonempty(parsed)

    async def step(self, observation: Observation) -> Decision:
        if observation.user_message is not None and self.user_turn_mode == "request":
            # [harness choice] docs/flowstate.md §5 (τ-bench): each simulated-user message is a new request.
            persisted = self._persist(self._last_message, agent_message=self._last_message)
            self._turns += 1
            self._start(f"{self.request.request_id}/u{self._turns}", observation.user_message)
            turn = {"new_request": self.query_id, "persisted": persisted}
        else:
            turn = {}
        self.t += 1
        latest = self._observe(observation)
        self.protocol.context = {
            "salt": f"{self.query_id}:{self.t}",
            "raw_ids": [f"obs-{self.k}-{self.t}-{i}" for i in range(len(observation.tool_results))],
        }
        visible_nodes = len(self.active)
        msgs = self.messages(latest)
        # A no-op step leaves the next prompt byte-identical (no trajectory is serialised); the
        # episode's RecordingBackbone turns such repeats into fresh samples (Alg. 1 samples anew).
        parsed, _ = await self.ask(msgs)
        decision = parsed.decision
        log = self.apply(decision)
        self._feedback = feedback_text(log) if self.feedback else None
        if self._feedback:
            log["feedback"] = self._feedback
        self.after_step(observation, decision)
        if decision.message is not None and not decision.tool_calls:
            self._last_message = decision.message
        log.update(turn)
        log.update(
            {
                "query_id": self.query_id,
                "t": self.t,
                "raw_ids": list(self.protocol.context["raw_ids"]),
                "active_state_nodes": visible_nodes,
            }
        )
        if self.log_tokens:
            log["active_state_tokens"] = count(self._active_text)
        self._log.update(log)
        return decision

    def apply(self, decision: Decision) -> dict[str, Any]:
        """ISU and PSA of one step, both validated against S_{k,t} (Alg. 1 lines 9-11)."""
        ops = (
            [StateOp.from_json(d) for d in decision.extras.get("state_delta", []) if isinstance(d, dict)]
            if self.with_delta
            else []
        )
        targets = (
            [f["target_id"] for f in decision.extras.get("state_focus", []) if isinstance(f, dict)]
            if self.with_focus
            else []
        )
        valid, rejected = validate_update(ops, self.active, self.repo, strict_relations=self.strict_relations)
        access = (
            validate_access(targets, self.index, self.active, self.repo, current_observations=self.disclose_current)
            if self.index is not None
            else AccessResult()
        )
        commit(self.active, valid)  # S⁺ = Commit(S, ΔŜ)
        disclose(
            access, self.active, self.repo, current_observations=self.disclose_current
        )  # S_{t+1} = S⁺ ∪ Disclose(...)
        return {
            "delta_validated": [v.as_json() for v in valid],
            "delta_rejected": [r.model_dump() for r in rejected],
            "access": access.model_dump(),
            "disclosed": list(access.disclosed),
        }

    def after_step(self, observation: Observation, decision: Decision) -> None:
        """Hook for the w/o ISU variant (trajectory bookkeeping)."""
        return None
