"""Shared context-builder machinery of the PoS-comparison baselines (docs/pos-baselines.md §0).

Every baseline runs Raw's loop (§0.1): the benchmark's system prompt and tools, the same reply
format, re-samples and budgets; the environment adds caps and the forced-submission directive to
its observations. Only the context differs. On the PoS benchmarks (`policy_prompt: release`) that
interface is the PoS release's (pos/release_react.py): the release's system prompt, `build_prompt`'s
user message with the baseline's context blocks as `Previous steps:`, the JSON action reply and the
release's repair turns; elsewhere (or `policy_prompt: project`, or without the release files) the
project's tagged ReAct blocks. The harness
delivers an action's observation with the *next* `step` call, so a turn is completed there.

Lookups (PACE `glimpse`, HiAgent `retrieve_subgoal`) are extra tools handled here, never sent
to the environment. [harness choice] Their result enters the *next* prompt; a reply with only
lookups is re-asked within the same step (one more policy call, no environment action), at most
`max_lookups_per_step` times — the harness loop counts steps, so a lookup cannot spend one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from kit.agent import SingleCallMethod
from baselines.pos_baselines.config import BaselineConfig, load_config
from baselines.pos_baselines.protocols import JsonReply
from kit.react import ReactProtocol
import pos.release_react as release_react
from kit import release_config
from runners.api import (
    Backbone,
    Decision,
    Message,
    Observation,
    Protocol,
    Request,
    Role,
    RequestOutcome,
    TaskView,
    ToolCall,
    ToolSpec,
)
from runners.upstream import TextSources
from kit.prompting import REACT_RULES, system_message, user_message
from runners.tokens import count_messages

NO_OBSERVATION = "(no observation yet)"
LATEST = "(its result is the latest observation)"


@dataclass
class Turn:
    """One executed step: the action and (once it arrives) its observation."""

    uid: int  # 1-based over the whole task (PACE chunk id)
    request: int  # Request.index
    step: int  # 1-based within the request
    action: str
    observation: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def action_text(decision: Decision, *, release: bool = False) -> str:
    """One line for a decision, in Full Context's trajectory wording (with `release`: each action
    as the release's trajectory holds it, a command string or `{"name", "arguments"}`)."""
    if decision.tool_calls and release:
        acts = [release_react.transition_action(c) for c in decision.tool_calls]
        return json.dumps(acts[0] if len(acts) == 1 else acts, ensure_ascii=False)
    if decision.tool_calls:
        calls = [{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls]
        return f"tool_calls {json.dumps(calls, ensure_ascii=False)}"
    if decision.message is not None:
        return f"assistant_message {json.dumps(decision.message, ensure_ascii=False)}"
    return "none"


def render_turn(turn: Turn, *, latest: bool = False) -> str:
    obs = LATEST if latest else (turn.observation if turn.observation is not None else "(none)")
    return f"Step {turn.uid} action: {turn.action}\nObservation: {obs or '(empty)'}"


class PosBaseline(SingleCallMethod):
    """Base of the four baselines: config, turn bookkeeping, request headers, lookups, overflow
    check and auxiliary JSON calls."""

    protocol: Protocol = ReactProtocol()
    config_cls: type[BaselineConfig] = BaselineConfig
    method_name = "pos_baseline"
    lookup_tool: ToolSpec | None = None
    log: dict[str, Any]  # the step log, reset by each baseline's step

    release_protocol_cls: type = release_react.PolicyProtocol
    release_system_rule: str | None = None
    """A baseline's own reply-key rule after the release's system prompt (the project's words)."""
    own_texts: tuple[str, ...] = ()
    """The baseline's memory-mechanism texts (compressor, summarizer, manager, auditor): not in the
    PoS release (docs/pos-baselines.md), the project's own, recorded as source `project`."""

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        self.base_cfg = load_config(self.config_cls, self.method_name, params)
        super().__init__(backbone, max_resamples=self.base_cfg.max_resamples)
        self.params = params
        self.sources = TextSources()
        self.raw: release_react.RawInterface | None = None

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: the release texts the policy may send on the PoS benchmarks."""
        cfg = load_config(cls.config_cls, cls.method_name, dict(params or {}))
        sources = TextSources()
        if cfg.request_settings == "release":
            release_config.record_raw(sources, kinds)
        if cfg.policy_prompt == "release":
            release_react.record_all(lambda kind: cfg.for_kind(kind).max_actions_per_turn, sources, kinds)
            release_react.record_repairs(sources)
            if cls.release_system_rule:
                sources.own(
                    f"{cls.method_name}.reply_rule",
                    "the baseline's own reply key, added to the release's JSON reply (not released)",
                )
        else:
            sources.own(
                "pos.release.interface",
                "policy_prompt=project: the project's tagged-block layout on the PoS benchmarks",
            )
        for key in cls.own_texts:
            sources.own(
                f"{cls.method_name}.{key}", "not in the PoS release (only Raw is released): the project's own text"
            )
        return {"text_sources": sources.as_manifest()}

    # ------------------------------------------------------------------ lifecycle
    async def begin_task(self, task: TaskView) -> None:
        await super().begin_task(task)
        self.cfg = self.base_cfg.for_kind(task.kind)
        if not hasattr(self, "project_protocol"):
            self.project_protocol = self.protocol
        texts = (
            release_react.raw_texts(task.kind, self.cfg.max_actions_per_turn, self.sources)
            if self.cfg.policy_prompt == "release"
            else None
        )
        self.raw = None if texts is None else release_react.RawInterface(texts, task, self.cfg.max_actions_per_turn)
        self.sampling: dict[str, Any] = (
            release_config.raw_sampling(task.kind, self.sources) if self.cfg.request_settings == "release" else {}
        )
        if self.raw is not None:
            self.protocol = protocol = self.release_protocol_cls()
            protocol.configure(task, self.cfg.max_actions_per_turn)
        else:
            self.protocol = self.project_protocol
        self.correction = release_react.correction if self.raw is not None else SingleCallMethod.correction  # type: ignore[assignment]  # per task: the release's or the project's re-ask text
        if self.lookup_tool is not None and any(t.name == self.lookup_tool.name for t in task.tools):
            raise ValueError(
                f"{self.method_name}: the benchmark already has a tool named '{self.lookup_tool.name}'; "
                f"disable the lookup for it via kind_overrides"
            )
        self.turns: list[Turn] = []
        self.headers: dict[int, dict[str, Any]] = {}
        self.uid = 0

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        if not self.cfg.carry_across_requests:
            self.turns = []
        self.headers[request.index] = {"text": request.text, "final": None}
        self.pending: Turn | None = None
        self.latest: Turn | None = None  # the turn whose observation is the latest one (shown apart)
        self.expansions: list[str] = []
        self.overflowed = False
        self.step_no = 0

    async def end_request(self, outcome: RequestOutcome) -> None:
        self.headers[self.request.index]["final"] = outcome.final_response

    # ------------------------------------------------------------------ turns
    def attach(self, observation: str) -> Turn | None:
        """Give the last action its observation; returns the completed turn."""
        done, self.pending = self.pending, None
        if done is not None:
            done.observation = observation
        self.latest = done
        return done

    def obs_text(self, observation: Observation) -> str:
        """The observation's text as the policy sees it (release: without the valid actions, which
        `Available actions:` lists; an empty reset observation is the request text, as PoS reads it)."""
        if self.raw is None:
            return observation.as_text()
        text = self.raw.observe(observation)
        return text if text.strip() or self.uid else self.request.text

    def record(self, decision: Decision, **extras: Any) -> Turn:
        self.step_no += 1
        self.uid += 1
        turn = Turn(
            uid=self.uid,
            request=self.request.index,
            step=self.step_no,
            action=action_text(decision, release=self.raw is not None),
            extras=extras,
        )
        self.turns.append(turn)
        self.pending = turn
        return turn

    def render_turns(self, turns: list[Turn], render: Callable[[Turn], str] | None = None) -> str:
        """Turns in order; a turn of an earlier request is preceded by that request's header
        and followed by its final response; the turn whose observation is the latest one points at
        the `latest_observation` block instead of repeating it."""
        lines: list[str] = []
        req = None
        for t in turns:
            if t.request != req:
                if req is not None and req != self.request.index:
                    lines.append(self._final_line(req))
                req = t.request
                if req != self.request.index:
                    lines.append(f"## Earlier request {req + 1}: {self.headers[req]['text']}")
                else:
                    lines.append("## Current request")
            lines.append(render(t) if render else render_turn(t, latest=t is self.latest))
        if req is not None and req != self.request.index:
            lines.append(self._final_line(req))
        return "\n".join(lines)

    def _final_line(self, req: int) -> str:
        final = self.headers[req]["final"]
        return f"Final response of request {req + 1}: {final if final is not None else '(none)'}"

    # ------------------------------------------------------------------ prompts
    def tools(self) -> list[ToolSpec]:
        return list(self.task.tools) + (
            [self.lookup_tool] if self.lookup_tool is not None and self.lookup_enabled() else []
        )

    def lookup_enabled(self) -> bool:
        return self.lookup_tool is not None

    def system(self) -> Message:
        """Raw's system message: ReAct rules, the benchmark's policy and tools (+ a lookup tool);
        with the release's interface, its system prompt (+ the baseline's reply rule)."""
        if self.raw is not None:
            return self.release_messages([("latest_observation", ""), ("user_query", "")])[0]
        return system_message(
            instructions=REACT_RULES,
            policy=self.task.policy,
            tools=self.tools(),
            output_protocol=self.protocol.description(),
        )

    def policy_messages(self, blocks: list[tuple[str, str]]) -> list[Message]:
        """System + one user message; lookup results go before the last two blocks
        (latest_observation, user_query), for this prompt only."""
        if self.expansions:
            blocks = [*blocks[:-2], ("requested_details", "\n\n".join(self.expansions)), *blocks[-2:]]
        if self.raw is not None:
            return self.release_messages(blocks)
        return [self.system(), user_message(blocks)]

    def release_messages(self, blocks: list[tuple[str, str]]) -> list[Message]:
        """The release's `build_prompt`: `Task:` = the request, `Current observation:` = the latest
        observation, `Previous steps:` = the baseline's other context blocks (tagged, in its own
        words), `Available actions:` + the lookup tool's schema when enabled."""
        (_, latest), _ = blocks[-2], blocks[-1]
        history = user_message(blocks[:-2])["content"] if blocks[:-2] else ""
        return self.raw.messages(  # type: ignore[union-attr]
            task_text=self.request.text,
            observation=latest,
            history=history,
            extra_tools=[self.lookup_tool] if self.lookup_tool is not None and self.lookup_enabled() else [],
            system_extra=self.release_system_rule,
        )

    # ------------------------------------------------------------------ the policy call
    async def decide(self, build: Callable[[], list[Message]]) -> Decision:
        """Policy call(s) of one step; lookups are resolved here (module docstring)."""
        self.log.setdefault("policy_calls", 0)
        if self.overflowed:
            self.log["context_overflow"] = True
            return Decision()
        for i in range(self.cfg.max_lookups_per_step + 1):
            msgs = build()
            self.expansions = []
            n = count_messages(msgs) if self.cfg.context_window_tokens else None
            if (
                n is not None and self.cfg.context_window_tokens and n > self.cfg.context_window_tokens
            ):  # §0.4: record, never truncate silently
                self.overflowed = True
                self.log.update(context_overflow=True, prompt_tokens=n)
                return Decision()
            parsed, _ = await self.ask(msgs, **self.sampling)
            self.log["policy_calls"] += 1
            self.log.setdefault("protocol_errors", []).extend(self._log.get("protocol_errors", []))
            if self._log.get("repairs"):
                self.log.setdefault("repairs", []).extend(self._log["repairs"])
            self.log["attempts"] = self.log.get("attempts", 0) + self._log.get("attempts", 0)
            if self._log.get("no_op"):
                self.log["no_op"] = True
            decision = parsed.decision
            lookups = [
                c for c in decision.tool_calls if self.lookup_tool is not None and c.name == self.lookup_tool.name
            ]
            if self.raw is not None:  # the release's action cap, on environment actions only
                capped, dropped = self.raw.cap(
                    decision.model_copy(update={"tool_calls": [c for c in decision.tool_calls if c not in lookups]})
                )
                if dropped:
                    self.log.setdefault("dropped_actions", []).extend(dropped)
                decision = capped.model_copy(update={"tool_calls": lookups + capped.tool_calls})
            if not lookups:
                return decision
            rest = decision.model_copy(update={"tool_calls": [c for c in decision.tool_calls if c not in lookups]})
            self.expansions = [self.resolve_lookup(c) for c in lookups]
            self.log.setdefault("lookups", []).extend(c.arguments for c in lookups)
            if not rest.is_empty or i == self.cfg.max_lookups_per_step:
                if rest.is_empty:
                    self.log["lookup_limit_reached"] = True
                return rest
        return Decision()  # pragma: no cover - the loop always returns

    def resolve_lookup(self, call: ToolCall) -> str:
        raise NotImplementedError

    # ------------------------------------------------------------------ auxiliary calls
    async def aux(
        self,
        messages: list[Message],
        protocol: JsonReply,
        *,
        role: Role,
        call: str,
        fallback: Callable[[], dict[str, Any]] | None = None,
    ) -> dict[str, Any] | None:
        """One auxiliary JSON call (§0.2) with bounded re-asks; None when no usable reply came."""
        protocol.fallback = fallback or protocol.minimal
        for attempt in range(self.cfg.aux_max_json_retries + 1):
            c = await self.backbone.complete(
                messages, role=role, protocol=protocol, attempt=attempt, **{**self.sampling, **self.cfg.aux_sampling}
            )
            parsed = protocol.parse(c.text)
            self.log.setdefault("protocol_errors", []).extend({"call": call, **e.model_dump()} for e in parsed.errors)
            if parsed.repairs:
                self.log.setdefault("repairs", []).extend({"call": call, **r} for r in parsed.repairs)
            if parsed.ok:
                return parsed.decision.extras["json"]
        return None

    def step_log(self) -> dict[str, Any]:
        return dict(getattr(self, "log", {}))


def aux_messages(instructions: str, protocol: JsonReply, blocks: list[tuple[str, str]]) -> list[Message]:
    """System (role instructions + reply format) and one user message of tagged blocks."""
    system = {
        "role": "system",
        "content": f"<instructions>\n{instructions.strip()}\n</instructions>\n\n"
        f"<output_protocol>\n{protocol.description()}\n</output_protocol>",
    }
    return [system, user_message(blocks)]
