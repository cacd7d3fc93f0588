"""Offline token counting (o200k_base via `bpe-openai`). Used only where an endpoint reports no
usage and by the scripted backbone; such counts are marked `source="estimated"`."""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import json
from pathlib import Path
from typing import Any

from runners.api import Message, Usage

TOKENIZER = "o200k_base (bpe-openai, offline)"
# Per-message framing overhead of the chat format (OpenAI cookbook convention).
_PER_MESSAGE = 3
_PER_REPLY = 3


def _bindings() -> Any:
    """bpe-openai's Rust tokenizer module (`bpe_openai._bindings`), loaded without the package's `__init__`.

    Importing `bpe_openai` itself parses the gzipped vocabularies of three encodings in Python (its `compat`
    module builds a table of every model's special tokens): 1-2 s, paid by every sweep process that counts a
    token, while the Rust tokenizer carries its own copy of the vocabulary and loads in about 0.1 s. Returns
    None when the module is not where this bpe-openai version keeps it (the caller then uses the package's
    public API)."""
    spec = importlib.util.find_spec("bpe_openai")  # finds the package without importing it
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if path.is_file():
                ext = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
                if ext is None or ext.loader is None:
                    return None
                module = importlib.util.module_from_spec(ext)
                ext.loader.exec_module(module)
                return module
    return None


class _Encoder:
    """o200k_base encode/decode on the Rust tokenizer. Text is encoded as ordinary text: a special token's
    spelling in a transcript (`<|endoftext|>`) is counted as the characters it is, not refused."""

    def __init__(self) -> None:
        bindings = _bindings()
        if bindings is not None:
            self._rust = bindings.tokenizer_for_encoding("o200k_base")
            self._encode, self.decode = self._rust.encode, self._rust.decode
        else:  # another bpe-openai layout: its public (slower to import) API, same vocabulary
            import bpe_openai

            enc = bpe_openai.get_encoding("o200k_base")
            self._encode, self.decode = enc.encode_ordinary, enc.decode

    def encode(self, text: str) -> list[int]:
        try:
            return list(self._encode(text))
        except UnicodeEncodeError:  # lone surrogates (e.g. from a JSON escape): count them as U+FFFD
            return list(self._encode(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))


@functools.lru_cache(maxsize=1)
def _encoding() -> _Encoder:
    return _Encoder()


def count(text: str) -> int:
    """o200k tokens in `text`. The tokenizer loads on the first non-empty text."""
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
