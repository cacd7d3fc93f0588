"""Offline token counting (o200k_base via `bpe-openai`). Used only where an endpoint reports no
usage and by the scripted backbone; such counts are marked `source="estimated"`."""

from __future__ import annotations

import functools
import json
from typing import Any

from runners.api import Message, Usage

TOKENIZER = "o200k_base (bpe-openai, offline)"
# Per-message framing overhead of the chat format (OpenAI cookbook convention).
_PER_MESSAGE = 3
_PER_REPLY = 3


@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding("o200k_base")


def count(text: str) -> int:
    """o200k tokens in `text`."""
    if not text:
        return 0
    return len(_encoding().encode(text))


def count_messages(messages: list[Message]) -> int:
    n = _PER_REPLY
    for m in messages:
        n += _PER_MESSAGE
        content = m.get("content")
        if isinstance(content, str):
            n += count(content)
        elif content is not None:
            n += count(json.dumps(content, ensure_ascii=False))
        if m.get("tool_calls"):
            n += count(json.dumps(m["tool_calls"], ensure_ascii=False))
    return n


def estimate_usage(messages: list[Message], completion: str) -> Usage:
    return Usage(prompt_tokens=count_messages(messages), completion_tokens=count(completion), source="estimated")


def truncate_tokens(text: str, max_tokens: int) -> list[str]:
    """Cut `text` into pieces of at most `max_tokens` o200k tokens (decoded back to text),
    as MemoryArena's BM25 chunker does."""
    enc = _encoding()
    ids = enc.encode(text)
    return [enc.decode(ids[i : i + max_tokens]) for i in range(0, len(ids), max_tokens)] or [""]
