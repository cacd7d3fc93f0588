"""runners.tokens: o200k counts on bpe-openai's Rust tokenizer, loaded without the package's slow `__init__`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners import tokens

REPO = Path(__file__).resolve().parents[2]

TEXTS = [
    "hello",
    "héllo wörld 😀 日本語テキスト",
    '{"name": "get_user", "arguments": {"id": 7}}',
    "  \n\n\t x" + "word " * 300,
]


def test_a_special_tokens_spelling_is_counted_as_text() -> None:
    # bpe-openai's tiktoken-style encode() refuses "<|endoftext|>" (disallowed special token): a model reply
    # or a task text that spells it made the usage estimate raise. It is text here, counted as its characters.
    n = tokens.count("x <|endoftext|> y")
    assert n > 3  # several ordinary tokens (a special token would be one id, 199999)
    assert 199_999 not in tokens._encoding().encode("x <|endoftext|> y")
    assert tokens.truncate_tokens("<|endoftext|>", 100) == ["<|endoftext|>"]


def test_counts_and_pieces_match_the_packages_public_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = tokens._Encoder()
    monkeypatch.setattr(tokens, "_bindings", lambda: None)  # the fallback: bpe_openai.get_encoding("o200k_base")
    public = tokens._Encoder()
    assert type(fast._encode) is not type(public._encode)  # two different code paths are compared
    for text in TEXTS + ["a \ud800 b"]:  # a lone surrogate counts as U+FFFD on both
        ids = fast.encode(text)
        assert ids == public.encode(text) and ids
        for n in (1, 3):  # pieces cut inside a multi-byte character decode the same way
            assert [fast.decode(ids[i : i + n]) for i in range(0, len(ids), n)] == [
                public.decode(ids[i : i + n]) for i in range(0, len(ids), n)
            ]
    assert tokens.count("word" + " word" * 2047) == 2048


def test_a_process_that_counts_never_imports_the_bpe_openai_package() -> None:
    # The package's __init__ parses three vocabularies in Python (1-2 s per sweep process); the count
    # loads only the Rust module. Importing runners.tokens loads no tokenizer at all.
    code = (
        "import sys\n"
        "from runners import tokens\n"
        "bpe = lambda: [m for m in sys.modules if m.startswith('bpe_openai')]\n"
        "assert not bpe(), bpe()\n"
        "assert tokens.count('hello world') == 2\n"
        "assert 'bpe_openai' not in sys.modules and 'bpe_openai.compat' not in sys.modules, bpe()\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
