"""Full Context: a ReAct agent whose prompt carries the whole interaction history across
requests (FlowState §3.1, App. B.3 layout; docs/baselines.md §1). No truncation by default, as the
paper says "full"; `max_tokens` drops the oldest whole lines (MemoryArena's long-context
memory keeps the last 120,000 tokens) and records a truncation event. [harness choice,
docs/baselines.md §1] When the endpoint reports that the prompt exceeds its context window, the oldest
whole lines are dropped (to 3/4 of the history's tokens, repeatedly) and the call retried; the
cap then stays for the rest of the episode and every step records the event.
`on_context_overflow: error` makes the overflow an infra error instead.
With App. B.3 configured (kit/b3.py) the tagged-block messages are B.3's Full Context template
filled; otherwise the project's layout, marked [paraphrased] (docs/texts.md).
The current request's text is shown once, in `<user_query>` (B.3 does not say the history repeats
it); `repeat_query_in_history: true` also puts it in `<trajectory_history>` (the earlier layout).

On the PoS benchmarks (ALFWorld, LOCA, RCA-100, ClinDiag) this method is PoS's Raw Trajectory and,
with `policy_prompt: release` (default), speaks the release's ReAct interface (pos/release_react.py:
`react_system_prompt`, `build_prompt` with `Previous steps:` = `json.dumps(trajectory, indent=2)` of
`{thought, action, observation}`, the JSON action reply, the release's repair turns; RCA-100 up to
`release_actions_per_turn.rca` actions a turn) and, with `request_settings: release` (default), sends
the release's `configs/<benchmark>/raw.yaml` request settings (temperature, max_tokens, JSON mode,
no top_p; pos/release_config.py). `policy_prompt: project` (and any missing release
file) keeps the tagged-block layout above, recorded as paraphrased."""

from __future__ import annotations

from typing import Any

import pos.release_react as release_react
from kit import release_config
from kit.agent import SingleCallMethod
from kit.react import ReactProtocol
from kit.trajectory import Trajectory
from runners.api import (
    Backbone,
    BackboneError,
    Decision,
    Message,
    Observation,
    Protocol,
    Request,
    RequestOutcome,
    TaskView,
)
from runners.upstream import TextSources
from kit import b3 as b3text
from kit.prompting import REACT_RULES, system_message, tools_text, user_message
from runners.tokens import count

OVERFLOW_MODES = ("drop_oldest", "error")
POLICY_PROMPTS = ("release", "project")
RELEASE_ACTIONS_PER_TURN = {"rca": 3}
"""The release's `max_actions_per_turn` of Raw (configs/rca100/raw.yaml: 3; 1 elsewhere)."""


