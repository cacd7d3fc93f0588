"""ReasoningBank as MemoryArena adapted it (`memory/memory_systems/reasoningbank.py`;
docs/baselines.md §3.2; Ouyang et al., arXiv 2509.25140).

`add_chunk(chunk)`:
1. judge call (role "memory", temperature 0.0, max 128 tokens): success ⇔ the lower-cased reply
   contains "success" (upstream quirk kept: "unsuccessful" matches too);
2. extraction call (role "memory", temperature 0.7, max 4096 tokens) with the success or the
   failure instruction, asking for ≤ 3 Markdown items (title / description / content); the reply
   is split on blank lines (`reply.strip().split("\n\n")`) into `memory_items`, all kept as
   upstream (`max_items` can cap them);
3. the record `{timestamp, task_id, memory_items, status}` is stored with the embedding of the
   chunk's first 4,096 characters (L2-normalised).
Retrieval: the instruction-wrapped query (cut to 4,096 characters, as every embedded text) is
embedded; cosine × 100; the top 5 records, each whole record dict injected as one memory item in
its Python `str()` form, as upstream's f-string renders it (upstream quirk, kept).

Label direction follows the paper (success → "why it worked", failure → "lessons"); the released
WebArena/SWE `induce_memory.py` invert it when deciding from reward (docs/baselines.md §3.1), we do not.
Offline deviation: embeddings come from local MiniLM instead of text-embedding-3-small.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import numpy as np

from baselines.embedder import make_embedder
from baselines.memory import MemoryMethod
from runners.api import Backbone, Decision, Missing, Parsed, Protocol, ProtocolError
from runners.upstream import TextSources, UpstreamFile, py_default, py_messages, py_string

JUDGE_SYSTEM = "You evaluate whether an AI agent accomplished its task."
JUDGE_USER = """Below is the record of an agent working on one task: the task, the steps it took and the answer it \
submitted.

{trajectory}

Did the agent accomplish the task? Reply with one word only: "success" or "fail"."""

ITEM_LAYOUT = """# Memory Item 1
## Title <a short name for the strategy or lesson>
## Description <one sentence saying when it applies>
## Content <one to three sentences of reasoning or practice that transfers to other tasks>"""

_EXTRACT_COMMON = (
    """You are a memory expert. From the agent trajectory you are given, write at most three memory items that will \
help an agent solve future, different tasks. The items must not overlap. Keep them general: leave out details that \
only fit this task (specific names, numbers, identifiers, exact strings or website details).
Write the items in this Markdown layout, with one blank line between items and no blank line inside an item:
"""
    + ITEM_LAYOUT
)

EXTRACT_SUCCESS = (
    _EXTRACT_COMMON
    + "\n\nThe trajectory below succeeded. Explain what made it work: the reasoning and the steps that others can "
    "reuse."
)
EXTRACT_FAILURE = (
    _EXTRACT_COMMON
    + "\n\nThe trajectory below failed. Reflect on why it failed and state the lessons or safeguards that would avoid "
    "the failure next time."
)
EXTRACT_USER = "Trajectory:\n{trajectory}"

RETRIEVAL_INSTRUCTION = "Given the current task, retrieve earlier tasks whose experience would help solve it"

RB_FILE = UpstreamFile("MemoryArena", "memory/memory_systems/reasoningbank.py")
RB_CLASS = "ReasoningBankMemorySystem"


