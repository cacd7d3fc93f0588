"""The task side: requests, observations, the task view a method may see, the `Environment` that
holds the gold, and the `Method` that acts in it."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from pydantic import BaseModel, Field

from runners.api._backbone import Backbone, Message
from runners.api._decision import Decision, Protocol, ToolSpec
from runners.api._missing import Missing
from runners.api._roles import Role
from runners.api._views import StepSeries, StepView


class Request(BaseModel):
    """One request q_k of a task (a MemoryArena subtask; the single request of τ/ALFWorld)."""

    index: int = Field(description="0-based position in the task")
    request_id: str = Field(description="stable id, e.g. '<task_id>/q3'")
    text: str = Field(description="what the user asks; never contains gold labels")
    goal: str | None = Field(
        None,
        description=(
            "the task sentence alone when `text` also describes the starting situation (ALFWorld: room, then task); "
            "a method that keeps the goal apart (PoS goal.user_input) reads it"
        ),
    )
    actions: list[str] | None = Field(
        None,
        description=(
            "the actions valid at the start (ALFWorld admissible commands); the runner hands them to the first step "
            "as Observation.actions"
        ),
    )
    observation: str | None = Field(
        None,
        description=(
            "the first observation where the benchmark has its own (the PoS release's adapter: a fixed sentence, or "
            "ALFWorld's reset text); the runner hands it to the first step as Observation.note. None = the first "
            "observation is empty and methods read `text`"
        ),
    )


class ToolResult(BaseModel):
    call_id: str
    name: str
    content: str
    error: bool = False


class Observation(BaseModel):
    """O_{k,t}: tool results of the previous step and/or a (simulated) user's message."""

    tool_results: list[ToolResult] = Field(default_factory=list)
    user_message: str | None = None
    note: str | None = Field(None, description="environment text that is neither (e.g. ALFWorld feedback)")
    actions: list[str] | None = Field(
        None,
        description=(
            "the actions valid now (ALFWorld admissible commands, as upstream PoS's adapter passes them); "
            "not part of what was observed"
        ),
    )

    @property
    def is_empty(self) -> bool:
        """Nothing was observed (a list of valid actions alone is not an observation)."""
        return not self.tool_results and self.user_message is None and self.note is None

    def as_text(self, *, actions: bool = True) -> str:
        """The observation as one text; `actions=True` appends the valid actions as upstream PoS
        lists them (`Available actions:` + their JSON list)."""
        parts = [f"[{r.call_id}] {r.name} -> {'ERROR: ' if r.error else ''}{r.content}" for r in self.tool_results]
        if self.note:
            parts.append(self.note)
        if self.user_message is not None:
            parts.append(f"User: {self.user_message}")
        if actions and self.actions is not None:
            parts.append(f"Available actions: {actions_json(self.actions)}")
        return "\n".join(parts)


def actions_json(actions: list[str]) -> str:
    """Valid actions as upstream PoS's prompts show them (`json.dumps(actions, ensure_ascii=False)`)."""
    return json.dumps(actions, ensure_ascii=False)


TaskKinds = Mapping[str, str]
"""The task kinds a benchmark declares (`Benchmark.task_kinds`): each `TaskView.kind` value its
environments set → what such a task is. Method configs key their per-kind settings by these
names (`kind_overrides`)."""

_KINDS: dict[str, tuple[str, str]] = {}  # kind → (description, who declared it)


def register_task_kinds(kinds: TaskKinds, owner: str) -> None:
    """Declare task kinds (kind → description). A `Benchmark` subclass declares its `task_kinds`
    when it is defined; call this for kinds set anywhere else. A kind means one thing: the same
    kind declared again with another description is a ValueError naming both declarations."""
    for kind, description in kinds.items():
        had = _KINDS.setdefault(kind, (description, owner))
        if had[0] != description:
            raise ValueError(
                f"task kind '{kind}' is declared by {had[1]} as {had[0]!r} and by {owner} as {description!r}; "
                "a kind means one thing: give one of them another name"
            )


def task_kinds() -> dict[str, str]:
    """The task kinds declared so far in this process (kind → description): every benchmark
    class imported here declared its own (runners.prepare.known_task_kinds imports every
    configured benchmark first)."""
    return {kind: description for kind, (description, _) in _KINDS.items()}


Scores = dict[str, Any]
"""Task-level scores an environment returns from `score_task` (JSON-serialisable)."""


class TaskView(BaseModel):
    """What a method may know about a task up front (no gold)."""

    task_id: str
    benchmark: str
    kind: str = Field(
        "",
        description=(
            "the kind of task (Benchmark.task_kinds); methods map kinds to settings instead of matching benchmark names"
        ),
    )
    policy: str = Field("", description="the benchmark's task policy text (FlowState B.3 `policy` block)")
    memory_policy: str | None = Field(
        None,
        description=(
            "the policy for methods that store `initial_memory` (they get that context through memory instead); "
            "None = `policy`"
        ),
    )
    tools: list[ToolSpec] = Field(default_factory=list)
    step_budget: int | None = Field(
        None, description="steps allowed per request (the benchmark's budget), set by the runner"
    )
    workspace: str | None = Field(
        None,
        description=(
            "absolute path of the task's runtime workspace, where the environment has one (LOCA); PoS shows it as "
            "upstream's `Runtime workspace` line"
        ),
    )
    initial_memory: list[str] = Field(
        default_factory=list,
        description=(
            "chunks a memory method stores before the first request (MemoryArena formal: 'Initial result: Empty')"
        ),
    )

    def for_memory_method(self) -> "TaskView":
        """The view a method that stores `initial_memory` works with (its `memory_policy`)."""
        return self if self.memory_policy is None else self.model_copy(update={"policy": self.memory_policy})


