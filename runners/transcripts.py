"""The transcript store: what every model call sent and what came back, per cell.

`results/<experiment>/<cell>/transcripts.sqlite` holds the *text*; `episodes.jsonl` holds the
*references*. Each `CallLog` in an episode record names

- `prompt`: the head of its message list (a hash chain, below) and `n_messages`;
- `reply` / `reasoning`: the raw completion text and the `reasoning_content` the endpoint sent;
- `tools`: the tool schemas sent, as one blob;

beside its inline finish reason, usage, retries, cache hit, latency, attempt and sampling.

Content addressing keeps this linear in the distinct text. Full Context resends its whole
history each step (as a growing message list, or as one user message whose history section
grows), so naive call records grow quadratically. A call's prompt is flattened into *pieces*: per
message a header (its JSON without the text content) followed by the content's lines. Every
distinct piece is stored once (`blobs`: blake2b-128 → zlib-compressed bytes). The piece list is
stored as a *run* (`nodes`): the longest prefix it shares with an earlier prompt of the episode
(`parent` node, `take` pieces of it) plus the hashes of its new pieces. A node's key is the hash
chain of its whole piece list (h_i = H(h_{i-1}, piece_i)), so identical prompts share a node, and a
prompt that repeats the previous one and adds text costs one row, 16 bytes per new piece and the
new text. The call record references one hash.

Durability, like `episodes.jsonl`: the cell writes an episode's blobs and nodes in one SQLite
transaction (synchronous=FULL, rollback journal) *before* appending its record line. A kill -9
mid-transaction is rolled back on the next open (SQLite's hot-journal recovery: the torn tail
repairs itself); a kill between the commit and the record line leaves blobs nothing references
yet, which the re-run of that episode reuses (same content, same hash). So every record line
that exists can be read back in full, and nothing a finished record points to is ever lost.
A database SQLite cannot open or check is moved aside (`transcripts.corrupt-<n>.sqlite`, never
deleted) and a fresh one started; the viewer then shows "transcript missing" for old records.

Records written before transcripts existed have `prompt = None`: "no transcript recorded".
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

if TYPE_CHECKING:  # pragma: no cover
    from runners.episode import CallLog, EpisodeRecord

TRANSCRIPTS = "transcripts.sqlite"
SCHEMA_VERSION = 1
RAW, ZLIB = 0, 1
# Sampling keys that could carry credentials are never recorded (the key lives in the backbone,
# never in per-call sampling; this is a guard against a method passing headers through).
_SECRET_KEYS = ("api_key", "authorization", "headers", "extra_headers", "password", "token_env", "api_key_env")


class TranscriptError(RuntimeError):
    pass


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def canonical(obj: Any) -> bytes:
    """The bytes a message (or tool list) is stored and hashed as: sorted keys, UTF-8, compact."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass")


def chain(parent: str, piece: str) -> str:
    return digest(f"{parent}:{piece}".encode())


def _b(h: str) -> bytes:
    """A hex hash as stored (16 bytes; the root parent "" is b"")."""
    return bytes.fromhex(h)


def clean_sampling(sampling: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sampling.items() if not any(s in k.lower() for s in _SECRET_KEYS)}


class Pending:
    """Blobs and nodes one call introduced, carried on its CallLog until the cell stores them."""

    __slots__ = ("blobs", "nodes")

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}
        self.nodes: dict[str, tuple[str, int, bytes]] = {}


HEADER, LINE = b"M", b"L"  # first byte of a prompt piece: message header / one line of its text


def pieces(messages: list[dict[str, Any]]) -> Iterator[bytes]:
    """The prompt as stored: per message a header piece, then its text content's lines."""
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            yield HEADER + canonical({"m": {k: v for k, v in m.items() if k != "content"}, "text": True})
            for line in content.splitlines(keepends=True):
                yield LINE + line.encode("utf-8", "surrogatepass")
        else:
            yield HEADER + canonical({"m": m})