def reasoningbank_texts(sources: TextSources | None = None) -> dict[str, str]:
    """The memory-agent prompts as MemoryArena's reasoningbank.py writes them (FlowState B.5 keeps
    the released prompts), read at run time: judge system/user, the success / failure extraction
    instructions (sent `.strip()`ped, as upstream), the extraction user template, the retrieval
    instruction. The constants above are our own wording, used (and recorded) only offline."""
    sources = sources if sources is not None else TextSources()
    judge_msgs = py_messages(RB_FILE, f"{RB_CLASS}._llm_judge_status")
    judge_system = judge_msgs[0].get("content") if judge_msgs and isinstance(judge_msgs[0], dict) else None
    success, failure = py_string(RB_FILE, "SUCCESSFUL_SI"), py_string(RB_FILE, "FAILED_SI")
    return {
        "judge_system": sources.use(
            "judge.system",
            RB_FILE,
            judge_system if isinstance(judge_system, str) else None,
            JUDGE_SYSTEM,
            symbol=f"{RB_CLASS}._llm_judge_status messages[0]",
        ),
        "judge_user": sources.fstring("judge.user", RB_FILE, f"{RB_CLASS}._llm_judge_status.prompt", JUDGE_USER),
        "extract_success": sources.use(
            "extract.success", RB_FILE, success.strip() if success else None, EXTRACT_SUCCESS, symbol="SUCCESSFUL_SI"
        ),
        "extract_failure": sources.use(
            "extract.failure", RB_FILE, failure.strip() if failure else None, EXTRACT_FAILURE, symbol="FAILED_SI"
        ),
        "extract_user": sources.fstring("extract.user", RB_FILE, f"{RB_CLASS}.add.generation_prompt", EXTRACT_USER),
        "retrieval_instruction": sources.use(
            "retrieval_instruction",
            RB_FILE,
            py_default(RB_FILE, f"{RB_CLASS}.__init__", "embed_instruction"),
            RETRIEVAL_INSTRUCTION,
            symbol=f"{RB_CLASS}.__init__(embed_instruction=)",
        ),
    }


EMBED_CHARS = 4096  # upstream `_get_openai_embedding(text, maxlen=4096)`: first 4,096 characters of any embedded text


class JudgeProtocol(Protocol):
    """The judge's one-word reply. Total parse; render for the scripted backbone."""

    name = "reasoningbank_judge"

    def description(self) -> str:
        return 'One word: "success" or "fail".'

    def parse(self, text: str) -> Parsed:
        text = text if isinstance(text, str) else ""
        errors = [] if text.strip() else [ProtocolError(kind="empty", detail="empty judge reply (read as fail)")]
        return Parsed(decision=Decision(message=text), blocks={"success": "success" in text.lower()}, errors=errors)

    def render(self, decision: Decision) -> str:
        # No reference opinion → the minimal valid verdict claims nothing: "fail".
        return decision.message if decision.message else "fail"


class ExtractProtocol(Protocol):
    """The extraction reply: Markdown items split on blank lines (upstream)."""

    name = "reasoningbank_extract"

    def description(self) -> str:
        return ITEM_LAYOUT

    def parse(self, text: str) -> Parsed:
        text = text if isinstance(text, str) else ""
        # upstream `_extract_memory_items`: `content.strip().split("\n\n")`, every piece kept
        items = text.strip().split("\n\n") if text.strip() else []
        errors = [] if items else [ProtocolError(kind="empty", detail="no memory items extracted")]
        return Parsed(decision=Decision(message=text), blocks={"items": items}, errors=errors)

    def render(self, decision: Decision) -> str:
        return decision.message or ""  # no reference opinion → no items (a valid, empty extraction)


