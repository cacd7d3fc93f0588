"""PoS as a harness Method (docs/pos.md §2): one audited belief update per executed action, progress
health and recovery, and a policy that reads the belief instead of raw history.

Harness mapping: the environment returns an action's observation with the *next* `step` call,
so step t first finishes action t−1's update (delta → Sentinel → commit → progress → health →
recovery → Belief Text) and then asks the policy. Every decision (tool calls, a message, or an
empty turn) is one action. The request-ending action gets no update: the harness delivers no
observation after it; `end_request` closes the recovery as `task_terminal`."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from kit.agent import SingleCallMethod
from pos.config import PosConfig
from pos.gaps import StableGapIdentityTracker, frontier_changed
from pos.health import HealthReport, detect, verified_window
from pos.policy import (
    EXAMPLES,
    NO_OBSERVATION,
    action_text,
    belief_text_input,
    describe,
    format_example,
    policy_messages,
)
from pos.projection import project_on_gap
from pos.prompts import belief_text_messages
from pos.release_prompt import RELEASE_KINDS, release_messages, release_texts
from pos.release_react import (  # noqa: F401  (NO_SEPARATE_RESULT re-exported)
    NO_SEPARATE_RESULT,
    observation_text,
    split_observation,
    transition_action,
)
from kit import release_config
from pos import release_texts as belief_release
from pos.protocols import AuditProtocol, BeliefTextProtocol, PolicyProtocol, ProgressProtocol
from pos.recovery import RecoveryDirective, build_directive
from pos.sentinel import audit_scope, diagnostic_progress, evidence_items, execution_progress, run_audit
from pos.updater import BeliefModel, ContextFailure
from pos.world import Belief, World
from pos.repair_text import missing_action, policy_repair
from runners.api import (
    Backbone,
    BackboneError,
    Decision,
    Message,
    Observation,
    Parsed,
    ProtocolError,
    Request,
    RequestOutcome,
    StepSeries,
    StepView,
    TaskView,
)
from runners.upstream import TextSources


TASK_SUCCESS_REASON = "The environment reports that the task succeeded."


HEALTH = ("health", "actions.health")  # the turn's last action's health (§7), else the last one logged this turn


PROJECT_ROLES = {"agent": "agent", "state": "state", "audit": "sentinel", "progress": "sentinel"}
"""The request's role here → the `sampling` role of conf/method/pos.yaml that gives its project settings."""


def role_sampling(cfg: PosConfig, kind: str, sources: TextSources) -> dict[str, dict[str, Any]]:
    """Per-call request settings of the policy, belief model, audit and progress calls: on the PoS
    benchmarks with `request_settings: release`, the release's run config for the role
    (pos/release_config.py, recorded in `sources`); otherwise `sampling` of the method config."""
    own = {role: dict(cfg.sampling.get(mine, {})) for role, mine in PROJECT_ROLES.items()}
    if cfg.request_settings != "release" or kind not in release_config.CONFIG_DIRS:
        return own
    return {
        role: release_config.request_settings(kind, cfg.release_run_config, role, sources, own[role])
        for role in PROJECT_ROLES
    }


