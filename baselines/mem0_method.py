"""Mem0 through the open-source `mem0ai` library, pinned to 1.0.11 — the last release whose
`Memory.add` runs the paper's algorithm: LLM fact extraction, then one LLM ADD/UPDATE/DELETE/NONE
decision against the nearest stored memories (docs/baselines.md §4.1–4.2; Chhikara et al., 2025).

Fully offline (§4.4): the two LLM calls go through the harness backbone (role "memory", counted,
cached) via `HarnessLLM`, an `mem0.llms.base.LLMBase` subclass; embeddings come from the bundled
all-MiniLM-L6-v2 (mem0's "huggingface" provider on a local path); the vector store is local FAISS
with cosine distance; history is a per-episode SQLite file; telemetry is forced off
(MEM0_TELEMETRY=False) and MEM0_DIR points at a writable temporary directory, both set before
mem0 is first imported.

[harness choice] integration (§4.4): one Mem0 `user_id` per task; after each finished subtask the
chunk is `add`ed as one user message (`infer=True`), optionally followed by MemoryArena's fixed
assistant acknowledgement (`assistant_ack`); at each request start `search(prompt.lower(),
user_id=…, limit=100)` (1.0.11's default limit); each hit is injected as its memory text plus its
categories when present (MemoryArena adapter).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import importlib.metadata
import os
import tempfile
from typing import Any, Callable

from baselines.embedder import MINILM_DIMS, minilm_path
from kit import b3 as b3text
from baselines.memory import MemoryMethod
from runners.api import Backbone, Decision, Missing, Parsed, Protocol, ProtocolError, TaskView

PINNED_VERSION = "1.0.11"
MIN_FACTS_REPLY = '{"facts": [], "memory": []}'  # valid for both the extraction and the update call
MEM0_LLM_DEFAULTS = {"temperature": 0.1, "max_completion_tokens": 2000, "top_p": 0.1}  # mem0 BaseLlmConfig defaults


class Mem0JsonProtocol(Protocol):
    """Mem0's JSON replies (`{"facts": [...]}` then `{"memory": [...]}`); mem0 parses them itself."""

    name = "mem0_json"

    def description(self) -> str:
        return "A JSON object as the prompt asks."

    def parse(self, text: str) -> Parsed:
        import json

        errors: list[ProtocolError] = []
        try:
            json.loads(text)
        except (ValueError, TypeError, RecursionError) as e:
            errors.append(ProtocolError(kind="bad_json", detail=str(e)[:200]))
        return Parsed(decision=Decision(message=text if isinstance(text, str) else ""), errors=errors)

    def render(self, decision: Decision) -> str:
        return decision.message if decision.message else MIN_FACTS_REPLY


def mem0_version() -> str | None:
    try:
        return importlib.metadata.version("mem0ai")
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def import_mem0() -> tuple[Any, Any]:
    """Import mem0 offline-safe: telemetry off and MEM0_DIR set BEFORE the first import."""
    version = mem0_version()
    if version is None:
        raise ImportError(
            "method=mem0 needs the `mem0` extra: install a CPU torch first "
            "(`pip install torch==2.13.0`), then `pip install -e '.[mem0]'`"
        )
    if version != PINNED_VERSION:
        raise ImportError(
            f"method=mem0 runs the classic ADD/UPDATE/DELETE algorithm of mem0ai=={PINNED_VERSION}; "
            f"found {version} (2.x is ADD-only). Fix: `pip install mem0ai=={PINNED_VERSION}`"
        )
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="stateharness-mem0-"))
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import mem0.memory.main as main
    import mem0.memory.telemetry as telemetry
    from mem0.llms.base import LLMBase

    # If mem0 was imported earlier with telemetry on, switch it off here too (never phone home).
    telemetry.MEM0_TELEMETRY = False
    main.MEM0_TELEMETRY = False

    class HarnessLLM(LLMBase):
        """mem0 LLM whose calls go to the harness backbone (role "memory"). mem0 calls it from
        worker threads; each call is run on the episode's event loop, in the episode's context
        (scripted oracle, cache keys), and the first backbone failure is kept so the method can
        re-raise it even where mem0 swallows exceptions."""

        def __init__(
            self, backbone: Backbone, loop: asyncio.AbstractEventLoop, *, sampling: dict[str, Any], json_mode: bool
        ) -> None:
            super().__init__({"model": getattr(backbone, "model", "") or "harness"})
            self.backbone, self.loop, self.sampling, self.json_mode = backbone, loop, sampling, json_mode
            self.protocol = Mem0JsonProtocol()
            self.context: contextvars.Context | None = None
            self.failure: BaseException | None = None
            self.calls = 0

        def generate_response(
            self,
            messages: list[dict[str, Any]],
            response_format: Any = None,
            tools: Any = None,
            tool_choice: str = "auto",
            **kwargs: Any,
        ) -> Any:
            sampling = dict(self.sampling)
            if response_format and self.json_mode:
                sampling["response_format"] = response_format
            coro = self.backbone.complete(messages, role="memory", protocol=self.protocol, **sampling)
            ctx = (self.context or contextvars.copy_context()).copy()
            future = ctx.run(asyncio.run_coroutine_threadsafe, coro, self.loop)
            self.calls += 1
            try:
                return future.result().text
            except BaseException as e:  # noqa: BLE001 - kept and re-raised by the method
                self.failure = self.failure or e
                raise

    return main.Memory, HarnessLLM


