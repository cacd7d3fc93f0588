"""Shared plumbing of the memory-system baselines (BM25, Mem0, ReasoningBank;
docs/baselines.md §0, FlowState App. B.3 "Memory system" layout).

MemoryArena's memory systems expose `add_chunk(chunk)` and a retrieval keyed by the current
subtask prompt. Here:
- `begin_task` stores every `TaskView.initial_memory` chunk;
- `begin_request` retrieves once, with the request text as the query;
- the agent prompt is B.3's Memory System template filled when App. B.3 is configured (kit/b3.py),
  otherwise the project's layout of it, marked [paraphrased] (docs/texts.md): system = instructions, policy, tools,
  ReAct protocol;
  user = `memory` (retrieved items), `trajectory_history` (the current query's trajectory only),
  `latest_observation`, `user_query`;
- `end_request` stores `RequestOutcome.memory_text` (plus `feedback` when the benchmark shows it
  to every method, [harness choice] switch `include_feedback`) and every `memory_chunks` item.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from kit.agent import SingleCallMethod
from kit.react import ReactProtocol
from kit.trajectory import Trajectory
from runners.api import Backbone, Decision, Message, Observation, Request, RequestOutcome, StepView, TaskView
from kit import b3 as b3text
from kit.prompting import REACT_RULES, block, system_message, tools_text, user_message

EMPTY_MEMORY = "None"  # upstream's `<memory_context>` reads None when nothing is retrieved
PREVIEW_CHARS = 160  # characters of each retrieved item kept in the step log
RETRIEVED_VIEW = StepView(
    kind="items", name="memory", title="Retrieved memory items", fields={"items": "memory.retrieved"}
)
"""The report's panel of what each step retrieved (the step log's `memory.retrieved` previews)."""


def memory_block_text(items: list[str]) -> str:
    """Retrieved items, one `<memory_item>` element each, or `None`. Upstream wraps each item as
    `<memory>`; inside the B.3 `memory` block that tag would nest in itself, so the items are
    renamed ([harness choice], content unchanged)."""
    if not items:
        return EMPTY_MEMORY
    return "\n".join(block("memory_item", item) for item in items)


def outcome_chunks(outcome: RequestOutcome, *, include_feedback: bool = True) -> list[str]:
    """Chunks a memory baseline stores when request q_k ends (MemoryArena add_chunk per finished
    subtask, plus per-turn extras the benchmark lists). Empty texts are skipped."""
    chunks: list[str] = []
    main = outcome.memory_text or ""
    if include_feedback and outcome.feedback:
        main = f"{main}\n## Feedback:\n{outcome.feedback}" if main else f"## Feedback:\n{outcome.feedback}"
    if main.strip():
        chunks.append(main)
    chunks += [c for c in outcome.memory_chunks if c and c.strip()]
    return chunks


class MemoryMethod(SingleCallMethod):
    """A ReAct agent with a retrieval memory. Subclasses implement `add_chunk` and `retrieve`."""

    protocol = ReactProtocol()
    step_views = (RETRIEVED_VIEW,)

    def __init__(
        self, backbone: Backbone, *, include_feedback: bool = True, repeat_query_in_history: bool = False, **params: Any
    ) -> None:
        super().__init__(backbone, **params)
        self.include_feedback = include_feedback
        self.trajectory = Trajectory(repeat_current_query=repeat_query_in_history)  # query shown once, in <user_query>
        self.retrieved: list[str] = []
        self.stored = 0  # chunks handed to add_chunk so far
        self.t = 0
        self._retrieval_log: dict[str, Any] | None = None
        self.b3 = b3text.load()[0]

    b3_template = "memory"

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: the source of the agent prompt template (App. B.3 or the project's layout)."""
        return {"text_sources": b3text.manifest(cls.b3_template)}

    # ------------------------------------------------------------------ store interface
    @abstractmethod
    async def add_chunk(self, chunk: str) -> None:
        """Store one chunk (may call the backbone with role "memory")."""

    @abstractmethod
    async def retrieve(self, query: str) -> list[str]:
        """Memory items for `query`, best first, each injected verbatim as one item."""

    async def remember(self, chunk: str) -> None:
        await self.add_chunk(chunk)
        self.stored += 1

    # ------------------------------------------------------------------ method hooks
    async def begin_task(self, task: TaskView) -> None:
        task = task.for_memory_method()  # e.g. travel: the base traveller comes through memory, as upstream
        await super().begin_task(task)
        for chunk in task.initial_memory:
            if chunk and chunk.strip():
                await self.remember(chunk)

    async def begin_request(self, request: Request) -> None:
        await super().begin_request(request)
        self.trajectory.begin(request)
        self.t = 0
        # Retrieval once per request start, query = the current subtask prompt (docs/baselines.md §0).
        self.retrieved = await self.retrieve(request.text) if request.text.strip() else []
        self._retrieval_log = {
            "query_chars": len(request.text),
            "stored_chunks": self.stored,
            "retrieved": [r[:PREVIEW_CHARS] for r in self.retrieved],
            **self.memory_notes(),
        }

    def memory_notes(self) -> dict[str, Any]:
        """Facts about the memory backend for the step log (library version, embedder deviation)."""
        return {}

    def messages(self, latest: str) -> list[Message]:
        history, _ = self.trajectory.render(current_only=True)
        if self.b3 is not None:
            return b3text.messages(
                self.b3,
                "memory",
                system={
                    "react_rules": REACT_RULES,
                    "task_policy": self.task.policy or "",
                    "available_tools": tools_text(self.task.tools),
                    "react_output_protocol": self.protocol.description(),
                },
                user={
                    "retrieved_memory": memory_block_text(self.retrieved),
                    "query_trajectory": history,
                    "observation": latest,
                    "query": self.request.text,
                },
            )
        return [
            system_message(
                instructions=REACT_RULES,
                policy=self.task.policy,
                tools=self.task.tools,
                output_protocol=self.protocol.description(),
            ),
            user_message(
                [
                    ("memory", memory_block_text(self.retrieved)),
                    ("trajectory_history", history),
                    ("latest_observation", latest),
                    ("user_query", self.request.text),
                ]
            ),
        ]

    async def step(self, observation: Observation) -> Decision:
        self.t += 1
        parsed, _ = await self.ask(self.messages(observation.as_text()))
        self.trajectory.observe(observation)
        self.trajectory.act(parsed.decision, self.t)
        if self._retrieval_log is not None:  # logged once, on the request's first step
            self._log["memory"] = self._retrieval_log
            self._retrieval_log = None
        return parsed.decision

    async def end_request(self, outcome: RequestOutcome) -> None:
        self.trajectory.end(outcome)
        for chunk in outcome_chunks(outcome, include_feedback=self.include_feedback):
            await self.remember(chunk)
