"""The transcript store: what every model call sent and what came back, per cell.

`results/<experiment>/<cell>/transcripts.sqlite` holds the *text*; `episodes.jsonl` holds the
*references*. Each `CallLog` in an episode record names

- `prompt`: the head of its message list (a hash chain, below) and `n_messages`;
- `reply` / `reasoning`: the raw completion text and the `reasoning_content` the endpoint sent;
- `tools`: the tool schemas sent, as one blob;

beside its inline finish reason, usage, retries, cache hit, latency, attempt and sampling.

Content addressing keeps this linear in the distinct text. Full Context resends its whole
history each step (as a growing message list, or as one user message whose history section
grows), so naive call records grow quadratically. Here:

- every distinct message is stored once per episode and, across episodes, once while the writer
  remembers it (blake2b-128 of its canonical JSON → bytes), so a system prompt shared by every call
  of every episode of the cell is one payload;
- a new message that repeats the same-position message of the caller's previous prompt with a
  changed middle (the growing history section) is stored as a *delta* of that message: the
  number of lines kept from its start and end, plus the new lines (delta chains are cut at
  `MAX_DELTA_DEPTH`, so a read applies a bounded number of deltas);
- the payloads an episode introduces (whole messages, deltas, replies) are stored together as one
  zstd frame, a *pack* (`packs`): text repeated across one episode's messages (a tool result that
  reappears in the next prompt's history, a request quoted in a tool call's arguments) compresses
  against itself; every pack after the cell's first is compressed with the end of that first
  pack's payloads as its dictionary (`meta.zdict`): the episodes of a cell share their framing
  (tags, instructions, tool schemas), so an episode's pack need not spell it out again;
- a message list is a *run* (a prompt node): the longest prefix it shares with an earlier prompt of
  the episode (`parent`, `take` messages of its start), the hashes of its new messages, and how
  many messages of the parent's end it repeats (`tail`). A node's key is the hash chain of its
  whole message list (h_i = H(h_{i-1}, message_i)), so identical prompts share one node;
- an episode's *piece index* row (`episode_pieces`) is its directory: keyed by a digest of its
  distinct prompt heads and texts (`piece_key`: the reader computes it from the record alone), it
  holds, in a compact binary form (`_encode_rows`), the sorted heads and texts themselves, every
  node its heads stand on (parent, take, new pieces, tail) and every blob its nodes, texts and
  delta bases need (delta base, pack, offset, length), blobs an earlier episode's pack holds
  included. The report and `runners.records.results` read an episode with this one lookup
  (`TranscriptReader.pieces`, `TranscriptReader.episode`).

Schema 3 (index-first, written now): per episode one pack row and one index row, and no row per
blob or node: an episode dirties a few pages at the end of the tables instead of ~60 leaf pages
of two B-trees keyed by random hashes, so the writer's cost per episode stays flat as the cell
grows, and the file is about half the size. The writer shares payloads across episodes through a
bounded map of the rows it wrote or read (`BLOB_MAP_ENTRIES`, least recently used forgotten first;
a payload whose row was forgotten, or that a resumed writer has not seen, is stored again in the
episode's pack). Where the index row cannot hold an episode (more than 65,535 of something, a
reference that is no hash) the episode is written as schema 2 (below); where an earlier episode
with the same heads and texts holds the key, what only the new one stored gets rows. Asked by
hash alone (`TranscriptReader.messages(head)`, `text(h)`), a reader finds a hash without a row by
scanning the index rows for one that names it (linear in the store: read by episode instead);
`all_blobs` and `stats` read the index rows as well as any rows.

Schema 2 (`TranscriptStore(rows=True)`, `HARNESS_TRANSCRIPT_ROWS=1`; still read): a `blobs` row per
payload (its pack, offset and length; `codec` PACKED or PACKED_DELTA) and a `nodes` row per prompt
node, beside an index row that does not name its heads and texts (`INDEX_VERSION` 1). Schema 1:
each blob its own row (raw, zlib, or a zlib delta), no packs. A store without the index table, an
episode without a row, or a row that does not hold what is asked is read by walking the rows,
with the same answer.

Durability, like `episodes.jsonl`: the cell writes an episode's pack and piece index row (and any
rows) in one SQLite transaction (synchronous=FULL) *before* appending its record line; group
commits put the episodes waiting meanwhile into one transaction. While the cell runs the store is
in write-ahead-log mode (`WAL`), checkpointed back into one rollback-journal file at close. A kill
-9 mid-transaction is rolled back on the next open (SQLite's recovery of the log or the hot
journal: the torn tail repairs itself, and read-only readers read the committed part meanwhile);
a kill between the commit and the record line leaves payloads nothing references yet, which the
re-run of that episode stores again (the same content under the same hashes). So every record
line that exists can be read back in full, and nothing a finished record points to is ever lost.
A database SQLite cannot open or check is moved aside (`transcripts.corrupt-<n>.sqlite`, never
deleted) and a fresh one started; the viewer then shows "transcript missing" for old records.

Records written before transcripts existed have `prompt = None`: "no transcript recorded".
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import sqlite3
import struct
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any, Container, Generic, Iterable, TypeVar

import orjson

from runners.records.store import shard_dirs, take_batch

from runners.records.schema import EpisodeRecord, episode_calls

TRANSCRIPTS = "transcripts.sqlite"
SCHEMA_VERSION = 3  # 3: index-first (2: packs, a row per blob and node; 1: each blob on its own; both still read)
# Sampling keys that could carry credentials are never recorded (the key lives in the backbone,
# never in per-call sampling; this is a guard against a method passing headers through).
_SECRET_KEYS = ("api_key", "authorization", "headers", "extra_headers", "password", "token_env", "api_key_env")


class TranscriptError(RuntimeError):
    pass


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def canonical(obj: Any) -> bytes:
    """The bytes a message (or tool list) is stored and hashed as: sorted keys, UTF-8, compact
    (`json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)`).
    orjson makes the same bytes ~10x faster for objects of str-keyed dicts, lists, str, int,
    bool and None; floats (orjson writes `1e-7` where json writes `1e-07`) and any other type go
    through the standard library, as do lone surrogates and ints beyond 64 bits (orjson refuses them)."""
    return _canonical_plain(obj) if _plain(obj) else _canonical_json(obj)


def _canonical_plain(obj: Any) -> bytes:
    """`canonical` of an object `_plain` accepts (a caller that knows it skips the walk)."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)
    except (TypeError, RecursionError):  # orjson.JSONEncodeError is a TypeError
        return _canonical_json(obj)


def _canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode(
        "utf-8", "surrogatepass"
    )


def _plain(obj: Any, depth: int = 0) -> bool:
    """Only str-keyed dicts, lists, str, int, bool and None (exact types), nested at most 64 deep."""
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:
        return True
    if depth > 64:
        return False
    if t is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in obj.items())
    if t is list:
        return all(_plain(v, depth + 1) for v in obj)
    return False


def _text_only(m: Any) -> dict[str, Any] | None:
    """A copy of a message whose keys and values are all `str` (`{"role": ..., "content": ...}`),
    else None. Equal such copies have equal canonical bytes, and the copy cannot change under the
    encoder when the caller edits its own message afterwards."""
    if type(m) is dict and all(type(k) is str and type(v) is str for k, v in m.items()):
        return dict(m)
    return None


def chain(parent: str, piece: str) -> str:
    return digest(f"{parent}:{piece}".encode())


def _b(h: str) -> bytes:
    """A hex hash as stored (16 bytes; the root parent "" is b"")."""
    return bytes.fromhex(h)


_KEY_KEPT: dict[str, bool] = {}  # sampling key -> whether it is recorded (the same few keys every call)


def _kept(k: str) -> bool:
    kept = _KEY_KEPT.get(k)
    if kept is None:
        kept = not any(s in k.lower() for s in _SECRET_KEYS)
        if len(_KEY_KEPT) < 4096:
            _KEY_KEPT[k] = kept
    return kept


def clean_sampling(sampling: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sampling.items() if _kept(k)}


class Pending:
    """Blobs and nodes one call introduced, carried on its CallLog until the cell stores them."""

    __slots__ = ("blobs", "nodes")

    def __init__(self) -> None:
        self.blobs: dict[str, bytes | tuple[str, bytes]] = {}  # hash -> bytes, or (base hash, delta)
        self.nodes: dict[str, tuple[str, int, bytes, int]] = {}


RECENT = 16  # message lists of this many recent prompts are kept to find a shared tail
MAX_DELTA_DEPTH = 32
RAW, ZLIB, DELTA = 0, 1, 2  # blob codecs: the payload in the row (schema 1, still read)
PACKED, PACKED_DELTA = 3, 4  # the payload (a whole blob, or a delta of `base`) is a slice of a pack
_REF = struct.Struct("<III")  # a packed row's data: pack id, offset, length
PACK_CACHE = 32  # decompressed packs a reader keeps
CACHE_ENTRIES = 4096  # parsed blobs and prompt nodes a reader keeps (then starts again)
READ_MMAP_BYTES = int(os.environ.get("HARNESS_TRANSCRIPT_MMAP_MB") or 0) << 20
"""How much of a store a reader maps (SQLite's `mmap_size`; `HARNESS_TRANSCRIPT_MMAP_MB`, default
0: none). The report reads each episode's pieces by hash, ~37 random B-tree lookups an episode;
through `pread` (SQLite's default) that is a system call and a page copy each. Mapped (64 MiB),
the view's system CPU fell by ~0.5 s at 10,000 episodes, but the clean file pages count in its
resident size (+60 MB at 10,000; at 100,000 episodes +53 MB, 338 against 286 MB, with no CPU
gained: scripts/perf/README.md), which the ≤ 300 MB goal at 100,000 episodes does not leave room for."""
WRITE_ROWS = os.environ.get("HARNESS_TRANSCRIPT_ROWS", "") not in ("", "0")
"""`HARNESS_TRANSCRIPT_ROWS=1`: `TranscriptStore`s write a row per blob and per node beside each
episode's index row (schema 2, as before the index-first store; slower and larger, read the same),
for comparisons and tests of the rows and their walk."""
ZLIB_DICT = 2  # pack codec (besides RAW, ZLIB): zlib with the dictionary pack's payloads as preset dictionary
ZDICT_BYTES = 32768  # zlib's window: the dictionary is the last this many bytes of the first pack
# Pack codecs written now: zstd (a cell's first pack) and zstd with the same dictionary as raw
# content. On 12-call episodes (scripts/perf/README.md) zstd level 3 makes packs 5% smaller than
# zlib level 6 did, for a sixth of the CPU (0.10 against 0.64 ms per episode's pack), and reads
# them back ~5x faster. Packs written with zlib (ZLIB, ZLIB_DICT) are still read.
ZSTD, ZSTD_DICT = 5, 6
PACK_LEVEL = 3


