"""Serialise each request once.

A model call's messages are encoded to JSON bytes once (with `orjson`, sorted keys, compact,
UTF-8) by the outermost backbone wrapper (`runners.episode.RecordingBackbone`), which hands the
inner backbones an `EncodedMessages` list: the same messages, carrying their bytes. The attempt
key, the response-cache key and the HTTP request body all splice those bytes in instead of
encoding the prompt again (before: two `json.dumps` + sha256 passes and a third encoding by the
HTTP client per call).

The bytes are `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` as
UTF-8 for strings, ints, bools, None, lists and dicts; floats are written the way orjson writes
them (`1e-7` where the standard library writes `1e-07`, NaN as `null`), so a cache key written
before this module existed for a prompt holding such a float no longer matches (a cache miss,
nothing else). This encoding is kept fast on purpose: `runners.records.transcripts.canonical` is the
exact one (it walks the object first), used for the transcript store's hashes. Text `orjson`
refuses (lone surrogates from a damaged reply, non-str keys) falls back to the standard library
with ASCII escapes, which is still valid JSON for the endpoint.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTS = orjson.OPT_SORT_KEYS


def dumps(obj: Any) -> bytes:
    """Canonical JSON bytes of `obj` (sorted keys, compact)."""
    try:
        return orjson.dumps(obj, option=_OPTS, default=str)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str).encode()


class EncodedMessages(list):
    """A snapshot of a message list that carries its canonical JSON bytes (`.raw`). It is a
    plain `list` to every reader; wrappers that receive one reuse `.raw` instead of encoding."""

    __slots__ = ("raw",)

    def __init__(self, messages: list[Any], raw: bytes | None = None) -> None:
        super().__init__(messages)
        self.raw = dumps(list(messages)) if raw is None else raw


def encoded(messages: list[Any]) -> EncodedMessages:
    """`messages` as EncodedMessages (no work when it already is one)."""
    return messages if isinstance(messages, EncodedMessages) else EncodedMessages(messages)


def dumps_with(obj: dict[str, Any], key: str, raw: bytes) -> bytes:
    """Canonical JSON of `{**obj, key: <the JSON value whose bytes are raw>}` without decoding
    `raw`: `raw` is spliced in at `key`'s sorted position."""
    if key in obj:
        raise ValueError(f"{key!r} is already in the object")
    before = {k: v for k, v in obj.items() if k < key}
    after = {k: v for k, v in obj.items() if k > key}
    head = dumps(before)[:-1] if before else b"{"
    tail = dumps(after)[1:] if after else b"}"
    sep_head = b"," if before else b""
    sep_tail = b"," if after else b""
    return b"".join((head, sep_head, dumps(key), b":", raw, sep_tail, tail))  # `raw` (the prompt) copied once