class FullContext(SingleCallMethod):
    protocol: Protocol = ReactProtocol()

    def __init__(
        self,
        backbone: Backbone,
        *,
        max_tokens: int | None = None,
        on_context_overflow: str = "drop_oldest",
        repeat_query_in_history: bool = False,
        policy_prompt: str = "release",
        release_actions_per_turn: dict[str, int] | None = None,
        request_settings: str = "release",
        **params: Any,
    ) -> None:
        super().__init__(backbone, **params)
        if on_context_overflow not in OVERFLOW_MODES:
            raise ValueError(
                f"on_context_overflow must be one of {', '.join(OVERFLOW_MODES)}, got {on_context_overflow!r}"
            )
        if policy_prompt not in POLICY_PROMPTS:
            raise ValueError(
                f"error: policy_prompt must be one of {', '.join(POLICY_PROMPTS)}, got {policy_prompt!r}. "
                f"Fix: set method.params.policy_prompt=release (the PoS release's interface) or project"
            )
        if request_settings not in POLICY_PROMPTS:
            raise ValueError(
                f"error: request_settings must be one of {', '.join(POLICY_PROMPTS)}, got {request_settings!r}. "
                f"Fix: set method.params.request_settings=release (the release's raw.yaml on the PoS benchmarks) "
                f"or project (the backbone config's sampling)"
            )
        self.policy_prompt = policy_prompt
        self.request_settings = request_settings
        self.sampling: dict[str, Any] = {}
        self.release_actions = {**RELEASE_ACTIONS_PER_TURN, **(release_actions_per_turn or {})}
        self.sources = TextSources()
        self.raw: release_react.RawInterface | None = None
        self.max_tokens = max_tokens
        self.on_context_overflow = on_context_overflow
        self.trajectory = Trajectory(repeat_current_query=repeat_query_in_history)  # docs/baselines.md §1
        self.t = 0
        self.b3 = b3text.load()[0]  # App. B.3's Full Context template for the tagged-block layout

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: App. B.3's Full Context template (the FlowState benchmarks) and the release
        texts Raw may send on the PoS benchmarks; with the cell's declared task kinds, only the side
        this benchmark uses (Full Context on MemoryArena sends no PoS text, on ALFWorld no B.3)."""
        params = params or {}
        sources = TextSources()
        on_pos = kinds is None or bool(set(kinds) & set(release_react.RELEASE_KINDS))
        off_pos = kinds is None or bool(set(kinds) - set(release_react.RELEASE_KINDS))
        if not on_pos:
            return {"text_sources": b3text.manifest("full_context")}
        if params.get("request_settings", "release") == "release":
            release_config.record_raw(sources, kinds)
        if params.get("policy_prompt", "release") == "release":
            per = {**RELEASE_ACTIONS_PER_TURN, **(params.get("release_actions_per_turn") or {})}
            release_react.record_all(lambda kind: per.get(kind, 1), sources, kinds)
            release_react.record_repairs(sources)
        else:
            sources.own(
                "pos.release.interface",
                "policy_prompt=project: the project's tagged-block layout on the PoS benchmarks",
            )
        if not off_pos:
            return {"text_sources": sources.as_manifest()}
        return {"text_sources": b3text.manifest("full_context", sources.entries)}

    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        texts = (
            release_react.raw_texts(task.kind, self.release_actions.get(task.kind, 1), self.sources)
            if self.policy_prompt == "release"
            else None
        )
        self.raw = (
            None if texts is None else release_react.RawInterface(texts, task, self.release_actions.get(task.kind, 1))
        )
        self.protocol = self.raw.protocol if self.raw is not None else FullContext.protocol
        self.sampling = (
            release_config.raw_sampling(task.kind, self.sources) if self.request_settings == "release" else {}
        )
        self.correction = release_react.correction if self.raw is not None else SingleCallMethod.correction  # type: ignore[assignment]  # per task: the release's or the project's re-ask text

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.trajectory.begin(request)
        self.t = 0

    def messages(self, latest: str) -> list[Message]:
        if self.raw is not None:  # the release's build_prompt (pos/release_react.py)
            self._truncated = False
            return self.raw.messages(task_text=self.request.text, observation=latest, history=self.raw.history())
        history, truncated = self.trajectory.render(max_tokens=self.max_tokens)
        self._truncated = truncated
        if self.b3 is not None:
            return b3text.messages(
                self.b3,
                "full_context",
                system={
                    "react_rules": REACT_RULES,
                    "task_policy": self.task.policy or "",
                    "available_tools": tools_text(self.task.tools),
                    "react_output_protocol": self.protocol.description(),
                },
                user={"full_trajectory": history, "observation": latest, "query": self.request.text},
            )
        return [
            system_message(
                instructions=REACT_RULES,
                policy=self.task.policy,
                tools=self.task.tools,
                output_protocol=self.protocol.description(),
            ),
            user_message(
                [("trajectory_history", history), ("latest_observation", latest), ("user_query", self.request.text)]
            ),
        ]

    async def step(self, observation: Observation) -> Decision:
        self.t += 1
        latest = self.raw.observe(observation) if self.raw is not None else observation.as_text()
        if self.raw is not None and not latest.strip() and not self.raw.trajectory:
            latest = self.request.text  # the reset observation arrives as the request text (as PoS reads it)
        overflows = 0
        while True:
            try:
                parsed, _ = await self.ask(self.messages(latest), **self.sampling)
                break
            except BackboneError as e:
                if not e.context_overflow or self.on_context_overflow != "drop_oldest":
                    raise
                history_tokens = count(self.trajectory.render(max_tokens=self.max_tokens)[0])
                if history_tokens == 0:
                    raise  # nothing left to drop: the request itself does not fit
                self.max_tokens = (history_tokens * 3) // 4
                overflows += 1
        if self.raw is not None:
            decision, dropped = self.raw.cap(parsed.decision)
            if dropped:
                self._log["dropped_actions"] = dropped
            self.raw.act(decision)
            if overflows:
                self._log["context_overflow"] = {"retries": overflows}
            return decision
        # The latest observation enters the history once the next action is taken.
        self.trajectory.observe(observation)
        self.trajectory.act(parsed.decision, self.t)
        if self._truncated:
            self._log["history_truncated"] = True
        if overflows:
            self._log["context_overflow"] = {"retries": overflows, "history_cap_tokens": self.max_tokens}
        return parsed.decision

    async def end_request(self, outcome: RequestOutcome) -> None:
        self.trajectory.end(outcome)