def mem0_config(store_dir: str, *, collection: str, vector_store: str = "faiss") -> dict[str, Any]:
    """The offline configuration of docs/baselines.md §4.4 (the LLM entry is replaced by HarnessLLM
    after construction; its loopback URL is never contacted)."""
    vs = {
        "faiss": {
            "provider": "faiss",
            "config": {
                "collection_name": collection,
                "path": os.path.join(store_dir, "faiss"),
                "distance_strategy": "cosine",
                "embedding_model_dims": MINILM_DIMS,
            },
        },
        "qdrant": {
            "provider": "qdrant",
            "config": {
                "collection_name": collection,
                "path": os.path.join(store_dir, "qdrant"),
                "on_disk": True,
                "embedding_model_dims": MINILM_DIMS,
            },
        },
    }
    if vector_store not in vs:
        raise ValueError(f"mem0: vector_store must be one of {sorted(vs)}, got '{vector_store}'")
    return {
        "llm": {
            "provider": "openai",
            "config": {"model": "harness", "api_key": "offline-unused", "openai_base_url": "http://127.0.0.1:9/v1"},
        },
        "embedder": {
            "provider": "huggingface",
            "config": {"model": minilm_path(), "embedding_dims": MINILM_DIMS, "model_kwargs": {"device": "cpu"}},
        },
        "vector_store": vs[vector_store],
        "history_db_path": os.path.join(store_dir, "history.db"),
    }


def format_hit(hit: dict[str, Any]) -> str:
    """One search hit as MemoryArena's adapter injects it: the memory, plus categories if any."""
    text = str(hit.get("memory", ""))
    cats = hit.get("categories")
    return f"{text} (categories: {', '.join(map(str, cats))})" if cats else text