def _zstd_dict(data: bytes) -> Any:
    import zstandard

    return zstandard.ZstdCompressionDict(data, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


def _unpack_plain(codec: int, stored: bytes) -> bytes:
    """A pack stored without a dictionary (RAW, ZLIB, ZSTD) as its payloads."""
    if codec == ZSTD:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(stored)
    return zlib.decompress(stored) if codec == ZLIB else bytes(stored)


def lines(text: str) -> list[str]:
    """`text` cut after each "\\n" (only: the viewer's JavaScript splits the same way)."""
    parts = text.split("\n")
    out = [x + "\n" for x in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


_NEAR = 64  # characters compared first: most texts that differ at all differ within them (a new text)


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share, by C-level comparisons: one when one is the
    start of the other (a message that grew); else a binary search, inside the first `_NEAR`
    characters when they already differ (a new text), each step comparing only the part not yet
    known to be shared (slices that halve: ~len(b) characters copied in all, not len(b) per step)."""
    n = min(len(a), len(b))
    if a.startswith(b) if n == len(b) else b.startswith(a):
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo]; the answer is in [lo, hi]
    if hi > _NEAR and not a.startswith(b[:_NEAR]):
        hi = _NEAR - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str) -> int:
    """How many trailing characters `a` and `b` share (as `_common_prefix`, from the end)."""
    la, lb = len(a), len(b)
    n = min(la, lb)
    if a.endswith(b) if n == lb else b.endswith(a):
        return n
    lo, hi = 0, n - 1
    if hi > _NEAR and not a.endswith(b[lb - _NEAR :]):
        hi = _NEAR - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.endswith(b[lb - mid : lb - lo], 0, la - lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_delta(a: str, b: str) -> tuple[int, int, str]:
    """(p, s, x): `b` is the first p lines of `a`, then the text x, then the last s lines of `a`,
    with p and then s as large as they go (lines as `lines` cuts them, the two runs of lines never
    overlapping). Found on the characters (common prefix and suffix, then the line ends inside
    them) instead of splitting both texts into lines: the same answer as comparing `lines(a)` and
    `lines(b)` element by element (tests/runners/test_transcripts.py checks it on random texts)."""
    if a == b:
        return a.count("\n") + (1 if a and not a.endswith("\n") else 0), 0, ""
    cut = a.rfind("\n", 0, _common_prefix(a, b)) + 1  # after the last line end both share
    pre = a.count("\n", 0, cut)
    ar, br = a[cut:], b[cut:]
    n = _common_suffix(ar, br)
    if not n:
        return pre, 0, br
    sa, sb = len(ar) - n, len(br) - n  # where the shared end starts in each
    suf = ar.count("\n", sa, len(ar) - 1)  # lines that start inside the shared end (after a line end there)
    if (sa == 0 or ar[sa - 1] == "\n") and (sb == 0 or br[sb - 1] == "\n"):
        suf, keep = suf + 1, n  # the shared end starts a line in both
    else:
        keep = len(ar) - (ar.find("\n", sa, len(ar) - 1) + 1) if suf else 0
    return pre, suf, br[: len(br) - keep]


def make_delta(base: dict[str, Any], new: dict[str, Any], text: bool = False) -> bytes | None:
    """`new` as lines kept from `base`'s start and end plus new lines, or None when not worth it.
    `text`: `new` holds only `str` keys and values (`_text_only`), so the delta is plain JSON and
    `canonical`'s walk is skipped (the same bytes)."""
    a, b = base.get("content"), new.get("content")
    if not isinstance(a, str) or not isinstance(b, str):
        return None
    pre, suf, middle = line_delta(a, b)
    if len(middle) * 2 > len(b):
        return None  # mostly new text: store it whole
    delta = {"m": {k: v for k, v in new.items() if k != "content"}, "p": pre, "s": suf, "x": middle}
    return _canonical_plain(delta) if text else canonical(delta)


def _json(data: bytes) -> Any:
    """`json.loads`, by orjson where it can (the same value, ~3x faster); lone surrogates and ints
    beyond 64 bits by the standard library."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def apply_delta(base: dict[str, Any], delta: bytes) -> dict[str, Any]:
    return _applied(base, json.loads(delta))


def _applied(base: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
    """`apply_delta` of a delta already parsed."""
    old = lines(str(base.get("content") or ""))
    tail = old[len(old) - d["s"] :] if d["s"] else []
    return {**d["m"], "content": "".join(old[: d["p"]]) + d["x"] + "".join(tail)}


def _rebuilt(stored: dict[str, tuple[str | None, bytes]], h: str) -> bytes:
    """Blob `h`'s bytes from stored payloads (hash → (delta base or None, payload)), as
    `TranscriptReader.blob_bytes` rebuilds them."""
    deltas: list[bytes] = []
    while True:
        base, payload = stored[h]
        if base is None:
            break
        deltas.append(payload)
        h = base
    if not deltas:
        return payload
    msg = json.loads(payload)
    for delta in reversed(deltas):
        msg = apply_delta(msg, delta)
    return canonical(msg)


class Encoder:
    """Turns one episode's calls into references + pending blobs. One per recording backbone;
    it remembers what it already handed out so each blob travels with the first call that used it."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._runs: dict[str, tuple[str, int]] = {}  # prefix hash -> (node holding it, its length)
        self._recent: dict[str, list[str]] = {}  # message hashes of the last RECENT nodes (for the shared tail)
        # role -> previous prompt (delta bases): (hash, message, whether it is the encoder's own copy)
        self._last: dict[str, list[tuple[str, dict[str, Any], bool]]] = {}
        self._depth: dict[str, int] = {}  # delta chain length of each delta-stored message
        self._prefix: dict[str, list[str]] = {}  # role -> the prefix chain of its previous prompt

    def blob(self, data: bytes, pending: Pending) -> str:
        h = digest(data)
        if h not in self._seen:
            self._seen.add(h)
            pending.blobs[h] = data
        return h

    def text(self, text: str | None, pending: Pending) -> str | None:
        return None if text is None else self.blob(text.encode("utf-8", "surrogatepass"), pending)

    def message(
        self, m: dict[str, Any], base: tuple[str, dict[str, Any], bool] | None, pending: Pending, text: bool = False
    ) -> str:
        """The hash of message `m` (its blob pending when new: whole, or a delta of `base`).
        `text`: `m` is known to hold only `str` keys and values (`_text_only`), so `canonical`'s walk is skipped."""
        data = _canonical_plain(m) if text else canonical(m)
        h = digest(data)
        if h in self._seen:
            return h
        self._seen.add(h)
        if base is not None and m.get("role") == base[1].get("role") and self._depth.get(base[0], 0) < MAX_DELTA_DEPTH:
            delta = make_delta(base[1], m, text)
            if delta is not None:
                pending.blobs[h] = (base[0], delta)
                self._depth[h] = self._depth.get(base[0], 0) + 1
                return h
        pending.blobs[h] = data
        return h

    def messages(self, messages: list[dict[str, Any]], pending: Pending, role: str = "") -> str:
        """The node key of `messages` ("" for an empty list)."""
        prev = self._last.get(role) or []
        hs: list[str] = []
        last: list[tuple[str, dict[str, Any], bool]] = []
        same = 0  # how many leading messages are those of the last prompt (their prefix chain is known)
        for i, m in enumerate(messages):
            base = prev[i] if i < len(prev) else None
            if base is not None and base[2] and type(m) is dict and m == base[1]:
                # the same text message at the same place as last time (a conversation's earlier turns):
                # equal to the encoder's own text-only copy, so the same canonical bytes, hashed then
                hs.append(base[0])
                last.append(base)
                if same == i:
                    same += 1
                continue
            snap = _text_only(m)
            h = self.message(m, base, pending, snap is not None)
            hs.append(h)
            # the encoder's own copy: a caller that edits its message afterwards changes no delta base
            last.append((h, snap, True) if snap is not None else (h, dict(m) if type(m) is dict else m, False))
        self._last[role] = last
        known = self._prefix.get(role)
        prefix = known[: same + 1] if known is not None and same else [""]
        for mh in hs[len(prefix) - 1 :]:
            prefix.append(chain(prefix[-1], mh))
        self._prefix[role] = prefix
        head = prefix[-1]
        if not hs or self._runs.get(head, ("", -1))[0] == head:
            return head  # stored before as a node of its own
        keep = len(hs)
        while keep > 0 and prefix[keep] not in self._runs:
            keep -= 1
        parent, take = self._runs[prefix[keep]] if keep else ("", 0)
        tail = 0
        before = self._recent.get(parent)
        if before is not None:  # also share the end (a prompt that changed in the middle)
            while tail < min(len(before) - take, len(hs) - keep) and before[-1 - tail] == hs[-1 - tail]:
                tail += 1
        pending.nodes[head] = (parent, take, bytes.fromhex("".join(hs[keep : len(hs) - tail])), tail)  # each `_b(h)`
        for j in range(keep + 1, len(hs) + 1):
            self._runs.setdefault(prefix[j], (head, j))
        self._runs[head] = (head, len(hs))
        self._recent[head] = hs
        while len(self._recent) > RECENT:
            del self._recent[next(iter(self._recent))]
        return head


_Refs = tuple[list[str], list[str]]  # an episode's distinct prompt heads and texts, each sorted
_NodeRow = tuple[bytes, int, bytes, int]  # parent, take, new piece hashes, tail
_BlobRow = tuple[bytes, int, int, int]  # delta base (b"": a whole blob), pack id, offset, length
INDEX_VERSION = 1  # a row beside the blob and node rows (schema 2; `TranscriptStore(rows=True)`)
_IDX_HEAD = struct.Struct("<BB4sHHHHH")  # version, widths, key check, extra hashes, nodes, blobs, packs, node pieces
INDEX_NAMED = 2  # a row that is the episode's directory (schema 3): it also names its heads and texts
_IDX_HEAD2 = struct.Struct("<BB4sHHHHHH")  # version, widths, key check, heads, texts, nodes, blobs, packs, node pieces
BLOB_MAP_ENTRIES = 16384
"""How many blob rows (hash → delta base, pack, offset, length) the writer keeps in memory to store a
payload that many episodes share (a system prompt, a tool list) once: the least recently used is
forgotten first (`_Recent`), and a payload whose row was forgotten is stored again in the episode's
pack (a few duplicate bytes, read the same). With the node rows, at most ~4.7 MB (tracemalloc), whatever
the number of episodes: ~200 episodes of 12 calls fill it, and a payload every episode uses stays."""
NODE_MAP_ENTRIES = 2048  # prompt node rows the writer keeps likewise (an episode's own nodes travel with it)


def piece_key(heads: list[str], texts: list[str]) -> bytes:
    """The key of an episode's piece index row: a digest of what the report asks `pieces` for,
    its distinct prompt heads and its distinct texts (replies, reasoning, tool lists, native tool
    calls), each sorted, so the reader computes it from the record alone."""
    return hashlib.blake2b(f"{','.join(heads)};{','.join(texts)}".encode(), digest_size=16).digest()


def _select(db: sqlite3.Connection, sql: str, keys: list[bytes], row: Any = None) -> list[Any]:
    """`sql` (with `IN ({})`) for `keys`, in batches under SQLite's variable limit; each row
    through `row` when given."""
    out: list[Any] = []
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        rows = db.execute(sql.format(",".join("?" * len(part))), part).fetchall()
        out += rows if row is None else [row(*r) for r in rows]
    return out


def _blob_row(h: bytes, codec: int, base: bytes, data: bytes) -> tuple[bytes, _BlobRow | None]:
    """A blobs row as the piece index keeps it: (hash, (base, pack, offset, length)), or
    (hash, None) for a row not in a pack (schema 1)."""
    if codec == PACKED or codec == PACKED_DELTA:
        return bytes(h), (bytes(base) if codec == PACKED_DELTA else b"", *_REF.unpack(data))
    return bytes(h), None


def _closure(want: set[bytes], rows: dict[bytes, Any], fetch: Any) -> dict[bytes, Any] | None:
    """The rows `want` names and every row they stand on (a row's first field: a node's parent, a
    blob's delta base), level by level: rows already in `rows` (what the transaction wrote or read)
    are not asked for again, the others are fetched (`fetch(hashes)` → (hash, row) pairs) into it.
    None when one is missing or None (not in this store, or not in a pack)."""
    got: dict[bytes, Any] = {}
    while want:
        if lost := [h for h in want if h not in rows]:
            rows.update(fetch(lost))
        nxt = set()
        for h in want:
            row = rows.get(h)
            if row is None:
                return None
            got[h] = row
            if row[0] and row[0] not in got:
                nxt.add(row[0])
        want = nxt
    return got


def _ints(values: list[int], wide: str, narrow: str, limit: int) -> tuple[bool, bytes]:
    w = max(values, default=0) > limit
    return w, struct.pack(f"<{len(values)}{wide if w else narrow}", *values)


def _encode_index(
    key: bytes, heads: list[str], texts: list[str], nodes: dict[bytes, _NodeRow], blobs: dict[bytes, _BlobRow]
) -> bytes | None:
    """The piece index value of schema 2 (`INDEX_VERSION`): `_encode_rows` without the heads and texts."""
    return _encode_rows(key, [bytes.fromhex(x) for x in heads], [bytes.fromhex(x) for x in texts], nodes, blobs, False)


def _encode_rows(
    key: bytes,
    hb: list[bytes],
    tb: list[bytes],
    nodes: dict[bytes, _NodeRow],
    blobs: dict[bytes, _BlobRow],
    named: bool,
) -> bytes | None:
    """An episode's piece index value (see `TranscriptReader._decode_index`): `nodes` (every head's
    and their parents') and `blobs` (every text's, piece's and delta base's) as rows, or None when
    they do not fit the format (more than 65,535 of something, a pack offset beyond 4 GiB).

    Layout, little-endian: the header (`_IDX_HEAD`: the key's first 4 bytes, so that a row under
    another key is seen; the counts); the extra hashes (16 bytes each): the blobs that are not
    texts, then the nodes that are not heads; the pack ids (4 bytes each); the small numbers (1
    byte each, 2 when one is above 255): for each node its parent (0: none, else 1 + place),
    take, tail and number of new pieces, for each blob its base (0: none, else 1 + place) and its
    pack (place in the pack ids), then every node's new pieces in turn; last the blobs' offsets,
    then their lengths (2 bytes each, 4 when one is above 65,535). The nodes are listed heads
    first (in their sorted order), the blobs texts first, so neither names its own hash; a hash
    is named by its place in the sorted heads, then the sorted texts, then the extra hashes.

    `named` (`INDEX_NAMED`, schema 3, where the row is the episode's only directory): the header is
    `_IDX_HEAD2` (the number of heads and of texts instead of the extra hashes) and the sorted heads,
    then the sorted texts, come (16 bytes each) before the extra hashes, so that the row reads without
    its record (`TranscriptReader.all_blobs`, a look-up by hash)."""
    head_set, text_set = set(hb), set(tb)
    if not (head_set <= nodes.keys() and text_set <= blobs.keys()):
        return None
    other_blobs = [h for h in blobs if h not in text_set]
    other_nodes = [h for h in nodes if h not in head_set]
    order = hb + tb + other_blobs + other_nodes
    place = dict(zip(reversed(order), range(len(order) - 1, -1, -1)))  # a hash's first place
    small: list[int] = []
    pieces: list[int] = []
    try:
        for h in hb + other_nodes:
            parent, take, new, tail = nodes[h]
            ps = [place[new[i : i + 16]] for i in range(0, len(new), 16)]
            small += (place[parent] + 1 if parent else 0, take, tail, len(ps))
            pieces += ps
        rows = [blobs[h] for h in tb + other_blobs]
        packs = {pid: k for k, pid in enumerate(dict.fromkeys(r[1] for r in rows))}
        small += [x for r in rows for x in (place[r[0]] + 1 if r[0] else 0, packs[r[1]])]
    except KeyError:  # a piece, parent or base outside the rows given: not a closure
        return None
    offs = [r[2] for r in rows]
    lens = [r[3] for r in rows]
    counts = (len(other_blobs) + len(other_nodes), len(nodes), len(blobs), len(packs), len(pieces))
    if max(counts) > 0xFFFF or max(small + pieces, default=0) > 0xFFFF or max(offs + lens, default=0) > 0xFFFFFFFF:
        return None
    wide, small_b = _ints(small + pieces, "H", "B", 0xFF)
    long, big_b = _ints(offs + lens, "I", "H", 0xFFFF)
    head = (
        _IDX_HEAD2.pack(INDEX_NAMED, wide | long << 1, key[:4], len(hb), len(tb), *counts[1:])
        + b"".join(hb)
        + b"".join(tb)
        if named
        else _IDX_HEAD.pack(INDEX_VERSION, wide | long << 1, key[:4], *counts)
    )
    return b"".join(
        (
            head,
            *other_blobs,
            *other_nodes,
            struct.pack(f"<{len(packs)}I", *packs),
            small_b,
            big_b,
        )
    )


WAL = os.environ.get("HARNESS_TRANSCRIPT_WAL", "1") not in ("", "0")
"""The writer keeps its store in SQLite's write-ahead-log mode while the cell runs (`HARNESS_TRANSCRIPT_WAL=0`:
the rollback journal throughout). A commit is then one append and one fsync of `transcripts.sqlite-wal`
instead of a journal file created, written, synced and deleted besides the pages written and synced:
~0.3 ms of CPU less per commit (scripts/perf/README.md), which is most of the writer's cost per episode
once episodes finish one at a time. Closing checkpoints the log into the file and returns it to the
rollback journal, so that a finished cell is one file again; a cell killed mid-run keeps the `-wal` file
beside it, which the next open (or any reader) reads as part of the store."""


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute(f"PRAGMA journal_mode={'WAL' if WAL else 'DELETE'}")
        db.execute("PRAGMA synchronous=FULL")  # in either mode: a commit is on disk before the record line
    db.execute("PRAGMA busy_timeout=5000")
    return db


_V = TypeVar("_V")


def _settle(settled: list[tuple[asyncio.Future, int | BaseException]]) -> None:
    """On the waiting loop: each `put_async`'s result (its count, or the error of its record)."""
    for fut, result in settled:
        if not fut.done():
            fut.set_exception(result) if isinstance(result, BaseException) else fut.set_result(result)


class _Recent(Generic[_V]):
    """A map of at most about `limit` entries that forgets the least recently used first, in two
    generations (a plain dict each): entries go into the young one; when it holds half the limit
    it becomes the old one and the former old one is dropped whole; an entry found in the old one
    moves to the young one. A shared payload, used by every episode, stays; an episode's own are
    forgotten after ~limit/2 others, without a per-entry eviction."""

    __slots__ = ("young", "old", "half")

    def __init__(self, limit: int) -> None:
        self.young: dict[bytes, _V] = {}
        self.old: dict[bytes, _V] = {}
        self.half = max(1, limit // 2)

    def get(self, k: bytes) -> _V | None:
        v = self.young.get(k)
        if v is None:
            v = self.old.get(k)
            if v is not None:
                self.young[k] = v
        return v

    def __contains__(self, k: bytes) -> bool:
        return k in self.young or k in self.old

    def __len__(self) -> int:
        return len(self.young) + len(self.old)

    def update(self, rows: dict[bytes, _V]) -> None:
        self.young.update(rows)
        if len(self.young) >= self.half:
            self.old, self.young = self.young, {}

    def clear(self) -> None:
        self.young, self.old = {}, {}


class TranscriptStore:
    """The writer of one cell's transcripts (the cell's lock file already makes it the only one)."""

    def __init__(self, cell_dir: Path, index: bool = True, rows: bool | None = None) -> None:
        self.path = Path(cell_dir) / TRANSCRIPTS
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # put() may be called from a writer thread
        self.moved_aside: Path | None = None
        self._zdict_cache: tuple[int, Any] = (-1, None)  # dictionary pack id, the compressor with it
        self._queue: "queue.Queue[Any]" = queue.Queue()  # put_async's group commits
        self._committer: threading.Thread | None = None
        self.index = index  # write each episode's piece index row (`episode_pieces`)
        # `rows` (schema 2, for tests and comparisons): a row per blob and per node besides the index
        # row; else (schema 3) the index row is the episode's directory, rows only where it cannot be
        # (`HARNESS_TRANSCRIPT_ROWS=1` makes it the default: a sweep that writes schema 2)
        self.rows = (WRITE_ROWS if rows is None else rows) or not index
        self._has_rows = False  # whether the store holds blob or node rows (older episodes, fallbacks)
        # the blob and node rows stored or read (hash → row), least recently used first
        self._blob_map: _Recent[_BlobRow] = _Recent(BLOB_MAP_ENTRIES)
        self._node_map: _Recent[_NodeRow] = _Recent(NODE_MAP_ENTRIES)

    def open(self) -> "TranscriptStore":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._open_checked()
        except sqlite3.DatabaseError as e:
            n = 1
            while (aside := self.path.with_name(f"transcripts.corrupt-{n}.sqlite")).exists():
                n += 1
            self.path.rename(aside)
            for suffix in ("-journal", "-wal", "-shm"):
                j = self.path.with_name(self.path.name + suffix)
                if j.exists():
                    j.rename(aside.with_name(aside.name + suffix))
            self.moved_aside = aside
            import warnings

            warnings.warn(
                f"{self.path} could not be read ({e}); moved aside to {aside.name} and started a new one "
                "(older episodes of this cell show 'transcript missing')",
                stacklevel=2,
            )
            self._db = self._open_checked()
        return self

    def _open_checked(self) -> sqlite3.Connection:
        db = _connect(self.path)
        try:
            if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                raise sqlite3.DatabaseError("quick_check failed")
            db.executescript(
                "CREATE TABLE IF NOT EXISTS blobs "
                "(h BLOB PRIMARY KEY, codec INTEGER NOT NULL, base BLOB NOT NULL, data BLOB NOT NULL) WITHOUT ROWID;"
                "CREATE TABLE IF NOT EXISTS nodes "
                "(h BLOB PRIMARY KEY, parent BLOB NOT NULL, take INTEGER NOT NULL, pieces BLOB NOT NULL, "
                "tail INTEGER NOT NULL) WITHOUT ROWID;"
                "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);"
                "CREATE TABLE IF NOT EXISTS packs (id INTEGER PRIMARY KEY, codec INTEGER NOT NULL, data BLOB NOT NULL);"
                "CREATE TABLE IF NOT EXISTS episode_pieces "
                "(id INTEGER PRIMARY KEY, k BLOB NOT NULL UNIQUE, v BLOB NOT NULL);"
            )
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            self._has_rows = any(db.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() for t in ("blobs", "nodes"))
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def put(self, rec: "EpisodeRecord") -> int:
        """Store the blobs and nodes `rec`'s calls introduced, durably, in one transaction: the
        payloads of the blobs the cell does not hold yet as one pack. Call before the record line
        is appended. Returns the number of new rows offered."""
        return self.put_many([rec])[0]

    def put_many(self, recs: "list[EpisodeRecord]") -> list[int]:
        """`put` for several records in one transaction (one commit, one set of fsyncs), each
        record's payloads its own pack; any error rolls back all of them (`put_async` then
        stores each alone, so that one record's error is its own)."""
        items = [self._offered(r) for r in recs]
        if not any(b or n for b, n, _ in items):
            return [0] * len(recs)
        assert self._db is not None, "TranscriptStore.open() first"
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                counts = [self._write(b, n, refs) for b, n, refs in items]
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                self._zdict_cache = (-1, None)  # a dictionary pack of the rolled back transaction is gone
                self._blob_map.clear()  # nor, maybe, the rows remembered meanwhile (rare: start again)
                self._node_map.clear()
                raise
        for r in recs:
            for c in episode_calls(r):
                c.clear_pending_transcript()
        return counts

    @staticmethod
    def _offered(
        rec: "EpisodeRecord",
    ) -> tuple[dict[str, bytes | tuple[str, bytes]], dict[str, tuple[str, int, bytes, int]], _Refs]:
        blobs: dict[str, bytes | tuple[str, bytes]] = {}
        nodes: dict[str, tuple[str, int, bytes, int]] = {}
        heads: set[str] = set()
        texts: set[str] = set()
        for c in episode_calls(rec):
            p = c.pending_transcript()
            if p is not None:
                blobs.update(p.blobs)
                nodes.update(p.nodes)
            if c.prompt is not None:  # what the report asks `pieces` for (runners.analysis.episodes.transcript_of)
                if c.prompt:
                    heads.add(c.prompt)
                for t in (c.reply, c.reasoning, c.tools, c.reply_tool_calls):
                    if t:
                        texts.add(t)
        return blobs, nodes, (sorted(heads), sorted(texts))

    def _write(
        self,
        blobs: dict[str, bytes | tuple[str, bytes]],
        nodes: dict[str, tuple[str, int, bytes, int]],
        refs: _Refs = ([], []),
    ) -> int:
        """One record's pack and piece index row (`episode_pieces`), inside the caller's transaction:
        `_write_indexed`, or (with `rows`, or where the index row cannot hold the episode) `_write_rows`."""
        if not (blobs or nodes):
            return 0
        if not self.rows and (refs[0] or refs[1]):
            try:
                prepared = self._prepare(blobs, nodes, refs)
            except ValueError:  # a reference that is no hash: stored as rows, as before
                prepared = None
            if prepared is not None:
                return self._write_indexed(*prepared)
        self._has_rows = True
        return self._write_rows(blobs, nodes, refs)

    def _write_rows(
        self,
        blobs: dict[str, bytes | tuple[str, bytes]],
        nodes: dict[str, tuple[str, int, bytes, int]],
        refs: _Refs = ([], []),
    ) -> int:
        """One record's rows (a row per blob and per node, schema 2), and its piece index row."""
        assert self._db is not None
        keys = [_b(h) for h in blobs]
        # a blob an earlier episode stored (a shared system prompt) is not repacked; its row is kept for the index
        known = self._present(keys)
        new = [(h, blobs[h]) for h, k in zip(blobs, keys) if k not in known]
        if new:
            known.update(self._pack(new))
        node_rows = {_b(h): (_b(p), take, pieces, tail) for h, (p, take, pieces, tail) in nodes.items()}
        cur = self._db.executemany(
            "INSERT OR IGNORE INTO nodes VALUES (?, ?, ?, ?, ?)", [(h, *r) for h, r in node_rows.items()]
        )
        if cur.rowcount != len(node_rows):  # some were stored before (the same prompt): their stored rows hold
            node_rows = {}
        if refs[0] and self.index:
            try:
                self._put_index(refs, node_rows, known)
            except (ValueError, struct.error):  # a reference that is no hash: no index row, the episode is stored
                pass
        return len(new) + len(nodes)

    def _prepare(
        self,
        blobs: dict[str, bytes | tuple[str, bytes]],
        nodes: dict[str, tuple[str, int, bytes, int]],
        refs: _Refs,
    ) -> tuple[Any, ...] | None:
        """The rows of an episode's directory, before anything is written: every node its heads and
        offered nodes stand on (offered, else remembered, else a node row), every blob its texts,
        nodes, offered blobs and delta bases need (remembered, else a blob row, else offered: then
        in `new`, to be packed), or None when one is nowhere (the episode is then stored as rows)."""
        assert self._db is not None
        hb, tb = [bytes.fromhex(h) for h in refs[0]], [bytes.fromhex(h) for h in refs[1]]
        offered = {bytes.fromhex(h): d for h, d in blobs.items()}
        mine = {bytes.fromhex(h): (bytes.fromhex(p), t, pc, tl) for h, (p, t, pc, tl) in nodes.items()}
        nmap, bmap, has_rows = self._node_map, self._blob_map, self._has_rows
        got_nodes: dict[bytes, _NodeRow] = {}
        want = hb + list(mine)
        while want:
            nxt = []
            for h in want:
                if h in got_nodes:
                    continue
                node = mine.get(h)
                if node is None:
                    node = nmap.get(h)
                    if node is None and (not has_rows or (node := self._node_row(h)) is None):
                        return None
                got_nodes[h] = node
                if node[0] and node[0] not in got_nodes:
                    nxt.append(node[0])
            want = nxt
        order = list(offered)  # the encoder's order: the pack compresses as the episode unfolded
        order += tb
        for _, _, pieces, _ in got_nodes.values():
            order += [pieces[i : i + 16] for i in range(0, len(pieces), 16)]
        asked: dict[bytes, _BlobRow | None] = {}
        if has_rows:  # a store with rows (older episodes, fallbacks): a payload stored there is not stored again
            asked = dict.fromkeys((h for h in order if h not in bmap), None)
            asked.update(
                _select(self._db, "SELECT h, codec, base, data FROM blobs WHERE h IN ({})", list(asked), _blob_row)
            )
        got: dict[bytes, _BlobRow] = {}
        new: list[tuple[bytes, bytes, bytes]] = []  # hash, delta base, payload
        ctx: tuple[Any, ...] = (got, new, set(), offered, asked)
        young, elder = bmap.young, bmap.old
        for h in order:
            if h in got:
                continue
            if not has_rows and h not in young and h not in elder and type(data := offered.get(h)) is bytes:
                got[h] = (b"", -1, 0, 0)  # a whole payload nobody stored: packed by `_write_indexed`
                new.append((h, b"", data))
            elif not self._resolve(h, ctx):
                return None
        return refs, hb, tb, got_nodes, got, new, len(nodes)

    def _resolve(self, h: bytes, ctx: tuple[Any, ...]) -> bool:
        """Blob `h`'s row into `got` (its delta bases first): remembered, else a blob row, else its
        offered payload (then in `new`); False when it is nowhere (`_prepare`)."""
        got, new, active, offered, asked = ctx
        if h in got:
            return True
        if h in active:  # a delta base chain that comes back to itself through remembered rows
            return False
        active.add(h)
        try:
            row = self._blob_map.get(h)
            if row is None and self._has_rows:
                row = asked[h] if h in asked else self._blob_row(h)
            if row is not None and (not row[0] or self._resolve(row[0], ctx)):
                got[h] = row
                return True
            data = offered.get(h)
            if data is None:
                return False
            if type(data) is tuple:
                base, payload = bytes.fromhex(data[0]), data[1]
                if not self._resolve(base, ctx):
                    return False
            else:
                base, payload = b"", data
            got[h] = (base, -1, 0, 0)  # packed by `_write_indexed`
            new.append((h, base, payload))
            return True
        finally:
            active.discard(h)

    def _node_row(self, h: bytes) -> _NodeRow | None:
        assert self._db is not None
        r = self._db.execute("SELECT parent, take, pieces, tail FROM nodes WHERE h = ?", (h,)).fetchone()
        return None if r is None else (bytes(r[0]), int(r[1]), bytes(r[2]), int(r[3]))

    def _blob_row(self, h: bytes) -> _BlobRow | None:
        assert self._db is not None
        r = self._db.execute("SELECT h, codec, base, data FROM blobs WHERE h = ?", (h,)).fetchone()
        return None if r is None else _blob_row(*r)[1]

    def _write_indexed(
        self,
        refs: _Refs,
        hb: list[bytes],
        tb: list[bytes],
        nodes: dict[bytes, _NodeRow],
        blobs: dict[bytes, _BlobRow],
        new: list[tuple[bytes, bytes, bytes]],
        offered_nodes: int,
    ) -> int:
        """The episode's pack (its new payloads) and its piece index row naming every row it needs
        (`_prepare`), no blob or node row; rows for the episode only when the index row cannot
        hold it (`_encode_rows`: more than 65,535 of something). The rows are remembered (bounded)."""
        assert self._db is not None
        if new:
            pid = self._store_pack(b"".join(p for _, _, p in new))
            off = 0
            for h, base, payload in new:
                blobs[h] = (base, pid, off, len(payload))
                off += len(payload)
        key = piece_key(*refs)
        value = _encode_rows(key, hb, tb, nodes, blobs, True)
        if value is None:
            self._write_row_set(nodes, blobs)
        elif not self._db.execute("INSERT OR IGNORE INTO episode_pieces (k, v) VALUES (?, ?)", (key, value)).rowcount:
            # an earlier episode with the same heads and texts has the row (the same closure): what only
            # this one stored (its new payloads, nodes its heads do not reach) gets rows, so that every
            # stored payload stays named (`TranscriptReader.all_blobs`, a look-up by hash)
            reach, want = set(), list(hb)
            while want:
                reach.update(want)
                want = [p for h in want if (p := nodes[h][0]) and p not in reach]
            self._write_row_set({h: r for h, r in nodes.items() if h not in reach}, {h: blobs[h] for h, _, _ in new})
        self._blob_map.update(blobs)
        self._node_map.update(nodes)
        return len(new) + offered_nodes

    def _write_row_set(self, nodes: dict[bytes, _NodeRow], blobs: dict[bytes, _BlobRow]) -> None:
        """A row for each of `nodes` and `blobs` (all in packs), where there is none yet."""
        assert self._db is not None
        if not (nodes or blobs):
            return
        self._db.executemany(
            "INSERT OR IGNORE INTO blobs VALUES (?, ?, ?, ?)",
            [(h, PACKED_DELTA if r[0] else PACKED, r[0], _REF.pack(*r[1:])) for h, r in blobs.items()],
        )
        self._db.executemany("INSERT OR IGNORE INTO nodes VALUES (?, ?, ?, ?, ?)", [(h, *r) for h, r in nodes.items()])
        self._has_rows = True

    def _put_index(self, refs: _Refs, nodes: dict[bytes, _NodeRow], blobs: dict[bytes, _BlobRow | None]) -> None:
        """The episode's piece index row: every node row its heads stand on and every blob row its
        nodes, texts and delta bases need, from the rows this transaction wrote or read (the
        database is asked only for the rest). None is written when something is not in this store
        or not in a pack (rows of schema 1): the reader then walks the rows, as for older stores."""
        assert self._db is not None
        heads, texts = refs
        db = self._db
        got_nodes = _closure(
            {_b(h) for h in heads},
            nodes,
            lambda lost: (
                (bytes(h), (bytes(p), t, bytes(pc), tl))
                for h, p, t, pc, tl in _select(
                    db, "SELECT h, parent, take, pieces, tail FROM nodes WHERE h IN ({})", lost
                )
            ),
        )
        if got_nodes is None:
            return
        want = {_b(h) for h in texts}
        for _, _, pieces, _ in got_nodes.values():
            want.update(pieces[i : i + 16] for i in range(0, len(pieces), 16))
        got_blobs = _closure(
            want,
            blobs,
            lambda lost: _select(db, "SELECT h, codec, base, data FROM blobs WHERE h IN ({})", lost, _blob_row),
        )
        if got_blobs is None:
            return
        key = piece_key(heads, texts)
        value = _encode_index(key, heads, texts, got_nodes, got_blobs)
        if value is not None:
            self._db.execute("INSERT OR REPLACE INTO episode_pieces (k, v) VALUES (?, ?)", (key, value))

    async def put_async(self, rec: "EpisodeRecord") -> int:
        """`put` off the event loop, returning once committed: the records of concurrent episodes
        that wait meanwhile share one transaction (a group commit, as the record writer does)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()
        if self._committer is None:  # only the event loop starts it: no lock (a commit holds `_lock`)
            self._committer = threading.Thread(
                target=self._commit_loop, name=f"transcripts-{self.path.parent.name}", daemon=True
            )
            self._committer.start()
        self._queue.put((rec, loop, fut))
        return await fut

    def _commit_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch, stop = take_batch(self._queue, item)
            try:
                results: list[int | BaseException] = list(self.put_many([r for r, _, _ in batch]))
            except BaseException:  # some record fails alone: find which, the others are stored
                results = []
                for r, _, _ in batch:
                    try:
                        results.append(self.put(r))
                    except BaseException as e:
                        results.append(e)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, int | BaseException]]] = {}
            for (_, loop, fut), res in zip(batch, results):
                by_loop.setdefault(loop, []).append((fut, res))
            for loop, settled in by_loop.items():  # one wake-up of each waiting loop per commit
                try:
                    loop.call_soon_threadsafe(_settle, settled)
                except RuntimeError:  # the waiting loop is gone (interrupted): the rows are committed anyway
                    pass
            if stop:
                return

    def _zdict(self) -> Any:
        """The zstd compressor with the cell's pack dictionary, or None before the cell's first pack
        (inside the write transaction: a rolled back first pack is no dictionary)."""
        assert self._db is not None
        if self._zdict_cache[0] >= 0:  # reset when a transaction rolls back
            return self._zdict_cache[1]
        row = self._db.execute("SELECT v FROM meta WHERE k = 'zdict'").fetchone()
        if row is None:
            return None
        pid = int(row[0])
        if self._zdict_cache[0] != pid:
            import zstandard

            codec, data = self._db.execute("SELECT codec, data FROM packs WHERE id = ?", (pid,)).fetchone()
            zdict = _unpack_plain(codec, data)[-ZDICT_BYTES:]
            c = zstandard.ZstdCompressor(level=PACK_LEVEL, dict_data=_zstd_dict(zdict))
            self._zdict_cache = (pid, c)
        return self._zdict_cache[1]

    def _present(self, keys: list[bytes]) -> dict[bytes, _BlobRow | None]:
        """The rows of the blobs `keys` the database holds (None: a row not in a pack, schema 1)."""
        assert self._db is not None
        return dict(_select(self._db, "SELECT h, codec, base, data FROM blobs WHERE h IN ({})", keys, _blob_row))

    def _pack(self, items: list[tuple[str, bytes | tuple[str, bytes]]]) -> dict[bytes, _BlobRow | None]:
        """One pack row holding every payload of `items`, and a blob row per item pointing into it
        (returned, as `_blob_row` reads them)."""
        assert self._db is not None
        parts, refs, off = [], [], 0
        for h, data in items:
            base, payload = data if isinstance(data, tuple) else ("", data)
            parts.append(payload)
            refs.append((h, base, off, len(payload)))
            off += len(payload)
        pid = self._store_pack(b"".join(parts))
        rows: dict[bytes, _BlobRow | None] = {_b(h): (_b(base), pid, o, n) for h, base, o, n in refs}
        self._db.executemany(
            "INSERT OR IGNORE INTO blobs VALUES (?, ?, ?, ?)",
            [(h, PACKED_DELTA if r[0] else PACKED, r[0], _REF.pack(*r[1:])) for h, r in rows.items() if r is not None],
        )
        return rows

    def _store_pack(self, raw: bytes) -> int:
        """A pack row of the payloads `raw`, compressed (zstd, with the cell's dictionary after its
        first pack); its id."""
        assert self._db is not None
        c = self._zdict()
        if c is None:  # the cell's first pack: compressed on its own, and the dictionary of the packs after it
            import zstandard

            z, zcodec = zstandard.ZstdCompressor(level=PACK_LEVEL).compress(raw), ZSTD
        else:
            z, zcodec = c.compress(raw), ZSTD_DICT
        codec, stored = (zcodec, z) if len(z) < len(raw) else (RAW, raw)
        pid = self._db.execute("INSERT INTO packs (codec, data) VALUES (?, ?)", (codec, stored)).lastrowid
        assert pid is not None
        if c is None:
            self._db.execute("INSERT INTO meta VALUES ('zdict', ?)", (str(pid),))
        return pid

    def close(self) -> None:
        if self._committer is not None:  # what was queued is committed first
            self._queue.put(None)
            self._committer.join()
            self._committer = None
        with self._lock:
            if self._db is not None:
                if WAL:  # the log into the file, and the file back to the rollback journal: one file again
                    try:
                        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                        self._db.execute("PRAGMA journal_mode=DELETE")
                    except sqlite3.OperationalError:  # a reader holds the store open: the log stays, read the same
                        pass
                self._db.close()
                self._db = None


class Pieces:
    """An episode's stored pieces (`TranscriptReader.pieces`): `nodes`, `blobs`, and the hashes
    this store does not hold."""

    __slots__ = ("nodes", "blobs", "missing_nodes", "missing_blobs", "wanted")

    def __init__(self) -> None:
        self.nodes: dict[str, list[Any]] = {}
        self.blobs: dict[str, list[Any]] = {}
        self.missing_nodes: set[str] = set()
        self.missing_blobs: set[str] = set()
        self.wanted: set[str] = set()  # the message hashes the nodes name


class TranscriptReader:
    """Reads one cell's transcripts (read-only; safe while a sweep writes the cell)."""

    def __init__(self, cell_dir: Path) -> None:
        self.path = Path(cell_dir) / TRANSCRIPTS
        self._db: sqlite3.Connection | None = None
        self._blob_cache: dict[str, Any] = {}
        self._node_cache: dict[str, tuple[str, int, list[str], int]] = {}
        self._bytes_cache: dict[str, bytes] = {}
        self._packs: OrderedDict[int, bytes] = OrderedDict()
        self._zstd: tuple[int, Any] = (-1, None)
        self._zdict: int | None = None  # the dictionary pack's id, once read
        self._last: tuple[int, bytes] = (-1, b"")  # the pack read last
        self._has_index: bool | None = None  # whether the store has the piece index table, once looked
        # blobs and nodes with no row, read from an index row that names them (`_found`)
        self._found_blobs: dict[str, tuple[str | None, bytes]] = {}
        self._found_nodes: dict[str, tuple[str, int, list[str], int]] = {}
        self.use_index = True  # False: `pieces` always walks the rows (the index's own tests compare both)

    @property
    def exists(self) -> bool:
        return self._db is not None or self.path.exists()  # asked per episode: no stat once open

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            if not self.path.exists():
                raise TranscriptError(f"{self.path} does not exist (the cell was run without transcripts)")
            self._db = _connect(self.path, readonly=True)
            self._db.execute(f"PRAGMA mmap_size={READ_MMAP_BYTES}")
        return self._db

    def _pack(self, pid: int) -> bytes:
        """A pack's payloads, decompressed (the last `PACK_CACHE` are kept: an episode's blobs share one)."""
        if pid == self._last[0]:  # an episode's blobs mostly share its pack
            return self._last[1]
        data = self._packs.get(pid)
        if data is not None:
            self._packs.move_to_end(pid)
            self._last = (pid, data)
            return data
        row = self._conn().execute("SELECT codec, data FROM packs WHERE id = ?", (pid,)).fetchone()
        if row is None:
            raise TranscriptError(f"pack {pid} is missing from {self.path}")
        codec, stored = row
        if codec in (ZLIB_DICT, ZSTD_DICT):
            if self._zdict is None:  # written once, with the cell's first pack: read once
                d = self._conn().execute("SELECT v FROM meta WHERE k = 'zdict'").fetchone()
                self._zdict = -1 if d is None else int(d[0])
            if self._zdict < 0 or self._zdict == pid:
                raise TranscriptError(
                    f"pack {pid} of {self.path} needs the cell's dictionary pack, which is not recorded"
                )
            if codec == ZLIB_DICT:
                z = zlib.decompressobj(15, self._pack(self._zdict)[-ZDICT_BYTES:])
                data = z.decompress(stored) + z.flush()
            else:
                data = self._zstd_reader(self._zdict).decompress(stored)
        else:
            data = _unpack_plain(codec, stored)
        self._packs[pid] = data
        self._last = (pid, data)
        while len(self._packs) > PACK_CACHE:
            self._packs.popitem(last=False)
        return data

    def _zstd_reader(self, dict_pid: int) -> Any:
        """The zstd decompressor with the cell's pack dictionary (made once per reader)."""
        if self._zstd[0] != dict_pid:
            import zstandard

            self._zstd = (
                dict_pid,
                zstandard.ZstdDecompressor(dict_data=_zstd_dict(self._pack(dict_pid)[-ZDICT_BYTES:])),
            )
        return self._zstd[1]

    def stored(self, h: str) -> tuple[str | None, bytes]:
        """One blob as stored: (None, its bytes) for a whole blob, or (base hash, delta bytes) for
        a message stored as a delta of `base` (see `apply_delta`)."""
        row = self._conn().execute("SELECT codec, base, data FROM blobs WHERE h = ?", (_b(h),)).fetchone()
        if row is None:
            if self._found(h) and h in self._found_blobs:
                return self._found_blobs[h]
            raise TranscriptError(f"blob {h} is missing from {self.path}")
        return self._stored_row(h, *row)

    def _rows(self, sql: str, keys: Iterable[str]) -> list[Any]:
        """`sql` (with `IN ({})`) for the hashes `keys`, in batches under SQLite's variable limit."""
        return _select(self._conn(), sql, [_b(k) for k in keys])

    def pieces(self, heads: Iterable[str], texts: Iterable[str], fragments: bool = False) -> Pieces:
        """Everything the prompt nodes `heads` and the blobs `texts` (replies, tool lists) stand on,
        in stored form: nodes as [parent, take, new piece hashes, tail], blobs as ["t", text] or,
        for a message stored as a delta, ["d", base hash, delta] (its base included). From the
        episode's piece index row when the store has one for exactly these heads and texts (one
        lookup: `_indexed`), else one query per level of nodes and of delta bases (an episode's
        pieces in a handful of queries, not one per piece: the report reads every episode's this
        way). What is not in this store is named in `Pieces.missing_nodes` / `missing_blobs`,
        never an error. `fragments` (the report): messages and deltas as their stored JSON (`_form`)."""
        hs, ts = sorted({h for h in heads if h}), sorted({h for h in texts if h})
        out = self._indexed(hs, ts, fragments) if self.use_index else None
        if out is None:
            out = Pieces()
            self._nodes_into(out, set(hs))
            self._blobs_into(out, set(ts) | out.wanted, set(ts), fragments)
        return out

    @staticmethod
    def _form(h: str, base: str | None, payload: bytes, texts: Container[str], fragments: bool) -> list[Any]:
        """A blob as `pieces` answers it: ["t", text] or ["d", base, delta]. With `fragments`, a
        message (a blob the episode does not name as a text) is ["j", its stored JSON] and a delta's
        JSON stays as stored, each an `orjson.Fragment` that `orjson.dumps` writes as is: the report's
        page reads the same values without the text being decoded to a str and escaped again.
        Stored bytes that hold a newline (the report's payload separator) or a lone surrogate (0xED,
        also the lead byte of some Hangul) are decoded as without `fragments`."""
        if fragments and b"\n" not in payload and b"\xed" not in payload:
            if base is not None:
                return ["d", base, orjson.Fragment(payload)]
            if h not in texts:
                return ["j", orjson.Fragment(payload)]
        return ["d", base, _json(payload)] if base is not None else ["t", payload.decode("utf-8", "surrogatepass")]

    def _holds(self, p: Pieces) -> bool:
        """Whether this store has a row of any of `p`'s nodes or blobs."""
        db = self._conn()
        return any(
            _select(db, f"SELECT 1 FROM {table} WHERE h IN ({{}}) LIMIT 1", [_b(h) for h in hs])
            for table, hs in (("nodes", p.nodes), ("blobs", p.blobs))
        )

    def _index_table(self) -> bool:
        if self._has_index is None:  # looked for once: a store written before the index has no table
            self._has_index = bool(
                self._conn().execute("SELECT 1 FROM sqlite_master WHERE name = 'episode_pieces'").fetchone()
            )
        return self._has_index

    def _index_row(self, key: bytes) -> bytes | None:
        if not self._index_table():
            return None
        row = self._conn().execute("SELECT v FROM episode_pieces WHERE k = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def _indexed(self, heads: list[str], texts: list[str], fragments: bool = False) -> Pieces | None:
        """`pieces` from the episode's index row (`_encode_index`: the node and blob rows the writer
        had in hand when it stored the episode, in the same transaction), the packs read as the
        walk reads them. None, and the walk answers, when there is no row (an older store, an
        episode stored before the index or with rows of schema 1) or the row does not hold
        everything asked for and everything it names (a damaged or foreign row, a lost pack)."""
        if not heads and not texts:
            return None
        try:
            key = piece_key(heads, texts)
            v = self._index_row(key)
            return None if v is None else self._decode_index(key, v, heads, texts, fragments)
        except Exception:  # whatever is wrong with the row, the walk reads the rows as before
            return None

    def _decode_index(
        self,
        key: bytes | None,
        v: bytes,
        heads: list[str] | None,
        texts: list[str] | None,
        fragments: bool = False,
        raw: bool = False,
    ) -> Pieces | None:
        """A piece index value (`_encode_rows`) as `Pieces`, or None when it is not this key's or
        does not hold the closure the walk finds. `heads` and `texts` None (a row of schema 3, which
        names them): read from the row. `raw`: blobs as ["r", base or None, stored payload]."""
        if v[0] == INDEX_NAMED:
            _, widths, check, n_heads, n_texts, n_nodes, n_blobs, n_packs, n_pieces = _IDX_HEAD2.unpack_from(v, 0)
            o = _IDX_HEAD2.size
            n_hashes = n_nodes + n_blobs
            ex = v[o : o + 16 * n_hashes].hex()
            hx = [ex[i : i + 32] for i in range(0, len(ex), 32)]
            o += 16 * n_hashes
            if len(hx) != n_hashes or n_heads > n_nodes or n_texts > n_blobs:
                return None
            if heads is None or texts is None:
                heads, texts = hx[:n_heads], hx[n_heads : n_heads + n_texts]
                key = piece_key(heads, texts)
            elif hx[:n_heads] != heads or hx[n_heads : n_heads + n_texts] != texts:
                return None  # a row written for other heads and texts
            extra = hx[n_heads + n_texts :]
        else:
            if heads is None or texts is None or key is None:
                return None  # a row of schema 2 does not name its heads and texts
            version, widths, check, n_extra, n_nodes, n_blobs, n_packs, n_pieces = _IDX_HEAD.unpack_from(v, 0)
            if version != INDEX_VERSION or n_extra != n_nodes + n_blobs - len(heads) - len(texts):
                return None  # another version's row
            o = _IDX_HEAD.size
            ex = v[o : o + 16 * n_extra].hex()
            extra = [ex[i : i + 32] for i in range(0, len(ex), 32)]
            hx = heads + texts + extra
            o += 16 * n_extra
        other_blobs, other_nodes = n_blobs - len(texts), n_nodes - len(heads)
        if key is None:
            key = piece_key(heads, texts)
        if check != key[:4] or min(other_blobs, other_nodes) < 0:
            return None  # a row written for another key
        pids = struct.unpack_from(f"<{n_packs}I", v, o)
        o += 4 * n_packs
        n_small = 4 * n_nodes + 2 * n_blobs + n_pieces
        small = struct.unpack_from(f"<{n_small}{'H' if widths & 1 else 'B'}", v, o)
        o += n_small * (2 if widths & 1 else 1)
        big = struct.unpack_from(f"<{2 * n_blobs}{'I' if widths & 2 else 'H'}", v, o)
        if o + 2 * n_blobs * (4 if widths & 2 else 2) != len(v):
            return None
        out = Pieces()
        nodes, blobs, wanted = out.nodes, out.blobs, out.wanted
        nb = 4 * n_nodes  # where the blobs' numbers start
        at = ps = nb + 2 * n_blobs  # where the nodes' new pieces start
        for h, parent, take, tail, n in zip(heads + extra[other_blobs:], *(small[j:nb:4] for j in range(4))):
            new = [hx[j] for j in small[at : at + n]]
            at += n
            nodes[h] = [hx[parent - 1] if parent else "", take, new, tail]
            wanted.update(new)
        packs = [self._pack(pid) for pid in pids]
        named = set(texts)
        for h, base, pack, off, n in zip(
            texts + extra[:other_blobs], small[nb:ps:2], small[nb + 1 : ps : 2], big, big[n_blobs:]
        ):
            b = hx[base - 1] if base else None
            payload = packs[pack][off : off + n]
            blobs[h] = ["r", b, payload] if raw else self._form(h, b, payload, named, fragments)
        if (
            at != len(small)
            or len(nodes) != n_nodes
            or len(blobs) != n_blobs
            or not blobs.keys() >= wanted.union(b[1] for b in blobs.values() if b[0] in "dr" and b[1] is not None)
            or not all(n[0] in nodes for n in nodes.values() if n[0])
        ):
            return None  # not the closure the walk finds: the walk answers
        return out

    def _named_rows(self, containing: bytes | None = None) -> Iterable[Pieces]:
        """Every piece index row of schema 3 (which names its heads and texts), read without its
        record, payloads raw (`_decode_index`); only those whose bytes hold `containing` when given
        (SQLite's `instr` on the value: a scan of the index rows, no lookup)."""
        if not self._index_table():
            return
        sql = "SELECT v FROM episode_pieces WHERE substr(v, 1, 1) = ?"
        args: tuple[bytes, ...] = (bytes([INDEX_NAMED]),)
        if containing is not None:
            sql, args = sql + " AND instr(v, ?) > 0", (*args, containing)
        for (v,) in self._conn().execute(sql, args):
            try:
                p = self._decode_index(None, bytes(v), None, None, raw=True)
            except (struct.error, TranscriptError):
                p = None
            if p is not None:
                yield p

    def _found(self, h: str) -> bool:
        """Look `h` (a blob or node the store has no row of) up in the index rows of schema 3: the
        first row that names it is read into `_found_nodes` / `_found_blobs` (bounded). A scan of
        every index row, linear in the store: the report and `runners.records.results` read an
        episode's pieces with one lookup of its row instead (`pieces`, `episode`)."""
        if h in self._found_blobs or h in self._found_nodes:
            return True
        try:
            key = bytes.fromhex(h)
        except ValueError:
            return False
        for p in self._named_rows(key):
            if h in p.blobs or h in p.nodes:
                if len(self._found_blobs) + len(self._found_nodes) > CACHE_ENTRIES:
                    self._found_blobs.clear()
                    self._found_nodes.clear()
                for k, (_, base, payload) in p.blobs.items():
                    self._found_blobs[k] = (base, payload)
                for k, (parent, take, new, tail) in p.nodes.items():
                    self._found_nodes[k] = (parent, take, new, tail)
                return True
        return False

    def _nodes_into(self, out: Pieces, want: set[str]) -> None:
        while want:
            found = set()
            for h, parent, take, new, tail in self._rows(
                "SELECT h, parent, take, pieces, tail FROM nodes WHERE h IN ({})", want
            ):
                k, new = h.hex(), new.hex()
                hexes = [new[i : i + 32] for i in range(0, len(new), 32)]
                out.nodes[k] = [parent.hex(), int(take), hexes, int(tail)]
                out.wanted.update(hexes)
                found.add(k)
            out.missing_nodes.update(want - found)
            want = {n[0] for k in found if (n := out.nodes[k])[0] and n[0] not in out.nodes}

    def _blobs_into(self, out: Pieces, want: set[str], texts: Container[str] = (), fragments: bool = False) -> None:
        want = want - out.blobs.keys()
        while want:
            bases: set[str] = set()
            found = set()
            for h, codec, base, data in self._rows("SELECT h, codec, base, data FROM blobs WHERE h IN ({})", want):
                k = h.hex()
                try:
                    if codec == PACKED or codec == PACKED_DELTA:  # nearly every row: a slice of a pack
                        pid, off, n = _REF.unpack(data)
                        payload = self._pack(pid)[off : off + n]
                        b = base.hex() if codec == PACKED_DELTA else None
                    else:
                        b, payload = self._stored_row(k, codec, base, data)
                    out.blobs[k] = self._form(k, b, payload, texts, fragments)
                except TranscriptError:  # an unknown codec, a lost pack: missing, like a lost row
                    continue
                found.add(k)
                if b is not None and b not in out.blobs:
                    bases.add(b)
            out.missing_blobs.update(want - found)
            want = bases - out.blobs.keys() - out.missing_blobs

    def _stored_row(self, h: str, codec: int, base: bytes, data: bytes) -> tuple[str | None, bytes]:
        if codec in (PACKED, PACKED_DELTA):
            pid, off, n = _REF.unpack(data)
            payload = self._pack(pid)[off : off + n]
            return (bytes(base).hex() if codec == PACKED_DELTA else None), payload
        if codec == DELTA:
            return bytes(base).hex(), zlib.decompress(data)
        if codec == ZLIB:
            return None, zlib.decompress(data)
        if codec == RAW:
            return None, bytes(data)
        raise TranscriptError(f"blob {h} in {self.path} has codec {codec}, unknown to this version of the harness")

    def blob_bytes(self, h: str) -> bytes:
        """A blob's bytes (a delta-stored message rebuilt from its base chain)."""
        if h in self._bytes_cache:
            return self._bytes_cache[h]
        deltas: list[bytes] = []
        cur = h
        while True:
            base, payload = self.stored(cur)
            if base is None:
                out = payload
                break
            deltas.append(payload)
            cur = base
            if cur in self._bytes_cache:
                out = self._bytes_cache[cur]
                break
        if deltas:
            msg = json.loads(out)
            for delta in reversed(deltas):
                msg = apply_delta(msg, delta)
            out = canonical(msg)
        if len(self._bytes_cache) > CACHE_ENTRIES:
            self._bytes_cache.clear()
        self._bytes_cache[h] = out
        return out

    def text(self, h: str | None) -> str | None:
        if h is None:
            return None
        return self.blob_bytes(h).decode("utf-8", "surrogatepass")

    def blob_json(self, h: str | None) -> Any:
        if h is None:
            return None
        if h not in self._blob_cache:
            if len(self._blob_cache) > CACHE_ENTRIES:  # a reader over a whole cell (the report) stays bounded
                self._blob_cache.clear()
            self._blob_cache[h] = json.loads(self.blob_bytes(h))
        return self._blob_cache[h]

    def node(self, h: str) -> tuple[str, int, list[str], int]:
        """(parent, pieces kept from the parent's start, own new piece hashes, pieces kept from
        the parent's end) of a prompt node."""
        node = self._node_cache.get(h)
        if node is None:
            row = self._conn().execute("SELECT parent, take, pieces, tail FROM nodes WHERE h = ?", (_b(h),)).fetchone()
            if row is None:
                if self._found(h) and h in self._found_nodes:
                    return self._found_nodes[h]
                raise TranscriptError(f"prompt node {h} is missing from {self.path}")
            new = bytes(row[2])
            if len(self._node_cache) > CACHE_ENTRIES:
                self._node_cache.clear()
            node = self._node_cache[h] = (
                bytes(row[0]).hex(),
                int(row[1]),
                [new[i : i + 16].hex() for i in range(0, len(new), 16)],
                int(row[3]),
            )
        return node

    def piece_hashes(self, head: str | None) -> list[str]:
        """The piece hashes of a prompt node, first piece first."""
        path: list[tuple[int, list[str], int]] = []
        h = head or ""
        while h:
            parent, take, new, tail = self.node(h)
            path.append((take, new, tail))
            h = parent
        out: list[str] = []
        for take, new, tail in reversed(path):  # root first, each node edits what its parent built
            out = out[:take] + new + (out[len(out) - tail :] if tail else [])
        return out

    def messages(self, head: str | None) -> list[dict[str, Any]]:
        """The exact message list of a prompt node."""
        return [json.loads(self.blob_bytes(m)) for m in self.piece_hashes(head)]

    def all_blobs(self) -> Iterable[tuple[str, bytes]]:
        """Every stored blob's bytes, deltas rebuilt (for audits such as the key-leak test): each
        blob row's, then each blob an index row of schema 3 names that has no row (the payloads of
        an index-first store), each hash once."""
        seen: set[str] = set()
        for (h,) in self._conn().execute("SELECT h FROM blobs").fetchall():
            k = bytes(h).hex()
            seen.add(k)
            yield k, self.blob_bytes(k)
        for p in self._named_rows():
            stored = {k: (b[1], b[2]) for k, b in p.blobs.items()}
            for k in stored:
                if k not in seen:
                    seen.add(k)
                    yield k, _rebuilt(stored, k)

    def stats(self) -> dict[str, int]:
        """Distinct blobs and nodes (rows and index rows of schema 3), their bytes, packs, file size."""
        db = self._conn()
        raw = n = 0
        for _, b in self.all_blobs():
            raw += len(b)
            n += 1
        inline = db.execute(
            f"SELECT COALESCE(SUM(CASE WHEN codec IN ({PACKED}, {PACKED_DELTA}) THEN 0 ELSE LENGTH(data) END), 0) "
            "FROM blobs"
        ).fetchone()[0]
        has_packs = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'packs'").fetchone()
        packed, packs = (
            db.execute("SELECT COALESCE(SUM(LENGTH(data)), 0), COUNT(*) FROM packs").fetchone() if has_packs else (0, 0)
        )
        nodes = {bytes(h).hex() for (h,) in db.execute("SELECT h FROM nodes")}
        for p in self._named_rows():
            nodes.update(p.nodes)
        return {
            "blobs": n,
            "blob_bytes_raw": raw,
            "blob_bytes_stored": inline + packed,
            "packs": packs,
            "nodes": len(nodes),
            "file_bytes": self.path.stat().st_size,
        }

    def episode(self, heads: Iterable[str], texts: Iterable[str]) -> "EpisodeTranscript":
        """One episode's transcript read from its pieces (`EpisodeTranscript`)."""
        return EpisodeTranscript(self, heads, texts)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class ShardedTranscriptReader:
    """The transcripts of a cell whose records sit in several stores (the cell's folder and its
    `shard-*` folders: `runner.shard`, `runner.processes`): each reference is read from the store
    that holds it. Same reading methods as `TranscriptReader`."""

    def __init__(self, dirs: list[Path]) -> None:
        self.readers = [TranscriptReader(d) for d in dirs]
        self.path = self.readers[0].path

    @property
    def exists(self) -> bool:
        return any(r.exists for r in self.readers)

    def _first(self, fn: str, *args: Any) -> Any:
        last: TranscriptError | None = None
        for r in self.readers:
            if not r.exists:
                continue
            try:
                return getattr(r, fn)(*args)
            except TranscriptError as e:
                last = e
        raise last or TranscriptError(f"no transcripts in {', '.join(str(r.path) for r in self.readers)}")

    def blob_bytes(self, h: str) -> bytes:
        return self._first("blob_bytes", h)

    def text(self, h: str | None) -> str | None:
        return None if h is None else self._first("text", h)

    def blob_json(self, h: str | None) -> Any:
        return None if h is None else self._first("blob_json", h)

    def messages(self, head: str | None) -> list[dict[str, Any]]:
        return self._first("messages", head)

    def stored(self, h: str) -> tuple[str | None, bytes]:
        return self._first("stored", h)

    def node(self, h: str) -> tuple[str, int, list[str], int]:
        return self._first("node", h)

    def pieces(self, heads: Iterable[str], texts: Iterable[str], fragments: bool = False) -> Pieces:
        """`TranscriptReader.pieces` over every store: what one store lacks is looked for in the
        others (a node in one, its pieces in another), until nothing more is found."""
        want_nodes, want_blobs = {h for h in heads if h}, {h for h in texts if h}
        live = [r for r in self.readers if r.exists]
        hs, ts = sorted(want_nodes), sorted(want_blobs)
        for k, r in enumerate(live):  # the store that wrote the episode has its index row
            got = r._indexed(hs, ts, fragments) if r.use_index else None
            if got is not None:  # the walk below takes each piece from the first store holding it
                if not any(e._holds(got) for e in live[:k]):
                    return got
                break
        out, named = Pieces(), set(ts)
        while want_nodes or want_blobs:
            before = len(out.nodes) + len(out.blobs)
            for r in live:
                got = Pieces()
                r._nodes_into(got, want_nodes - out.nodes.keys())
                r._blobs_into(got, (want_blobs | got.wanted) - out.blobs.keys(), named, fragments)
                out.nodes.update(got.nodes)
                out.blobs.update(got.blobs)
                want_nodes |= {n[0] for n in got.nodes.values() if n[0]}
                want_blobs |= got.wanted | {b[1] for b in got.blobs.values() if b[0] == "d"}
            want_nodes -= out.nodes.keys()
            want_blobs -= out.blobs.keys()
            if len(out.nodes) + len(out.blobs) == before:
                break
        out.missing_nodes, out.missing_blobs = want_nodes, want_blobs
        return out

    def all_blobs(self) -> Iterable[tuple[str, bytes]]:
        for r in self.readers:
            if r.exists:
                yield from r.all_blobs()

    def episode(self, heads: Iterable[str], texts: Iterable[str]) -> "EpisodeTranscript":
        return EpisodeTranscript(self, heads, texts)

    def close(self) -> None:
        for r in self.readers:
            r.close()


class EpisodeTranscript:
    """One episode's transcript, read from its pieces: the episode's piece index row (one lookup;
    or, in a store without one, the walk of its rows: `TranscriptReader.pieces`) on the first
    question, then every message list and text of the episode from them. The way to read an
    index-first store (schema 3), whose blobs and nodes have no rows of their own: asked by hash
    alone, a reader scans the index rows for one that names the hash (`TranscriptReader._found`).
    What the pieces lack is asked of the reader by hash (a store of schema 1 or 2 answers from its
    rows, as before; what is nowhere raises `TranscriptError`). Same answers as the reader's."""

    def __init__(
        self, reader: "TranscriptReader | ShardedTranscriptReader", heads: Iterable[str], texts: Iterable[str]
    ):
        self.reader = reader
        self._asked = ({h for h in heads if h}, {h for h in texts if h})
        self._got: Pieces | None = None
        self._messages: dict[str, str | bytes] = {}  # message hash -> its canonical JSON

    def _pieces(self) -> Pieces:
        if self._got is None:
            self._got = self.reader.pieces(*self._asked) if self.reader.exists else Pieces()
        return self._got

    def _message(self, h: str) -> str | bytes:
        """A message's canonical JSON (a delta rebuilt from its base, as `TranscriptReader.blob_bytes` does)."""
        m = self._messages.get(h)
        if m is None:
            blobs = self._pieces().blobs
            b = blobs.get(h)
            chain: list[Any] = []
            while b is not None and b[0] == "d" and len(chain) <= 4 * MAX_DELTA_DEPTH:
                chain.append(b[2])
                b = blobs.get(b[1])
            if b is None or b[0] != "t":  # not among the pieces: by hash
                m = self.reader.blob_bytes(h)
            elif not chain:
                m = b[1]
            else:
                msg = json.loads(b[1])
                for d in reversed(chain):
                    msg = _applied(msg, d)
                m = canonical(msg)
            self._messages[h] = m
        return m

    def messages(self, head: str | None) -> list[dict[str, Any]]:
        """The exact message list of prompt node `head` (`TranscriptReader.messages`)."""
        nodes = self._pieces().nodes
        path: list[tuple[int, list[str], int]] = []
        h = head or ""
        while h:
            node = nodes.get(h)
            if node is None:
                return self.reader.messages(head)
            parent, take, new, tail = node
            path.append((take, new, tail))
            h = parent
        out: list[str] = []
        for take, new, tail in reversed(path):
            out = out[:take] + new + (out[len(out) - tail :] if tail else [])
        return [json.loads(self._message(m)) for m in out]

    def text(self, h: str | None) -> str | None:
        """A reply, reasoning or other stored text (`TranscriptReader.text`)."""
        if h is None:
            return None
        b = self._pieces().blobs.get(h)
        return b[1] if b is not None and b[0] == "t" else self.reader.text(h)

    def blob_json(self, h: str | None) -> Any:
        """A stored JSON blob, parsed (`TranscriptReader.blob_json`): a tool list, native tool calls."""
        t = self.text(h)
        return None if t is None else json.loads(t)


def open_transcripts(cell_dir: Path) -> "TranscriptReader | ShardedTranscriptReader":
    """The reader of a cell's transcripts: its own store, or with shards every store of the cell."""
    cell_dir = Path(cell_dir)
    shards = shard_dirs(cell_dir)
    return ShardedTranscriptReader([cell_dir, *shards]) if shards else TranscriptReader(cell_dir)
