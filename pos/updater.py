"""The belief model (role `state`): initialisation and per-action delta updates (docs/pos.md §2.5, §3).

A call returns a candidate belief or None; it never raises on model text. The model gets at most
one re-ask for a reply that does not parse (`min(1, max_json_retries)`), plus one more if the
candidate fails to build (e.g. a relation endpoint that does not exist)."""

from __future__ import annotations

import json

from typing import Any

from pydantic import BaseModel, Field

from pos.gaps import select_frontier, stabilize_targets
from pos import release_texts as release
from pos.prompts import delta_messages, init_messages, with_repair
from pos.repair_text import belief_repair, schema_error
from pos.protocols import DeltaProtocol, InitProtocol, JsonProtocol
from pos.world import Belief, BuildError, World
from runners.api import Backbone, CaseError, Message, ProtocolError


class ContextFailure(CaseError):
    """The belief model produced no buildable belief after its re-asks (§2.5: upstream raises and
    the case is rerun; [harness choice] `context_failure: case_error` records a case error)."""


class Proposal(BaseModel):
    """A candidate belief (None when none could be built) and what went wrong on the way."""

    model_config = {"arbitrary_types_allowed": True}
    candidate: Any = None
    raw: dict[str, Any] | None = None
    errors: list[ProtocolError] = Field(default_factory=list)
    calls: int = 0


class BeliefModel:
    def __init__(
        self,
        backbone: Backbone,
        *,
        mode: str,
        max_json_retries: int = 1,
        sampling: dict[str, Any] | None = None,
        texts: dict[str, Any] | None = None,
    ) -> None:
        self.backbone = backbone
        self.texts = texts  # the release's belief-model texts (pos/release_texts.py), None = the project's wording
        self.mode = mode
        self.retries = min(1, max_json_retries)
        self.sampling = sampling or {}
        self.init_protocol = InitProtocol()
        self.delta_protocol = DeltaProtocol()

    async def _ask(self, protocol: JsonProtocol, make: Any, build: Any) -> Proposal:
        """Ask, re-ask once on an unparsable reply, and once more when the candidate fails to build.
        `make(build_error)` gives the messages; `build(obj)` gives the candidate or raises BuildError."""
        prop = Proposal()
        parse_left, build_left, error_note = self.retries, 1, None
        attempt = 0
        correction: str | None = None
        while True:
            msgs: list[Message] = make(error_note)
            if (
                error_note is not None and self.texts is not None
            ):  # the release has one repair turn: the build error as its schema error
                msgs = [*msgs, {"role": "user", "content": belief_repair(error_note)}]
            if correction is not None:  # upstream's belief repair turn: messages + its correction
                msgs = [*msgs, {"role": "user", "content": correction}]
            text = (
                await self.backbone.complete(msgs, role="state", protocol=protocol, attempt=attempt, **self.sampling)
            ).text
            prop.calls += 1
            attempt += 1
            parsed = protocol.parse(text)
            prop.errors += parsed.errors
            if not parsed.ok:
                if parse_left <= 0:
                    return prop
                parse_left -= 1
                correction = belief_repair(schema_error(parsed.errors))
                continue
            prop.raw = parsed.blocks["json"]
            try:
                prop.candidate = build(prop.raw)
                return prop
            except BuildError as e:
                prop.errors.append(ProtocolError(kind="rejected", detail=f"candidate does not build: {e}"))
                if build_left <= 0:
                    return prop
                build_left -= 1
                error_note, correction = str(e), None

    async def initialize(
        self,
        *,
        task: str,
        observation: str,
        base: World,
        carried: dict[str, Any] | None,
        repair: dict[str, Any] | None = None,
    ) -> Proposal:
        """Initial belief from task + first observation, on top of `base` (empty, or the world
        carried from earlier requests)."""
        self.init_protocol.fallback = self.init_protocol.minimal

        def make(err: str | None) -> list[Message]:
            if self.texts is not None:
                msgs = release.init_messages(
                    self.texts, task=task, observation=observation, mode=self.mode, carried=carried
                )
                if repair:  # a Sentinel issue on the initial belief: the release's issue section, after the message
                    msgs[1]["content"] += self.texts["issue_heading"] + json.dumps(
                        [repair["issue"]], ensure_ascii=False
                    )
                return msgs
            return with_repair(
                init_messages(
                    task=task,
                    observation=observation,
                    mode=self.mode,
                    protocol_text=self.init_protocol.description(),
                    carried=carried,
                ),
                repair,
                err,
            )

        def build(obj: dict[str, Any]) -> Belief:
            world = base.apply(
                {
                    "upsert_entities": obj["entities"],
                    "upsert_states": obj["states"],
                    "upsert_relations": obj["relations"],
                }
            )
            e, a = obj["epistemic_gaps"], obj["achievement_gaps"]
            return Belief(
                goal={"user_input": task, "specification": obj["goal_specification"]},
                world=world,
                epistemic_gaps=e,
                achievement_gaps=a,
                frontier=select_frontier(None, obj["frontier"], e, a),
            )

        return await self._ask(self.init_protocol, make, build)

    async def update(
        self,
        base: Belief,
        *,
        transition: dict[str, Any],
        step: int,
        health: dict[str, Any],
        repair: dict[str, Any] | None = None,
    ) -> Proposal:
        """Candidate belief after one realised transition. The model sees the structured belief
        and this transition only, never past raw steps (§3)."""

        def no_op() -> dict[str, Any]:
            return self.delta_protocol.minimal() | {
                "epistemic_gaps": base.epistemic_gaps,
                "achievement_gaps": base.achievement_gaps,
                "frontier": base.frontier,
            }

        self.delta_protocol.fallback = no_op

        def make(err: str | None) -> list[Message]:
            if self.texts is not None:
                return release.update_messages(
                    self.texts,
                    belief=base.context(step=step - 1, health=health),
                    transition=transition,
                    mode=self.mode,
                    issues=[repair["issue"]] if repair else None,
                )
            return delta_messages(
                belief=base.context(step=step - 1, health=health),
                transition=transition,
                mode=self.mode,
                protocol_text=self.delta_protocol.description(),
                repair=repair,
                build_error=err,
            )

        def build(obj: dict[str, Any]) -> Belief:
            world = base.world.apply(obj)
            e = stabilize_targets(obj["epistemic_gaps"], base.epistemic_gaps)
            a = stabilize_targets(obj["achievement_gaps"], base.achievement_gaps)
            return Belief(
                goal=dict(base.goal),
                world=world,
                epistemic_gaps=e,
                achievement_gaps=a,
                frontier=select_frontier(base.frontier, obj["frontier"], e, a),
            )

        return await self._ask(self.delta_protocol, make, build)