class ReasoningBank(MemoryMethod):
    """Memory-system baseline: ReasoningBank records, embedding retrieval (B.3 memory layout)."""

    judge_protocol = JudgeProtocol()
    extract_protocol = ExtractProtocol()

    @classmethod
    def missing(cls, params: dict[str, Any]) -> list[Missing]:
        from baselines.embedder import minilm_missing

        return (
            minilm_missing("method reasoningbank (embedder: minilm)")
            if params.get("embedder", "minilm") == "minilm"
            else []
        )

    def __init__(
        self,
        backbone: Backbone,
        *,
        embedder: str = "minilm",
        top_k: int = 5,
        max_items: int | None = None,
        judge_sampling: dict[str, Any] | None = None,
        extract_sampling: dict[str, Any] | None = None,
        record_timestamps: bool = False,
        **params: Any,
    ) -> None:
        super().__init__(backbone, **params)
        if top_k < 0 or (max_items is not None and max_items < 0):
            raise ValueError("reasoningbank: top_k and max_items must be >= 0")
        self.embedder = make_embedder(embedder)
        self.top_k, self.max_items = top_k, max_items
        self.judge_sampling = (
            {"temperature": 0.0, "max_completion_tokens": 128} if judge_sampling is None else judge_sampling
        )
        self.extract_sampling = (
            {"temperature": 0.7, "max_completion_tokens": 4096} if extract_sampling is None else extract_sampling
        )
        self.record_timestamps = record_timestamps
        self.records: list[dict[str, Any]] = []
        self._vecs: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self.last_scores: list[float] = []
        self.texts = reasoningbank_texts()

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        sources = TextSources()
        reasoningbank_texts(sources)
        from kit import b3 as b3text

        return {"text_sources": b3text.manifest(cls.b3_template, sources.entries)}

    async def add_chunk(self, chunk: str) -> None:
        j = await self.backbone.complete(
            [
                {"role": "system", "content": self.texts["judge_system"]},
                {"role": "user", "content": self.texts["judge_user"].format(trajectory=chunk)},
            ],
            role="memory",
            protocol=self.judge_protocol,
            **self.judge_sampling,
        )
        success = bool(self.judge_protocol.parse(j.text).blocks["success"])
        system = (
            self.texts["extract_success"] if success else self.texts["extract_failure"]
        )  # paper and MemoryArena direction
        e = await self.backbone.complete(
            [
                {"role": "system", "content": system},
                {"role": "user", "content": self.texts["extract_user"].format(trajectory=chunk, content=chunk)},
            ],
            role="memory",
            protocol=self.extract_protocol,
            **self.extract_sampling,
        )
        items = self.extract_protocol.parse(e.text).blocks["items"]
        if self.max_items is not None:
            items = items[: self.max_items]
        self.add_record(chunk, items, success)

    def add_record(self, chunk: str, items: list[str], success: bool) -> dict[str, Any]:
        """Store one record and its chunk embedding (no model call)."""
        n = len(self.records)
        task = getattr(getattr(self, "task", None), "task_id", "")
        record = {
            # [harness choice] upstream uses wall time and uuid4; both would change every prompt
            # that injects the record and defeat the response cache, so the defaults are stable.
            "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%d")
            if self.record_timestamps
            else None,  # upstream: date only
            "task_id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"reasoningbank/{task}/{n}")),
            "memory_items": items,
            "status": "success" if success else "fail",
        }
        self.records.append(record)
        self._vecs.append(self.embedder.encode([chunk[:EMBED_CHARS]])[0])
        self._matrix = None
        return record

    def memory_notes(self) -> dict[str, Any]:
        # Offline deviation (§3.2): local embedder instead of text-embedding-3-small.
        return {"embedder": self.embedder.name, "scores": self.last_scores}

    def query_text(self, query: str) -> str:
        return f"Instruct: {self.texts['retrieval_instruction']}\nQuery: {query}"

    def search(self, query: str) -> list[dict[str, Any]]:
        """The top-k records for `query` by cosine × 100 (ties keep insertion order)."""
        if not self.records or self.top_k == 0:
            self.last_scores = []
            return []
        if self._matrix is None:
            self._matrix = np.vstack(self._vecs)
        q = self.embedder.encode([self.query_text(query)[:EMBED_CHARS]])[0]  # upstream cuts every embedded text
        scores = (self._matrix @ q) * 100.0
        order = np.argsort(-scores, kind="stable")[: self.top_k]
        self.last_scores = [round(float(scores[i]), 4) for i in order]
        return [self.records[i] for i in order]

    async def retrieve(self, query: str) -> list[str]:
        # upstream: f"<memory>{chunk}</memory>" with chunk the record dict → its Python str()
        return [str(r) for r in self.search(query)]
