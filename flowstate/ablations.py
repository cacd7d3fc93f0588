"""The two FlowState ablations of §4.1 / App. B.5 (docs/flowstate.md §7). Each removes one component and keeps
the other working."""

from __future__ import annotations

from typing import Any

from kit.trajectory import Trajectory
from flowstate.method import FlowState
from flowstate.state import Node, Relation, RELATIONS, StateType, normalise_type
from runners.api import Backbone, Decision, Observation, Request


class FlowStateNoPSA(FlowState):
    """w/o PSA: ISU kept; no Historical State Index and no progressive access. The Active State
    holds the full contents (with relations) of every ISU-generated historical state from the first
    step of each request. [harness choice] docs/flowstate.md §7: raw-result nodes are not shown (not
    ISU-generated); history stays immutable; state_focus and the PSA rules are dropped."""

    with_focus = False
    with_delta = True
    uses_b3 = False

    def _start(self, query_id: str, text: str) -> None:
        super()._start(query_id, text)
        for node in self.repo.historical_states():
            self.active.disclosed[node.state_id] = node


class FlowStateNoISU(FlowState):
    """w/o ISU: PSA kept; no model-written deltas. At each request end one state node is built
    from the final response by fixed rules and linked to that request's raw tool results; the
    index lists these nodes and PSA can disclose them and their raw results.

    [harness choice] switches (docs/flowstate.md §7): rule_node_type (judgements), rule_summary_chars (summary =
    final response cut to N characters), rule_relation (supports; edge node → raw result),
    carry_trajectory (the current query's trajectory is shown inside the request, as the memory
    systems' layout does; false = the Active State alone), repeat_query_in_history (with
    carry_trajectory: false = the current query shows once, in `<user_query>`, as Full Context and the
    memory baselines show it (kit/trajectory.py); true = also as the trajectory's `User query:` line,
    the earlier layout)."""

    with_focus = True
    with_delta = False
    uses_b3 = False

    def __init__(
        self,
        backbone: Backbone,
        *,
        rule_node_type: str = "judgements",
        rule_summary_chars: int = 200,
        rule_relation: str = "supports",
        carry_trajectory: bool = True,
        repeat_query_in_history: bool = False,
        **params: Any,
    ) -> None:
        super().__init__(backbone, **params)
        t = normalise_type(rule_node_type)
        if t is None:
            raise ValueError(
                f"rule_node_type: unknown state type {rule_node_type!r}; use one of "
                f"{', '.join(s.value for s in StateType)}"
            )
        if rule_relation not in RELATIONS:
            raise ValueError(f"rule_relation must be one of {', '.join(RELATIONS)}, got {rule_relation!r}")
        if rule_summary_chars < 1:
            raise ValueError("rule_summary_chars must be >= 1")
        self.rule_node_type = t
        self.rule_summary_chars = rule_summary_chars
        self.rule_relation = rule_relation
        self.carry_trajectory = carry_trajectory
        self.repeat_query_in_history = repeat_query_in_history

    def _start(self, query_id: str, text: str) -> None:
        super()._start(query_id, text)
        self.trajectory = Trajectory(repeat_current_query=self.repeat_query_in_history)
        self.trajectory.begin(Request(index=self.k - 1, request_id=query_id, text=text))

    def rule_node(self, final_response: str | None) -> Node:
        """The fixed-rule node of this request: id `response-<query_id>`, type/summary/relation per
        the switches above, value = the full final response, refs to every raw result of the query."""
        text = final_response if final_response is not None else ""
        summary = text[: self.rule_summary_chars] + ("…" if len(text) > self.rule_summary_chars else "")
        return Node(
            state_id=f"response-{self.query_id}",
            request=self.query_id,
            type=self.rule_node_type,
            summary=summary or "(no final response)",
            value={"final_response": final_response},
            refs=tuple(Relation(rel=self.rule_relation, state_id=rid) for rid in self.active.raw_pool),
        )

    def _persist(self, final_response: str | None, agent_message: str | None = None) -> list[str]:
        # the rule node already holds the final response (the agent's message in τ user turns)
        return self.repo.persist(self.query_id, self.query, [self.rule_node(final_response)], self.active.raw_pool)

    def trajectory_text(self) -> str | None:
        return self.trajectory.render()[0] if self.carry_trajectory else None

    def after_step(self, observation: Observation, decision: Decision) -> None:
        # As Full Context: the latest observation enters the history once the next action is taken.
        if observation.user_message is not None and self.user_turn_mode == "request":
            # the user message opened this request and is its user query already (docs/flowstate.md §5 τ mapping)
            observation = observation.model_copy(update={"user_message": None})
        self.trajectory.observe(observation)
        self.trajectory.act(decision, self.t)