class Mem0Memory(MemoryMethod):
    """Memory-system baseline backed by mem0ai 1.0.11 (B.3 memory layout)."""

    @classmethod
    def notes(cls, params: dict[str, Any] | None = None, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Manifest facts: mem0's own prompts (fact extraction, memory update) come from the pinned
        package itself (`mem0.configs.prompts`), recorded with each text's sha256."""
        import hashlib

        entries: dict[str, Any] = {}
        version = mem0_version()
        try:
            import mem0.configs.prompts as prompts
        except ImportError as e:
            prompts, why = None, f"mem0ai is not installed ({e}); pip install mem0ai=={PINNED_VERSION}"
        for name in (
            "FACT_RETRIEVAL_PROMPT",
            "USER_MEMORY_EXTRACTION_PROMPT",
            "AGENT_MEMORY_EXTRACTION_PROMPT",
            "DEFAULT_UPDATE_MEMORY_PROMPT",
        ):
            text = getattr(prompts, name, None) if prompts is not None else None
            if isinstance(text, str):
                entries[f"mem0.{name}"] = {
                    "source": "package",
                    "package": "mem0ai",
                    "version": version,
                    "module": "mem0.configs.prompts",
                    "symbol": name,
                    "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
                }
            else:
                entries[f"mem0.{name}"] = {
                    "source": "unavailable",
                    "package": "mem0ai",
                    "symbol": name,
                    "reason": why if prompts is None else f"{name} not in mem0ai {version}",
                }
        return {"text_sources": b3text.manifest(cls.b3_template, entries), "mem0ai": version}

    @classmethod
    def missing(cls, params: dict[str, Any]) -> list[Missing]:
        from baselines.embedder import MINILM_FIX, minilm_missing
        from runners.api import Missing

        version = mem0_version()
        if version is None:
            return [
                Missing(
                    what=f"method mem0 needs mem0ai=={PINNED_VERSION} (the `mem0` extra), which is not installed",
                    fix=MINILM_FIX,
                )
            ]
        if version != PINNED_VERSION:
            return [
                Missing(
                    what=f"method mem0 runs the classic algorithm of mem0ai=={PINNED_VERSION}; found {version}",
                    fix=f"`pip install mem0ai=={PINNED_VERSION}`",
                )
            ]
        return minilm_missing("method mem0")

    def __init__(
        self,
        backbone: Backbone,
        *,
        version: str = PINNED_VERSION,
        limit: int = 100,
        infer: bool = True,
        assistant_ack: str | None = None,
        lowercase_query: bool = True,
        vector_store: str = "faiss",
        llm_sampling: dict[str, Any] | None = None,
        json_mode: bool = True,
        store_dir: str | None = None,
        **params: Any,
    ) -> None:
        super().__init__(backbone, **params)
        if version != PINNED_VERSION:
            raise ValueError(
                f"mem0.version '{version}' is not supported here; only the classic algorithm of "
                f"mem0ai=={PINNED_VERSION} is implemented (2.x is ADD-only, docs/baselines.md §4.3)"
            )
        if limit < 1:
            raise ValueError("mem0: limit must be >= 1")
        self.limit, self.infer, self.assistant_ack = limit, infer, assistant_ack
        self.lowercase_query, self.vector_store = lowercase_query, vector_store
        self.llm_sampling = dict(MEM0_LLM_DEFAULTS if llm_sampling is None else llm_sampling)
        self.json_mode = json_mode
        # One fresh directory per episode (FAISS index + history.db), under `store_dir` if given.
        self._tmp = tempfile.TemporaryDirectory(prefix="mem0-episode-", dir=store_dir)
        self.store_dir = self._tmp.name
        self.memory: Any = None
        self.llm: Any = None
        self.events: list[dict[str, Any]] = []  # every ADD/UPDATE/DELETE mem0 reported

    async def begin_task(self, task: TaskView) -> None:
        Memory, HarnessLLM = import_mem0()
        self.user_id = task.task_id or "task"
        cfg = mem0_config(self.store_dir, collection="harness", vector_store=self.vector_store)
        self.memory = await asyncio.to_thread(Memory.from_config, cfg)
        self.llm = HarnessLLM(
            self.backbone, asyncio.get_running_loop(), sampling=self.llm_sampling, json_mode=self.json_mode
        )
        self.memory.llm = self.llm
        await super().begin_task(task)

    async def end_task(self) -> None:
        """Drop this episode's vector store and history database."""
        self.memory = None
        self._tmp.cleanup()

    def memory_notes(self) -> dict[str, Any]:
        # §4.4: record the search limit used (MemoryArena's hosted default is unknown)
        return {"mem0ai": mem0_version(), "search_limit": self.limit, "events_so_far": len(self.events)}

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.llm.context = contextvars.copy_context()
        self.llm.failure = None
        result = await asyncio.to_thread(fn, *args, **kwargs)
        if self.llm.failure is not None:  # mem0 swallows some LLM errors; the harness must not
            raise self.llm.failure
        return result

    async def add_chunk(self, chunk: str) -> None:
        messages = [{"role": "user", "content": chunk}]
        if self.assistant_ack:
            messages.append({"role": "assistant", "content": self.assistant_ack})
        out = await self._call(self.memory.add, messages, user_id=self.user_id, infer=self.infer)
        self.events += [{"event": r.get("event"), "memory": r.get("memory")} for r in out.get("results", [])]

    async def retrieve(self, query: str) -> list[str]:
        q = query.lower() if self.lowercase_query else query
        out = await self._call(self.memory.search, q, user_id=self.user_id, limit=self.limit)
        # MemoryArena adapter: hits without memory text are not injected
        return [format_hit(h) for h in out.get("results", []) if h.get("memory")]
