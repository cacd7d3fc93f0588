"""The response cache: re-running a finished sweep costs no model call (ARCHITECTURE "Response
cache").

One SQLite file in WAL mode, JSON payloads (never pickle). Key = sha256 of the canonical JSON of
(endpoint base_url, model, sampling incl. extra_body and tools, messages, trial, attempt, role,
and the run seed `runner.seed` when it is not 0): a different trial, a different run seed or a
deliberate re-sample (`attempt`) is a different key, so trials and seeded re-runs stay
independent samples (seed 0 keeps the key of caches written before the seed was part of it). Only successful completions are stored; errors are never cached. A hit is
returned with `cached=True` and the usage recorded at the time, so token accounting of a resumed
run stays honest (the episode record counts hits separately)."""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from runners.api import Backbone, Completion, Message, Protocol

log = logging.getLogger(__name__)


def cache_key(*, base_url: str, model: str, sampling: dict[str, Any], extra_body: dict[str, Any],
              messages: list[Message], tools: Any, trial: int, attempt: int, role: str, seed: int = 0) -> str:
    """sha256 hex of the canonical JSON of everything that determines a model answer."""
    payload = {
        "base_url": base_url.rstrip("/"), "model": model, "sampling": sampling, "extra_body": extra_body,
        "messages": messages, "tools": tools, "trial": trial, "attempt": attempt, "role": role,
    }
    if seed:  # runner.seed: another seed must draw fresh answers, not replay seed 0's
        payload["seed"] = seed
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """SQLite-backed map key → Completion JSON. Safe to share between the tasks and threads of
    one process (one connection behind a lock; every call is a single short statement)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, payload TEXT NOT NULL, created REAL NOT NULL)")
        except sqlite3.DatabaseError as e:
            raise RuntimeError(f"response cache {self.path} cannot be opened ({e}); delete the file to start an empty cache "
                               "or set runner.cache=false") from None

    @property
    def journal_mode(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def get(self, key: str) -> Completion | None:
        """The stored completion, or None (a miss). Unreadable rows count as misses; the next
        `put` for the key overwrites them."""
        with self._lock:
            try:
                row = self._db.execute("SELECT payload FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as e:
                log.warning("response cache %s: read failed (%s); treating as a miss", self.path, e)
                row = None
            found = None
            if row is not None:
                try:
                    found = Completion.model_validate_json(row[0])
                except (ValidationError, ValueError):
                    log.warning("response cache %s: corrupt row %s…; treating as a miss", self.path, key[:12])
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def put(self, key: str, completion: Completion) -> None:
        payload = completion.model_dump_json()
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO responses (key, payload, created) VALUES (?, ?, ?)", (key, payload, time.time()))
            except sqlite3.DatabaseError as e:  # a full disk must not fail the episode: the answer is still good
                log.warning("response cache %s: write failed (%s); answer not cached", self.path, e)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self)}

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedBackbone(Backbone):
    """Serves `inner`'s answers from `cache` for one trial. The inner backbone must expose
    `base_url`, `model`, `sampling` and `extra_body` (an OpenAI-compatible backbone); the scripted
    backbone is never cached."""

    def __init__(self, inner: Backbone, cache: ResponseCache, trial: int, seed: int = 0) -> None:
        missing = [a for a in ("base_url", "model", "sampling", "extra_body") if not hasattr(inner, a)]
        if missing:
            raise TypeError(f"CachedBackbone needs an endpoint backbone exposing base_url/model/sampling/extra_body; "
                            f"{type(inner).__name__} lacks {', '.join(missing)} (do not cache scripted backbones)")
        self.inner, self.cache, self.trial, self.seed = inner, cache, trial, seed
        self.name, self.model = inner.name, inner.model

    def key(self, messages: list[Message], *, role: str, attempt: int, sampling: dict[str, Any]) -> str:
        inner: Any = self.inner
        call = dict(sampling)
        tools = call.pop("tools", None)
        extra = {**inner.extra_body, **(call.pop("extra_body", None) or {})}
        return cache_key(base_url=inner.base_url, model=inner.model, sampling={**inner.sampling, **call}, extra_body=extra,
                         messages=messages, tools=tools, trial=self.trial, attempt=attempt, role=role, seed=self.seed)

    async def complete(self, messages: list[Message], *, role: str, protocol: Protocol | None = None,
                       attempt: int = 0, **sampling: Any) -> Completion:
        key = self.key(messages, role=role, attempt=attempt, sampling=sampling)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True, "retries": [], "latency_s": 0.0, "role": role})
        c = await self.inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)  # errors propagate, uncached
        if c.text.strip() or c.tool_calls:  # never cache an empty / null reply: a re-run must be able to repair it
            self.cache.put(key, c.model_copy(update={"cached": False, "retries": []}))
        return c

    async def aclose(self) -> None:
        return None  # the inner backbone and the cache are shared; their owner closes them
