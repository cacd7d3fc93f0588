"""The response cache: re-running a finished sweep costs no model call (ARCHITECTURE "Response
cache").

One SQLite file in WAL mode, JSON payloads (never pickle). Key = sha256 of the canonical JSON of
(endpoint base_url, model, sampling incl. extra_body and tools, messages, trial, attempt, role,
and the run seed `runner.seed` when it is not 0): a different trial, a different run seed or a
deliberate re-sample (`attempt`) is a different key, so trials and seeded re-runs stay
independent samples (seed 0 keeps the key of caches written before the seed was part of it).
The prompt's JSON bytes are the ones the episode recorder already made (`runners.records.wire`), spliced
into the key's JSON, so the prompt is not encoded again. Only successful completions are stored;
errors are never cached. A hit is returned with `cached=True` and the usage recorded at the
time, so token accounting of a resumed run stays honest (the episode record counts hits apart).

Cache I/O never blocks the event loop:
- writes go to one writer thread that commits in batches (one transaction per batch); a key
  that is written but not yet committed is served from memory;
- reads use a short SQLite busy timeout (WAL readers do not wait for writers);
- a locked or corrupt cache file degrades to misses with **one** warning that names the fix
  (delete the file, or `runner.cache=false`), instead of stalling every episode in flight.
A cache is a speed-up, not a record: losing its last batch in a crash costs only re-calls.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runners.api import Backbone, Completion, Message, Protocol, Role
from runners.backbones.forwarding import Forwarding
from runners.records.store import take_batch
from runners.records.wire import dumps_with, encoded

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 0.2  # busy timeout of the reader connection (runs on the event loop)
WRITE_TIMEOUT_S = 5.0  # busy timeout of the writer thread; a lock held longer disables writes
BATCH = 256  # most rows per transaction


def cache_key(
    *,
    base_url: str,
    model: str,
    sampling: dict[str, Any],
    extra_body: dict[str, Any],
    messages: list[Message],
    tools: Any,
    trial: int,
    attempt: int,
    role: str,
    seed: int = 0,
) -> str:
    """sha256 hex of the canonical JSON of everything that determines a model answer."""
    payload = {
        "base_url": base_url.rstrip("/"),
        "model": model,
        "sampling": sampling,
        "extra_body": extra_body,
        "tools": tools,
        "trial": trial,
        "attempt": attempt,
        "role": role,
    }
    if seed:  # runner.seed: another seed must draw fresh answers, not replay seed 0's
        payload["seed"] = seed
    return hashlib.sha256(dumps_with(payload, "messages", encoded(messages).raw)).hexdigest()


class ResponseCache:
    """SQLite-backed map key → Completion JSON, shared by the tasks and threads of one process.
    `get` runs on the caller's thread with a short busy timeout; `put` queues the row for the
    writer thread. `flush()` waits until every queued row is committed (or dropped)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.hits = 0
        self.misses = 0
        self.disabled: str | None = None  # why the cache degraded to misses, once it has
        self._lock = threading.Lock()  # guards the reader connection and _pending
        self._pending: dict[str, str] = {}  # written, not yet committed
        self._queue: "queue.Queue[tuple[str, str, float] | None]" = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._db: sqlite3.Connection | None = None
        self._writer: threading.Thread | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=READ_TIMEOUT_S, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses "
                "(key TEXT PRIMARY KEY, payload TEXT NOT NULL, created REAL NOT NULL)"
            )
        except (sqlite3.Error, OSError) as e:
            self._degrade(f"cannot be opened ({e})")
            return
        self._writer = threading.Thread(target=self._write_loop, name="response-cache-writer", daemon=True)
        self._writer.start()

    # ---------------------------------------------------------------------------- degradation
    def _degrade(self, why: str) -> None:
        """Switch to misses-only, warning once."""
        if self.disabled is not None:
            return
        self.disabled = why
        log.warning(
            "response cache %s %s: continuing without it (every call is a miss, nothing is cached). "
            "Fix: stop the other process holding it, delete the file to start an empty cache, "
            "or set runner.cache=false.",
            self.path,
            why,
        )

    @property
    def journal_mode(self) -> str:
        with self._lock:
            if self._db is None:
                return "unavailable"
            return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    # ---------------------------------------------------------------------------- read
    def get(self, key: str) -> Completion | None:
        """The stored completion, or None (a miss). Unreadable rows count as misses; the next
        `put` for the key overwrites them."""
        payload = None
        with self._lock:
            payload = self._pending.get(key)
            if payload is None and self.disabled is None and self._db is not None:
                try:
                    row = self._db.execute("SELECT payload FROM responses WHERE key = ?", (key,)).fetchone()
                    payload = row[0] if row else None
                except sqlite3.Error as e:
                    self._degrade(f"could not be read ({e})")
        found = None
        if payload is not None:
            try:
                found = Completion.model_validate_json(payload)
            except (ValidationError, ValueError):
                log.warning("response cache %s: corrupt row %s…; treating as a miss", self.path, key[:12])
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    # ---------------------------------------------------------------------------- write
    def put(self, key: str, completion: Completion) -> None:
        """Queue one row for the writer thread (returns at once)."""
        if self.disabled is not None or self._writer is None:
            return
        payload = completion.model_dump_json()
        with self._lock:
            self._pending[key] = payload
            self._idle.clear()
        self._queue.put((key, payload, time.time()))

    def _write_loop(self) -> None:
        db: sqlite3.Connection | None = None
        while True:
            item = self._queue.get()
            if item is None:
                break
            batch, stop = take_batch(self._queue, item, BATCH)
            if self.disabled is None:
                try:
                    if db is None:
                        db = sqlite3.connect(self.path, timeout=WRITE_TIMEOUT_S, isolation_level=None)
                        db.execute("PRAGMA synchronous=NORMAL")
                    db.execute("BEGIN IMMEDIATE")
                    db.executemany("INSERT OR REPLACE INTO responses (key, payload, created) VALUES (?, ?, ?)", batch)
                    db.execute("COMMIT")
                except (
                    sqlite3.Error,
                    OSError,
                ) as e:  # locked past the timeout, corrupt, disk full: the answers are still good
                    try:
                        if db is not None and db.in_transaction:
                            db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    self._degrade(f"could not be written ({e})")
            with self._lock:
                for key, payload, _ in batch:
                    if self._pending.get(key) == payload:
                        del self._pending[key]
                if not self._pending and self._queue.empty():
                    self._idle.set()
            if stop:
                break
        if db is not None:
            db.close()
        self._idle.set()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued row is committed or dropped; False on timeout."""
        return self._idle.wait(timeout)

    def __len__(self) -> int:
        self.flush(WRITE_TIMEOUT_S * 2)
        with self._lock:
            if self._db is None or self.disabled is not None:
                return 0
            try:
                return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            except sqlite3.Error:
                return 0

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self)}

    def close(self, timeout: float = 2 * WRITE_TIMEOUT_S) -> None:
        """Commit what is queued (bounded by `timeout`: a locked file cannot hold the sweep) and close."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout)
            self._writer = None
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class CachedBackbone(Forwarding):
    """Serves `inner`'s answers from `cache` for one trial (`read=False`: writes only, so a
    fresh run re-samples every call and its answers replace the cached ones). The inner backbone must expose
    `base_url`, `model`, `sampling` and `extra_body` (an OpenAI-compatible backbone); the scripted
    backbone is never cached."""

    def __init__(self, inner: Backbone, cache: ResponseCache, trial: int, seed: int = 0, read: bool = True) -> None:
        missing = [a for a in ("base_url", "model", "sampling", "extra_body") if not hasattr(inner, a)]
        if missing:
            raise TypeError(
                f"CachedBackbone needs an endpoint backbone exposing base_url/model/sampling/extra_body; "
                f"{type(inner).__name__} lacks {', '.join(missing)} (do not cache scripted backbones)"
            )
        super().__init__(inner)
        self.cache, self.trial, self.seed = cache, trial, seed
        self.read = (
            read  # False (runner.fresh=true): every call goes to the endpoint; its answer still replaces the cached one
        )

    def key(self, messages: list[Message], *, role: str, attempt: int, sampling: dict[str, Any]) -> str:
        inner: Any = self.inner
        call = dict(sampling)
        tools = call.pop("tools", None)
        extra = {**inner.extra_body, **(call.pop("extra_body", None) or {})}
        return cache_key(
            base_url=inner.base_url,
            model=inner.model,
            sampling={**inner.sampling, **call},
            extra_body=extra,
            messages=messages,
            tools=tools,
            trial=self.trial,
            attempt=attempt,
            role=role,
            seed=self.seed,
        )

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        messages = encoded(messages)  # no work when the recorder already encoded them
        key = self.key(messages, role=role, attempt=attempt, sampling=sampling)
        hit = self.cache.get(key) if self.read else None
        if hit is not None:
            return hit.model_copy(update={"cached": True, "retries": [], "latency_s": 0.0, "role": role})
        c = await super().complete(
            messages, role=role, protocol=protocol, attempt=attempt, **sampling
        )  # errors propagate, uncached
        if c.text.strip() or c.tool_calls:  # never cache an empty / null reply: a re-run must be able to repair it
            self.cache.put(key, c.model_copy(update={"cached": False, "retries": []}))
        return c