class PoS(SingleCallMethod):
    # What the report and the plots draw from `step_log`: health H over steps (trapped at H ≤ 0.25,
    # §7) and, per step, health, audit and recovery with the committed belief.
    step_series = (
        StepSeries(
            name="pos_health",
            path=tuple(f"{p}.health_score" for p in HEALTH),
            axis="health H",
            low=0.0,
            high=1.0,
            threshold=0.25,
            title="PoS progress health H over steps (trapped at H ≤ 0.25)",
        ),
    )
    step_views = (
        StepView(
            kind="step_table",
            name="pos",
            title="PoS belief and progress health",
            fields={
                "P_e": tuple(f"{p}.persistence_e" for p in HEALTH),
                "P_a": tuple(f"{p}.persistence_a" for p in HEALTH),
                "S": tuple(f"{p}.stagnation" for p in HEALTH),
                "R": tuple(f"{p}.recurrence" for p in HEALTH),
                "H": tuple(f"{p}.health_score" for p in HEALTH),
                "trapped": tuple(f"{p}.trapped" for p in HEALTH),
                "pattern": tuple(f"{p}.trapping_pattern" for p in HEALTH),
                "audit": "audit.verdict",
                "recovery": "recovery_active",
            },
            details=(
                ("world state", "belief.world"),
                ("epistemic gaps", "belief.epistemic_gaps"),
                ("achievement gaps", "belief.achievement_gaps"),
                ("frontier", "belief.frontier"),
                ("health (P, S, R, H; trapping)", HEALTH),
                ("recovery constraints (active directive)", "recovery_active"),
                ("consistency audit", "audit"),
            ),
        ),
    )

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        try:
            self.base_cfg = PosConfig(**params)
        except ValidationError as e:
            raise ValueError(f"PoS params are invalid (see conf/method/pos.yaml for the accepted keys): {e}") from None
        super().__init__(backbone, max_resamples=self.base_cfg.policy_max_json_retries)  # params validated by PosConfig
        self.protocol: PolicyProtocol = PolicyProtocol()
        self.audit_protocol, self.progress_protocol, self.text_protocol = (
            AuditProtocol(),
            ProgressProtocol(),
            BeliefTextProtocol(),
        )
        self.carried_world: World | None = None
        self.earlier: list[dict[str, Any]] = []
        self.sources = TextSources()

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: where each upstream text the policy prompt may carry comes from."""
        sources = TextSources()
        cfg = PosConfig(**(params or {}))
        if cfg.belief_prompts == "release":
            belief_release.load(sources)
        from pos import repair_text  # the repair turns' corrections (module-level sources, recorded here too)

        repair_text.policy_repair(), repair_text.missing_action(), repair_text.belief_repair(None)
        repair_text.sentinel_repair(), repair_text.progress_repair(), repair_text.key_set_error([], [], [])
        sources.entries.update(repair_text.SOURCES.entries)
        from pos.protocols import format_lines

        format_lines(sources)  # the policy's reply-format lines off the PoS benchmarks
        if cfg.recovery.mode == "generic":
            sources.own(
                "pos.recovery.generic",
                "recovery.mode=generic: the release has no generic recovery; the project's own text (pos/recovery.py "
                "GENERIC_TEXT)",
            )
        for kind in RELEASE_KINDS:
            if kinds is None or kind in kinds:
                role_sampling(cfg.for_kind(kind), kind, sources)
        if cfg.policy_prompt == "release":
            for kind in RELEASE_KINDS:
                if kinds is not None and kind not in kinds:  # only the kinds of the cell's benchmark
                    continue
                k = cfg.for_kind(kind)
                release_texts(kind, k.max_actions_per_turn, sources, example=k.policy_format_example)
        elif cfg.policy_format_example:
            for kind in EXAMPLES:
                if kinds is None or kind in kinds:
                    format_example(kind, sources)
        return {"text_sources": sources.as_manifest()}

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.cfg = self.base_cfg.for_kind(task.kind)
        self.protocol.configure(task, self.cfg.max_actions_per_turn)
        self.release = (
            release_texts(
                task.kind, self.cfg.max_actions_per_turn, self.sources, example=self.cfg.policy_format_example
            )
            if self.cfg.policy_prompt == "release" and task.kind in RELEASE_KINDS
            else None
        )
        self.belief_texts = belief_release.load(self.sources) if self.cfg.belief_prompts == "release" else None
        self.sampling = role_sampling(self.cfg, task.kind, self.sources)
        self.bare = self.release is not None  # the release adapter's tool results: the output alone, no call label
        self.model = BeliefModel(
            self.backbone,
            mode=self.cfg.task_mode,
            max_json_retries=self.cfg.max_json_retries,
            texts=self.belief_texts,
            sampling=self.sampling["state"],
        )
        self.carried_world, self.earlier = None, []

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.belief: Belief | None = None
        self.belief_text = ""
        self.raw: list[dict[str, Any]] = []
        self.transitions: list[dict[str, Any]] = []
        self.snapshots: list[dict[str, Any]] = []
        self.tracker = StableGapIdentityTracker()
        self.gap_ids: dict[str, list[str]] = {"epistemic": [], "achievement": []}
        self.update_history: list[dict[str, Any]] = []
        self.pending_issues: list[dict[str, Any]] = []
        self.health = HealthReport(health_threshold=self.cfg.trapping.health_threshold)
        self.directive: RecoveryDirective | None = None
        self.recoveries: list[dict[str, Any]] = []
        self.frontier_episode = 0
        self.action_count = 0
        self.turn = 0  # policy turns of this request (the forced-submission directive needs the last one)
        self.pending: list[tuple[int, Any, str]] = []  # (action index, action, thought) of the last turn
        self.terminal_context_errors: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ the step
    async def step(self, observation: Observation) -> Decision:
        self.log: dict[str, Any] = {"protocol_errors": []}
        self.actions = observation.actions  # shown to the policy only, as upstream's `Available action schemas`
        if self.belief is None:
            # Upstream's first state: `observation` is the reset observation. Environments that deliver it
            # as the request text (ALFWorld: room, then "Your task is to: ...") send an empty first
            # observation; the request text is then the first observation (the policy's turn 1 shows the room).
            obs = observation_text(observation, self.bare)
            obs = obs if obs.strip() else self.request.text
            await self._initialize(obs)
        else:
            obs = ""
            for (step, action, thought), text in zip(
                self.pending, split_observation(observation, len(self.pending), self.bare)
            ):
                await self._after_action(step, action, thought, text)
                obs = text  # the policy sees the last action's observation only (§4)
        return await self._decide(obs)

    def _errors(self, call: str, errors: list[ProtocolError]) -> None:
        self.log["protocol_errors"] += [{"call": call, **e.model_dump()} for e in errors]

    @property
    def consistency(self) -> bool:
        return self.cfg.sentinel.enabled and self.cfg.sentinel.consistency_enabled

    async def _audited(
        self,
        propose: Any,
        *,
        before: Belief,
        step: int,
        before_step: int,
        mode: str | None,
        items: list[dict[str, Any]],
        call: str,
    ) -> tuple[Belief, str]:
        """Candidate → Sentinel audit → ≤ 1 repair and re-audit → (committed belief, status) (§5)."""
        prop = await propose(None)
        self._errors(call, prop.errors)
        if prop.candidate is None:
            self._context_failure(step, call, prop)
            return before, "rejected"
        if not self.consistency:
            return prop.candidate, "unaudited"
        if mode is None:
            return prop.candidate, "validated"
        audit: dict[str, Any] = dict(
            step=step,
            before=before,
            items=items,
            cfg=self.cfg.sentinel,
            before_step=before_step,
            sampling=self.sampling["audit"],
            health=self._health_view(),
            texts=self.belief_texts,
        )
        res = await run_audit(self.backbone, self.audit_protocol, candidate=prop.candidate, **audit)
        self._errors("audit", res.errors)
        self.log["audit"] = {"mode": mode, "verdict": res.verdict, "issue": res.issue, "discarded": res.discarded}
        if res.verdict != "issue":
            return (prop.candidate, "validated") if res.verdict == "clean" else (before, "rejected")
        repaired = await propose({"base_step": before_step, "audit_mode": mode, "issue": res.issue})
        self._errors(call + "_repair", repaired.errors)
        remaining = res.issue
        if repaired.candidate is None:
            self._context_failure(step, call + "_repair", repaired)
        else:
            res2 = await run_audit(self.backbone, self.audit_protocol, candidate=repaired.candidate, **audit)
            self._errors("re_audit", res2.errors)
            self.log["re_audit"] = {"verdict": res2.verdict, "issue": res2.issue, "discarded": res2.discarded}
            if res2.verdict == "clean":
                return repaired.candidate, "repaired"
            remaining = res2.issue or res.issue  # §5: the issues that remain after the re-audit
        self.pending_issues.append({"step": step, "issue": remaining})  # exported only, never fed back
        return before, "rejected"

    def _context_failure(self, step: int, call: str, prop: Any) -> None:
        """§2.5: no buildable belief after the re-asks. `case_error` ends the case as an error
        (upstream raises and reruns the case); `keep_belief` continues as a rejected update."""
        if self.cfg.context_failure == "case_error":
            detail = "; ".join(e.detail for e in prop.errors[-2:]) or "no reply"
            raise ContextFailure(
                f"PoS belief model ({call}, step {step}) gave no buildable belief after {prop.calls} call(s): "
                f"{detail}. "
                "The case is recorded as an error (docs/pos.md §2.5); set context_failure: keep_belief to continue "
                "on the last committed belief"
            )

    async def _initialize(self, obs: str) -> None:
        # §2.1: step −1 holds the reset observation (the initialisation audit grounds quotes in it).
        # goal.user_input is the task alone (upstream `state["task"]`: ALFWorld's sentence after "Your task is to:").
        self.raw = [{"step": -1, "action": None, "observation": obs, "done": False, "success": None, "score": None}]
        base = self.carried_world.copy() if (self.cfg.carry_world_across_requests and self.carried_world) else World()
        carried = (
            {"world": base.to_dict(), "earlier_requests": self.earlier}
            if self.earlier and self.cfg.carry_world_across_requests
            else None
        )
        task = self.request.goal or self.request.text
        empty = Belief(goal={"user_input": task, "specification": ""}, world=base)

        async def propose(repair: dict[str, Any] | None) -> Any:
            return await self.model.initialize(task=task, observation=obs, base=base, carried=carried, repair=repair)

        mode, scope = audit_scope(self.raw, 0, self.cfg.sentinel, initial=True)
        self.belief, status = await self._audited(
            propose,
            before=empty,
            step=-1,
            before_step=-1,
            mode=mode,
            items=evidence_items(scope, self.cfg.sentinel.audit_observation_max_chars),
            call="init",
        )
        self.update_history.append({"step": -1, "status": status, "audit_mode": mode if self.consistency else None})
        self._commit_bookkeeping(-1)
        await self._refresh_text()
        self.log["update"] = self.update_history[-1]

    def _commit_bookkeeping(self, step: int) -> None:
        """Reconcile stable gap identities and store the snapshot of the committed belief."""
        assert self.belief is not None  # set by _initialize
        for t in ("epistemic", "achievement"):
            self.gap_ids[t] = self.tracker.reconcile(t, self.belief.gaps(t))
        self.snapshots.append(
            {
                "step": step,
                "world": self.belief.world.as_lists(),
                "epistemic_gap_ids": list(self.gap_ids["epistemic"]),
                "achievement_gap_ids": list(self.gap_ids["achievement"]),
                "frontier": self.belief.frontier,
            }
        )

    async def _after_action(
        self, step: int, action: Any, thought: str, obs: str, *, done: bool = False, success: bool | None = None
    ) -> None:
        assert self.belief is not None  # set by _initialize
        """Steps 3a–3e of §2 for one action of the previous turn. The step log's top-level keys
        describe the last action of the turn; `actions` lists every action's. `done`: the action
        ended the request (upstream `state["done"]`): as upstream's manager, a success is labelled
        without a progress call, and neither health nor the Belief Text is computed after it."""
        for k in ("audit", "re_audit", "health", "recovery_started"):
            self.log.pop(k, None)
        self.raw.append(
            {"step": step, "action": action, "observation": obs, "done": done, "success": success, "score": None}
        )
        n = sum(1 for u in self.update_history if u["step"] >= 0) + 1
        mode, scope = audit_scope(self.raw, n, self.cfg.sentinel)
        before = self.belief
        transition = {"thought": thought, "action": action, "observation": obs}

        async def propose(repair: dict[str, Any] | None) -> Any:
            return await self.model.update(
                before, transition=transition, step=step, health=self._health_view(), repair=repair
            )

        committed, status = await self._audited(
            propose,
            before=before,
            step=step,
            before_step=step - 1,
            mode=mode,
            items=evidence_items(scope, self.cfg.sentinel.audit_observation_max_chars),
            call="delta",
        )
        self.update_history.append({"step": step, "status": status, "audit_mode": mode if self.consistency else None})
        record: dict[str, Any] = {
            "step": step,
            "frontier_episode": self.frontier_episode,
            "frontier": before.frontier,
            "action": action,
            "observation": obs,
            "done": done,
            "success": success,
            "task_score": None,
            "progress": None,
            "scoring_method": None,
            "score": None,
            "affected_record_ids": [],
            "reason": None,
        }
        if frontier_changed(before.frontier, committed.frontier):
            self.frontier_episode += 1
        self.belief = committed
        self._commit_bookkeeping(step)
        self.transitions.append(record)
        label = await self._progress(step, before, action, obs, success=bool(done and success))
        if label is not None:
            record.update(label)
            if self.cfg.trapping.enabled and not done:
                self._update_health()
        if not done:  # upstream: no Belief Text after the episode is done (nothing reads it)
            await self._refresh_text()
        self.log.update(update=self.update_history[-1], transition=record)
        self.log.setdefault("actions", []).append(
            {
                k: self.log[k]
                for k in ("update", "transition", "audit", "re_audit", "health", "recovery_started")
                if k in self.log
            }
        )

    async def _progress(
        self, step: int, before: Belief, action: Any, obs: str, *, success: bool = False
    ) -> dict[str, Any] | None:
        assert self.belief is not None  # set by _initialize
        s = self.cfg.sentinel
        if not (s.enabled and s.progress_enabled):
            return None
        if self.cfg.task_mode == "diagnostic":
            return diagnostic_progress(before.world, self.belief.world, self.cfg.diagnostic_progress_threshold)
        if success:  # upstream `execution_task_success`: the environment's success is authoritative
            return {
                "progress": 1,
                "score": 1.0,
                "affected_record_ids": [],
                "reason": TASK_SUCCESS_REASON,
                "scoring_method": "execution_task_success",
            }
        label, errors = await execution_progress(
            self.backbone,
            self.progress_protocol,
            step=step,
            frontier=before.frontier,
            action=action,
            observation=obs,
            before=before,
            after=self.belief,
            cfg=s,
            sampling=self.sampling["progress"],
            health=self._health_view(),
            texts=self.belief_texts,
        )
        self._errors("progress", errors)
        return label

    def _health_view(self) -> dict[str, Any]:
        """`BeliefHealth` (§1) as the belief context carries it (§3)."""
        return self.health.model_dump(exclude={"recurrence_rates"})

    def _health_inputs(self) -> list[dict[str, Any]]:
        assert self.belief is not None  # set by _initialize
        gap = self.belief.frontier_gap()
        snaps = {s["step"]: s for s in self.snapshots}
        out = []
        for t in self.transitions:
            s = snaps.get(t["step"])
            out.append(
                {
                    "step": t["step"],
                    "action": t["action"],
                    "progress": t["progress"],
                    "epistemic_gaps": s["epistemic_gap_ids"] if s else [],
                    "achievement_gaps": s["achievement_gap_ids"] if s else [],
                    "world": s["world"] if s else None,
                    "active_gap_world": project_on_gap(s["world"], gap) if s else None,
                }
            )
        return out

    def _update_health(self) -> None:
        """§7 detection and the §9 lifecycle after a label on a non-terminal step."""
        assert self.belief is not None  # set by _initialize
        snaps = self._health_inputs()
        self.health = detect(snaps, self.cfg.trapping)
        self.log["health"] = self.health.model_dump() | {"trapped": self.health.trapped}
        if not self.health.trapped or not self.cfg.recovery.enabled:
            self._finish_recovery("health_recovered")
            return
        self._finish_recovery("rediagnosed")
        win = verified_window(snaps, self.cfg.trapping.window_size)
        self.directive = build_directive(
            self.health,
            gaps={t: self.belief.gaps(t) for t in self.gap_ids},
            gap_ids=self.gap_ids,
            active_gap=self.belief.frontier_gap(),
            window=win,
            snapshots=self.snapshots,
            projections=[w["active_gap_world"] for w in win],
            transitions=self.transitions,
            action_count=self.action_count,
            cfg=self.cfg.recovery,
            epsilon=self.cfg.trapping.recurrence_epsilon,
            texts=self.belief_texts,
        )
        if self.directive is not None:
            self.log["recovery_started"] = self.directive.model_dump()

    def _finish_recovery(self, reason: str) -> None:
        if self.directive is not None:
            self.directive.ended_reason, self.directive.ended_at_step = reason, self.action_count
            self.recoveries.append(self.directive.model_dump())
            self.log.setdefault("recovery_finished", []).append(reason)
            self.directive = None

    async def _refresh_text(self) -> None:
        assert self.belief is not None  # set by _initialize
        view = belief_text_input(self.belief)
        if not self.cfg.belief_text_enabled:
            self.belief_text = describe(view)
            return
        self.text_protocol.fallback = lambda: {"belief_text": describe(view)}
        msgs = (
            belief_release.belief_text_messages(self.belief_texts, view)
            if self.belief_texts is not None
            else belief_text_messages(view, self.text_protocol.description())
        )
        c = await self.backbone.complete(msgs, role="state", protocol=self.text_protocol, **self.sampling["state"])
        parsed = self.text_protocol.parse(c.text)
        self._errors("belief_text", parsed.errors)
        self.belief_text = parsed.blocks["json"]["belief_text"] if parsed.ok else describe(view)

    async def _decide(self, obs: str) -> Decision:
        assert self.belief is not None  # set by _initialize
        d = self.directive
        active = d is not None and d.applies_from_step <= self.action_count
        self.turn += 1
        budget = self.task.step_budget
        last_turn = self.cfg.forced_submission and budget is not None and self.turn >= budget
        recovery = d.prompt_view(generic=self.cfg.recovery.mode == "generic") if active and d is not None else None
        if self.release is not None:  # the release's ReAct prompt (pos/release_prompt.py)
            msgs = release_messages(
                self.release,
                task=self.task,
                observation=obs or NO_OBSERVATION,
                belief=self.belief,
                belief_text=self.belief_text,
                recovery=recovery,
                actions=self.actions,
                final_turn=last_turn,
            )
        else:
            msgs = policy_messages(
                task=self.task,
                protocol_text=self.protocol.description(),
                observation=obs,
                belief=self.belief,
                belief_text=self.belief_text,
                recovery=recovery,
                forced_submission=last_turn,
                actions=self.actions,
                example=format_example(self.task.kind, self.sources) if self.cfg.policy_format_example else None,
            )
        parsed = await self._policy(msgs, **self.sampling["agent"])
        decision, limit = parsed.decision, self.cfg.max_actions_per_turn
        if limit is not None and len(decision.tool_calls) > limit:
            self.log["policy"]["dropped_actions"] = [c.model_dump() for c in decision.tool_calls[limit:]]
            decision = decision.model_copy(update={"tool_calls": decision.tool_calls[:limit]})
        thought = str(decision.extras.get("thought", ""))
        # The release passes the decision's action object (`{"name", "arguments"}`, or an ALFWorld command string);
        # off the PoS benchmarks the one-line text of `action_text`.
        actions: list[Any] = [
            transition_action(c) if self.bare else action_text(Decision(tool_calls=[c])) for c in decision.tool_calls
        ] or [action_text(decision)]
        self.pending = []
        for a in actions:
            if active and d is not None:
                d.recovery_action_steps.append(self.action_count)
            self.pending.append((self.action_count, a, thought))
            self.action_count += 1
        return decision

    async def _policy(self, msgs: list[Message], **sampling: Any) -> Parsed:
        """The policy call as upstream's ReAct loop makes it (`baselines/react.py`): a reply that is
        not one JSON object gets repair turns (the raw reply + upstream's correction, at most
        `policy_max_json_retries`); a decision without an executable action gets one re-ask with
        upstream's missing-action directive; still none → the turn is spent with no action, and
        the step log says so. [harness choice] upstream raises when the JSON never parses; here
        the turn is a recorded no-op."""
        log: dict[str, Any] = {"protocol_errors": [], "repair_turns": [], "attempts": 0}
        attempt = 0

        async def call(prompt: list[Message]) -> tuple[Parsed, str]:
            nonlocal attempt
            c = await self.backbone.complete(prompt, role="agent", protocol=self.protocol, attempt=attempt, **sampling)
            attempt += 1
            p = self.protocol.parse(c.text)
            log["attempts"] += 1
            log["protocol_errors"] += [{"attempt": attempt - 1, **e.model_dump()} for e in p.errors]
            if p.repairs:
                log.setdefault("repairs", []).extend({"attempt": attempt - 1, **r} for r in p.repairs)
            return p, c.text

        async def decision(prompt: list[Message]) -> Parsed:
            p, text = await call(prompt)
            for _ in range(self.base_cfg.policy_max_json_retries):
                if "json" in p.blocks:
                    break
                note = policy_repair()
                log["repair_turns"].append({"attempt": attempt, "kind": "json", "correction": note})
                prompt = [*prompt, {"role": "assistant", "content": text}, {"role": "user", "content": note}]
                p, text = await call(prompt)
            return p

        parsed = await decision(msgs)
        if "json" in parsed.blocks and parsed.decision.is_empty:
            note = missing_action()
            log["repair_turns"].append({"attempt": attempt, "kind": "missing_action", "correction": note})
            retry = [
                *msgs,
                {"role": "assistant", "content": json.dumps(parsed.blocks["json"], ensure_ascii=False)},
                {"role": "user", "content": note},
            ]
            parsed = await decision(retry)
        if parsed.decision.is_empty:
            log["no_op"] = True
            log["no_action"] = "no executable action after the repair turns: the turn is spent without acting"
            parsed = parsed.model_copy(update={"decision": Decision(extras=parsed.decision.extras)})
        if not log["repair_turns"]:
            del log["repair_turns"]
        self.log["policy"] = log
        return parsed

    async def end_request(self, outcome: RequestOutcome) -> None:
        # The request's last actions still get their belief update from the environment's answer
        # (§2 steps 3a–3e); the harness hands that answer over here, not in a further step.
        self.final_log: dict[str, Any] = {}
        if self.belief is not None and self.pending and not outcome.final_observation.is_empty:
            self.log = {"protocol_errors": []}
            done = not outcome.truncated
            try:
                for (step, action, thought), text in zip(
                    self.pending, split_observation(outcome.final_observation, len(self.pending), self.bare)
                ):
                    await self._after_action(step, action, thought, text, done=done, success=outcome.success)
            except (ContextFailure, BackboneError) as e:
                # upstream `_record_terminal_context_error`: a context failure on the step that ended the
                # case is recorded without changing the benchmark's authoritative result; before the end
                # (a truncated request) it stays a case error, as upstream raises it
                if not done or getattr(e, "fatal", False):
                    raise
                self.terminal_context_errors.append(
                    {"step": step, "phase": "update", "error_type": type(e).__name__, "error": str(e)}
                )
                self.log["terminal_context_error"] = self.terminal_context_errors[-1]
            self.final_log = dict(self.log)
        self.pending = []
        self._finish_recovery("task_terminal")
        if self.belief is not None:
            self.carried_world = self.belief.world
        self.earlier.append({"request": self.request.text, "final_response": outcome.final_response})

    def step_log(self) -> dict[str, Any]:
        """This step's update, audit, progress, health, recovery, protocol errors and the committed belief."""
        log = dict(getattr(self, "log", {}))
        if self.belief is not None:
            log["belief"] = {
                "world": self.belief.world.to_dict(),
                "epistemic_gaps": self.belief.epistemic_gaps,
                "achievement_gaps": self.belief.achievement_gaps,
                "frontier": self.belief.frontier,
                "gap_ids": self.gap_ids,
                "frontier_episode": self.frontier_episode,
            }
            log["recovery_active"] = self.directive.model_dump() if self.directive else None
        return log

    def request_log(self) -> dict[str, Any]:
        """Recorded on the request in the episode record (the raw trajectory is in the steps)."""
        out = {k: v for k, v in self.export().items() if k != "raw_trajectory"}
        if getattr(self, "final_log", None):
            out["final_update"] = self.final_log
        return out

    def export(self) -> dict[str, Any]:
        """Per-request bookkeeping (belief_update_history, transitions, recoveries, pending issues)."""
        return {
            "belief_update_history": self.update_history,
            "transitions": self.transitions,
            "snapshots": self.snapshots,
            "recoveries": self.recoveries,
            "pending_issues": self.pending_issues,
            "raw_trajectory": self.raw,
            "terminal_context_errors": self.terminal_context_errors,
        }
