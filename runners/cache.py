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
        self.redacted_hits = 0  # hits that held a configured secret, redacted on read
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

    def note_redacted(self) -> None:
        """A hit held a configured secret (redacted on read): warn once, naming the scrub."""
        self.redacted_hits += 1
        if self.redacted_hits == 1:
            log.warning(
                "response cache %s holds configured secrets in cached replies (written before they were redacted); "
                "they are replaced by *** as they are read. Fix: python -m runners.cache scrub %s",
                self.path,
                self.path,
            )

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
            redact = getattr(self.inner, "redact_completion", None)
            if redact is not None:  # a row written before today's redaction: the secret never leaves the cache
                hit, n = redact(hit)
                if n:
                    self.cache.note_redacted()
            return hit.model_copy(update={"cached": True, "retries": [], "latency_s": 0.0, "role": role})
        c = await super().complete(
            messages, role=role, protocol=protocol, attempt=attempt, **sampling
        )  # errors propagate, uncached
        if c.text.strip() or c.tool_calls:  # never cache an empty / null reply: a re-run must be able to repair it
            self.cache.put(key, c.model_copy(update={"cached": False, "retries": []}))
        return c


# -------------------------------------------------------------------------------- scrub (CLI)
def configured_secret_vars() -> list[str]:
    """The environment variables the shipped backbone configs read a key or an endpoint URL from
    (`api_key_env`, `base_url_env` in conf/backbone/*.yaml)."""
    import yaml

    from runners.config import CONF_DIR

    names: set[str] = set()
    for f in sorted((CONF_DIR / "backbone").glob("*.yaml")):
        try:
            raw = yaml.safe_load(f.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        names |= {raw[k] for k in ("api_key_env", "base_url_env") if isinstance(raw.get(k), str)}
    return sorted(names)


def secrets_from(values: list[str]) -> list[str]:
    """The secret parts of configured values: a key as it is; of a URL with `user:password@`, the
    password and `user:password` (a URL without credentials holds none)."""
    from runners.secrets import credential_secrets, split_url_credentials

    out: list[str] = []
    for v in values:
        if "://" in v:
            out += credential_secrets(None, split_url_credentials(v)[1])
        else:
            out += credential_secrets(v, None)
    return out


def cache_files(path: Path) -> list[Path]:
    """`path` itself (a cache file) or every `responses.sqlite` under it (an output folder)."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.sqlite") if p.is_file() and p.name == "responses.sqlite")


def scrub(path: Path, secrets: list[str]) -> tuple[int, int]:
    """Rewrite every row of the cache at `path` with the configured `secrets` (in every form
    `runners.secrets.secret_pattern` knows) replaced by `***`; (rows changed, rows in all). Old
    page contents are overwritten too (`secure_delete`, then VACUUM and a WAL checkpoint), so the
    secret is gone from the file, not only from the rows."""
    import json

    from runners.secrets import redact_value, secret_pattern

    pattern = secret_pattern(secrets)
    db = sqlite3.connect(path, timeout=WRITE_TIMEOUT_S, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete=ON")
        changed: list[tuple[str, str]] = []
        total = 0
        for key, payload in db.execute("SELECT key, payload FROM responses"):
            total += 1
            try:
                value = json.loads(payload)
            except ValueError:
                value = payload  # an unreadable row (a miss when read): still no secret may stay in it
            clean, n = redact_value(value, pattern)
            if n:
                changed.append((json.dumps(clean, ensure_ascii=False) if not isinstance(clean, str) else clean, key))
        if changed:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("UPDATE responses SET payload = ? WHERE key = ?", changed)
            db.execute("COMMIT")
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return len(changed), total


def main(argv: list[str] | None = None) -> int:
    """`python -m runners.cache scrub PATH`: redact configured secrets in an existing response cache."""
    import argparse
    import os
    import sys

    ap = argparse.ArgumentParser(
        prog="python -m runners.cache",
        description="Maintenance of the response cache.",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    sc = sub.add_parser(
        "scrub",
        help="replace configured secrets (keys, URL passwords, in every encoding) in cached replies by ***",
        description=(
            "Rewrite a response cache (a responses.sqlite file, or every one under an output folder) with the "
            "configured secrets redacted: the values of the variables the backbone configs name (api_key_env, "
            "base_url_env) that are set now, of every --env variable, and of the lines given on stdin with --stdin. "
            "Secrets are never passed as arguments (the command line is visible to other users)."
        ),
    )
    sc.add_argument("path", type=Path)
    sc.add_argument("--env", action="append", default=[], metavar="VAR", help="another variable holding a secret")
    sc.add_argument("--stdin", action="store_true", help="also read secrets from stdin, one per line")
    args = ap.parse_args(argv)
    names = sorted({*configured_secret_vars(), *args.env})
    used = [n for n in names if os.environ.get(n)]
    values = [os.environ[n] for n in used]
    if args.stdin:
        values += [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
    secrets = secrets_from(values)
    if not secrets:
        print(
            "error: no secret to scrub: none of " + ", ".join(names) + " is set (with a key or a URL with "
            "user:password). Fix: export the variable that held the key when the cache was written, pass "
            "--env VAR, or give the secrets on stdin with --stdin",
            file=sys.stderr,
        )
        return 2
    files = cache_files(args.path)
    if not files:
        print(
            f"error: no response cache at {args.path} (a responses.sqlite file or a folder holding one)",
            file=sys.stderr,
        )
        return 2
    source = ", ".join(used) + (" and stdin" if args.stdin else "") if used else "stdin"
    for f in files:
        try:
            n, total = scrub(f, secrets)
        except sqlite3.Error as e:
            print(f"error: {f}: {e}. Fix: stop the sweep using this cache and run the scrub again", file=sys.stderr)
            return 1
        print(f"{f}: {n} of {total} cached replies held a secret (from {source}); redacted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