def assemble(parts: list[bytes]) -> list[dict[str, Any]]:
    """Inverse of `pieces`."""
    out: list[dict[str, Any]] = []
    text: list[str] | None = None
    for p in parts:
        if p[:1] == HEADER:
            if text is not None:
                out[-1]["content"] = "".join(text)
            h = json.loads(p[1:])
            out.append(dict(h["m"]))
            text = [] if h.get("text") else None
        else:
            if text is None:
                raise TranscriptError("a text line without a text message header (damaged transcript)")
            text.append(p[1:].decode("utf-8", "surrogatepass"))
    if text is not None and out:
        out[-1]["content"] = "".join(text)
    return out


class Encoder:
    """Turns one episode's calls into references + pending blobs. One per recording backbone;
    it remembers what it already handed out so each blob travels with the first call that used it."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._runs: dict[str, tuple[str, int]] = {}  # prefix hash -> (node holding it, its length)

    def blob(self, data: bytes, pending: Pending) -> str:
        h = digest(data)
        if h not in self._seen:
            self._seen.add(h)
            pending.blobs[h] = data
        return h

    def text(self, text: str | None, pending: Pending) -> str | None:
        return None if text is None else self.blob(text.encode("utf-8", "surrogatepass"), pending)

    def messages(self, messages: list[dict[str, Any]], pending: Pending) -> str:
        """The node key of `messages` ("" for an empty list)."""
        hs = [self.blob(p, pending) for p in pieces(messages)]
        prefix = [""]
        for ph in hs:
            prefix.append(chain(prefix[-1], ph))
        head = prefix[-1]
        if not hs or self._runs.get(head, ("", -1))[0] == head:
            return head  # stored before as a node of its own
        keep = len(hs)
        while keep > 0 and prefix[keep] not in self._runs:
            keep -= 1
        parent, take = self._runs[prefix[keep]] if keep else ("", 0)
        pending.nodes[head] = (parent, take, b"".join(_b(h) for h in hs[keep:]))
        for j in range(keep + 1, len(hs) + 1):
            self._runs.setdefault(prefix[j], (head, j))
        self._runs[head] = (head, len(hs))
        return head


def episode_calls(rec: "EpisodeRecord") -> Iterator["CallLog"]:
    yield from rec.task_calls
    for rr in rec.requests:
        yield from rr.begin_calls
        for s in rr.steps:
            yield from s.calls
        yield from rr.end_calls
    yield from rec.unfinished_calls


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=5000")
    return db


class TranscriptStore:
    """The writer of one cell's transcripts (the cell's lock file already makes it the only one)."""

    def __init__(self, cell_dir: Path) -> None:
        self.path = Path(cell_dir) / TRANSCRIPTS
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # put() may be called from a writer thread
        self.moved_aside: Path | None = None

    def open(self) -> "TranscriptStore":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open_checked()
        except sqlite3.DatabaseError as e:
            n = 1
            while (aside := self.path.with_name(f"transcripts.corrupt-{n}.sqlite")).exists():
                n += 1
            self.path.rename(aside)
            for suffix in ("-journal",):
                j = self.path.with_name(self.path.name + suffix)
                if j.exists():
                    j.rename(aside.with_name(aside.name + suffix))
            self.moved_aside = aside
            import warnings

            warnings.warn(f"{self.path} could not be read ({e}); moved aside to {aside.name} and started a new one "
                          "(older episodes of this cell show 'transcript missing')", stacklevel=2)
            self._db = self._open_checked()
        return self

    def _open_checked(self) -> sqlite3.Connection:
        db = _connect(self.path)
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            db.executescript(
                "CREATE TABLE IF NOT EXISTS blobs (h BLOB PRIMARY KEY, codec INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID;"
                "CREATE TABLE IF NOT EXISTS nodes (h BLOB PRIMARY KEY, parent BLOB NOT NULL, take INTEGER NOT NULL, pieces BLOB NOT NULL) WITHOUT ROWID;"
                "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);"
            )
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def put(self, rec: "EpisodeRecord") -> int:
        """Store the blobs and nodes `rec`'s calls introduced, durably, in one transaction.
        Call before the record line is appended. Returns the number of new rows offered."""
        blobs: dict[str, bytes] = {}
        nodes: dict[str, tuple[str, int, bytes]] = {}
        for c in episode_calls(rec):
            p = c.pending_transcript()
            if p is not None:
                blobs.update(p.blobs)
                nodes.update(p.nodes)
        if not (blobs or nodes):
            return 0
        rows = []
        for h, data in blobs.items():
            z = zlib.compress(data, 6)
            rows.append((_b(h), ZLIB, z) if len(z) < len(data) else (_b(h), RAW, data))
        assert self._db is not None, "TranscriptStore.open() first"
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?, ?)", rows)
                self._db.executemany("INSERT OR IGNORE INTO nodes VALUES (?, ?, ?, ?)",
                                     [(_b(h), _b(p), take, new) for h, (p, take, new) in nodes.items()])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        for c in episode_calls(rec):
            c.clear_pending_transcript()
        return len(rows) + len(nodes)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class TranscriptReader:
    """Reads one cell's transcripts (read-only; safe while a sweep writes the cell)."""

    def __init__(self, cell_dir: Path) -> None:
        self.path = Path(cell_dir) / TRANSCRIPTS
        self._db: sqlite3.Connection | None = None
        self._blob_cache: dict[str, Any] = {}
        self._node_cache: dict[str, tuple[str, int, list[str]]] = {}
        self._piece_cache: dict[str, bytes] = {}

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            if not self.path.exists():
                raise TranscriptError(f"{self.path} does not exist (the cell was run without transcripts)")
            self._db = _connect(self.path, readonly=True)
        return self._db

    def blob_bytes(self, h: str) -> bytes:
        row = self._conn().execute("SELECT codec, data FROM blobs WHERE h = ?", (_b(h),)).fetchone()
        if row is None:
            raise TranscriptError(f"blob {h} is missing from {self.path}")
        codec, data = row
        return zlib.decompress(data) if codec == ZLIB else bytes(data)

    def text(self, h: str | None) -> str | None:
        if h is None:
            return None
        return self.blob_bytes(h).decode("utf-8", "surrogatepass")

    def blob_json(self, h: str | None) -> Any:
        if h is None:
            return None
        if h not in self._blob_cache:
            self._blob_cache[h] = json.loads(self.blob_bytes(h))
        return self._blob_cache[h]

    def node(self, h: str) -> tuple[str, int, list[str]]:
        """(parent, pieces taken from the parent, own new piece hashes) of a prompt node."""
        node = self._node_cache.get(h)
        if node is None:
            row = self._conn().execute("SELECT parent, take, pieces FROM nodes WHERE h = ?", (_b(h),)).fetchone()
            if row is None:
                raise TranscriptError(f"prompt node {h} is missing from {self.path}")
            new = bytes(row[2])
            node = self._node_cache[h] = (bytes(row[0]).hex(), int(row[1]), [new[i:i + 16].hex() for i in range(0, len(new), 16)])
        return node

    def piece_hashes(self, head: str | None) -> list[str]:
        """The piece hashes of a prompt node, first piece first."""
        path: list[tuple[int, list[str]]] = []
        h = head or ""
        while h:
            parent, take, new = self.node(h)
            path.append((take, new))
            h = parent
        out: list[str] = []
        for take, new in reversed(path):  # root first: keep `take` of what the parent chain built
            del out[take:]
            out += new
        return out

    def piece(self, h: str) -> bytes:
        data = self._piece_cache.get(h)
        if data is None:
            data = self._piece_cache[h] = self.blob_bytes(h)
        return data

    def messages(self, head: str | None) -> list[dict[str, Any]]:
        """The exact message list of a prompt chain head."""
        return assemble([self.piece(p) for p in self.piece_hashes(head)])

    def all_blobs(self) -> Iterable[tuple[str, bytes]]:
        """Every stored blob, decompressed (for audits such as the key-leak test)."""
        for h, codec, data in self._conn().execute("SELECT h, codec, data FROM blobs"):
            yield bytes(h).hex(), (zlib.decompress(data) if codec == ZLIB else bytes(data))

    def stats(self) -> dict[str, int]:
        db = self._conn()
        raw = sum(len(b) for _, b in self.all_blobs())
        stored = db.execute("SELECT COALESCE(SUM(LENGTH(data)), 0), COUNT(*) FROM blobs").fetchone()
        nodes = db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]
        return {"blobs": stored[1], "blob_bytes_raw": raw, "blob_bytes_stored": stored[0], "nodes": nodes,
                "file_bytes": self.path.stat().st_size}

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