class Reply(BaseModel):
    """The environment's answer to a decision."""

    observation: Observation = Field(default_factory=Observation)
    request_done: bool = False


class RequestOutcome(BaseModel):
    """End of request q_k. `memory_text` is what the benchmark says a memory baseline may store
    (MemoryArena §4 chunk rules); `final_response` the submitted answer."""

    request: Request
    final_response: str | None = None
    steps: int = 0
    truncated: bool = Field(False, description="step budget reached before a final response")
    success: bool | None = Field(
        None,
        description=(
            "the environment's authoritative success signal at the request's end (ALFWorld `won`), where it has one "
            "before scoring"
        ),
    )
    memory_text: str = ""
    memory_chunks: list[str] = Field(default_factory=list, description="extra chunks (e.g. shopping per-turn)")
    feedback: str | None = Field(None, description="feedback the benchmark shows every method (none by default)")
    final_observation: Observation = Field(
        default_factory=Observation,
        description=(
            "what the environment answered to the request's last decision (e.g. ALFWorld's feedback to the winning "
            "action); set by the runner when the environment leaves it empty"
        ),
    )


class Oracle(ABC):
    """Source of reference decisions for the scripted backbone during one episode (environments
    are oracles: `Environment.reference`). The episode hands it to the scripted backbone
    explicitly (`runners.episode.Episode`)."""

    @abstractmethod
    def reference(self, role: Role, messages: list[Message]) -> Decision | None: ...


class Environment(Oracle):
    """One task's environment: tools, simulated users, scoring. Holds the gold labels."""

    @abstractmethod
    def view(self) -> TaskView: ...

    @abstractmethod
    async def next_request(self) -> Request | None:
        """The next request, or None when the task is over."""

    @abstractmethod
    async def act(self, decision: Decision) -> Reply:
        """Execute tool calls or deliver the message; say whether the request is finished."""

    @abstractmethod
    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        """Close the current request (scoring it internally)."""

    @abstractmethod
    async def score_task(self) -> Scores:
        """Task-level scores (JSON-serialisable), e.g. {"subtask_correct": [1,0,1], "success": 0}."""

    def reference(self, role: Role, messages: list[Message]) -> Decision | None:
        """What a perfect participant would answer now (for the scripted backbone). Roles the
        environment hosts (judge, user_sim) answer too. None = no opinion."""
        return None

    def step_budget(self) -> int:
        return 30


class Method(ABC):
    """A memory/state method. One instance per episode. See module docstring for call order."""

    protocol: Protocol
    step_series: ClassVar[tuple[StepSeries, ...]] = ()
    """Numbers in `step_log()` the report and the plots draw over steps (runners/api/_views.py)."""
    step_views: ClassVar[tuple[StepView, ...]] = ()
    """Panels the report builds from `step_log()` / `request_log()` (a state graph, a table of
    per-step values, retrieved items)."""

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Facts for the cell's manifest (e.g. `text_sources`: where each model-facing text comes from),
        from the method's params alone. `kinds`: the task kinds of the cell's benchmark
        (`Benchmark.task_kinds`; None = not declared): record only the texts sent on those kinds."""
        return {}

    def __init__(self, backbone: Backbone, **params: Any) -> None:
        """Subclasses consume their own params and pass the rest up; whatever reaches this base
        class is unknown (a misspelled `method.params.*` key), so it is an error, not ignored."""
        if params:
            raise ValueError(
                f"{type(self).__name__}: unknown method params {sorted(params)}; check the spelling in "
                "conf/method/<name>.yaml or on the command line"
            )
        self.backbone = backbone

    async def begin_task(self, task: TaskView) -> None:
        self.task = task

    async def begin_request(self, request: Request) -> None:
        self.request = request

    @abstractmethod
    async def step(self, observation: Observation) -> Decision: ...

    async def end_request(self, outcome: RequestOutcome) -> None:
        return None

    async def end_task(self) -> None:
        """Release per-episode resources (always called, also after errors)."""
        return None

    @classmethod
    def missing(cls, params: dict[str, Any]) -> list[Missing]:
        """What this method, with `params` (its `method.params`), needs and cannot find here (an
        optional extra, a local model): checked for every cell before any work. Default: nothing."""
        return []

    def step_log(self) -> dict[str, Any]:
        """Method-specific record of the last step (state deltas, rejections, retrievals)."""
        return {}

    def request_log(self) -> dict[str, Any]:
        """Method-specific record of the last request boundary (read after `end_request`:
        what was persisted, stored in memory, extracted)."""
        return {}


@dataclass
class EpisodeScope:
    """What a backbone may know about the episode it serves, handed over explicitly by
    `Backbone.bind` (the scripted backbone answers from `oracle`, seeds its faults by `key` and
    reads `request_id` for its wrong-answer switch). The episode fills it in as it runs."""

    key: str = ""
    oracle: Oracle | None = None
    request_id: str = ""
