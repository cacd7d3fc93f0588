"""PACE relevance and selection maths (docs/pos-baselines.md §3): encoder, softmax weights, pressure,
thresholds and representation levels. Pure functions; no model calls."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

LEVELS = ("full", "detailed", "brief", "placeholder", "omit")  # budget step-down order (PACE code)


def _terms(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9_]+", text.lower())
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


class TfidfEncoder:
    """TF-IDF over word unigrams+bigrams, L2-normalised; idf is refit on the texts of each call
    (smooth idf, ln((1+n)/(1+df))+1). [harness choice] the offline fallback encoder of §3."""

    name = "tfidf-unigram-bigram"

    def encode(self, texts: list[str]) -> np.ndarray:
        docs = [Counter(_terms(t)) for t in texts]
        vocab = {term: i for i, term in enumerate(sorted({t for d in docs for t in d}))}
        if not vocab:
            return np.zeros((len(texts), 1))
        df = Counter(t for d in docs for t in d)
        n = len(docs)
        idf = {t: math.log((1 + n) / (1 + df[t])) + 1.0 for t in vocab}
        out = np.zeros((n, len(vocab)))
        for i, d in enumerate(docs):
            for t, c in d.items():
                out[i, vocab[t]] = c * idf[t]
            norm = np.linalg.norm(out[i])
            if norm > 0:
                out[i] /= norm
        return out


def make_encoder(name: str) -> Any:
    if name == "tfidf":
        return TfidfEncoder()
    if name == "minilm":
        from baselines.embedder import MiniLMEmbedder  # heavy: needs the mem0 extra

        return MiniLMEmbedder()
    raise ValueError(f"pace.encoder must be 'tfidf' or 'minilm', got {name!r}")


def relative_weights(query: np.ndarray, keys: np.ndarray, tau: float) -> np.ndarray:
    """w̃_i = M·softmax(cos(q, k_i)/τ) over the M older chunks (vectors are L2-normalised)."""
    m = keys.shape[0]
    if m == 0:
        return np.zeros(0)
    s = keys @ query / tau
    w = np.exp(s - s.max())
    return m * w / w.sum()


def pressure(t: int, t_max: int, prev_context_tokens: int, b_max: int) -> float:
    """P_t = max(t/T_max, |C_{t−1}|/B_max)."""
    return max(t / t_max, prev_context_tokens / b_max)


def thresholds(base: tuple[float, float, float], lam: float, p: float) -> tuple[float, float, float]:
    """(α_t, β_t, γ_t) = (α, β, γ)·(1 + λ·P_t)."""
    k = 1.0 + lam * p
    return base[0] * k, base[1] * k, base[2] * k


def level(w: float, th: tuple[float, float, float]) -> str:
    """w̃ > γ → full; (β, γ] → detailed; (α, β] → brief; else placeholder."""
    a, b, g = th
    return "full" if w > g else "detailed" if w > b else "brief" if w > a else "placeholder"


def step_down(levels: list[str], weights: list[float]) -> int | None:
    """Lower the lowest-weight chunk that can still go down one level ([harness choice] order:
    ascending weight, then oldest first); returns its index, None when all are omitted."""
    for i in sorted(range(len(levels)), key=lambda j: (weights[j], j)):
        if levels[i] != "omit":
            levels[i] = LEVELS[LEVELS.index(levels[i]) + 1]
            return i
    return None
