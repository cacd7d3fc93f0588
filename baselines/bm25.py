"""BM25 memory as MemoryArena ships it (`memory/memory_systems/rag.py`, docs/baselines.md §2).

- tokenizer: maximal runs of `[a-z0-9]` in the lower-cased text (no stemming, no stopwords);
- chunking: every stored chunk is cut into pieces of at most 2,048 o200k tokens, each piece is
  indexed as its own document; blank pieces are skipped;
- scoring: Okapi BM25 (k1 1.5, b 0.75, epsilon 0.25), computed here with the exact arithmetic
  of `rank_bm25.BM25Okapi` (tests/baselines/test_bm25.py checks the scores are identical), but
  with per-term postings so a query costs O(matching documents) instead of O(corpus × terms);
- index: rebuilt from scratch on every add, as upstream (rank_bm25 has no incremental add);
- retrieval: the top 3 pieces whatever the sign of their score; ties keep insertion order.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from baselines.memory import MemoryMethod
from runners.api import Backbone
from runners.tokens import truncate_tokens

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """MemoryArena's BM25 tokenizer: `re.findall(r"[a-z0-9]+", text.lower())`."""
    return _TOKEN.findall(text.lower())


class OkapiIndex:
    """Okapi BM25 over token lists, score-identical to `rank_bm25.BM25Okapi` (same IDF floor:
    negative IDFs become `epsilon · mean IDF`, mean taken over every term in the corpus)."""

    def __init__(self, corpus: list[list[str]], *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.corpus_size = len(corpus)
        self.doc_len = np.array([len(d) for d in corpus], dtype=float)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(corpus):
            freqs: dict[str, int] = {}
            for w in doc:
                freqs[w] = freqs.get(w, 0) + 1
            for w, f in freqs.items():  # first-occurrence order, as rank_bm25's `nd` dict
                ids, tfs = postings.setdefault(w, ([], []))
                ids.append(i)
                tfs.append(f)
        self.postings = {
            w: (np.array(ids, dtype=np.int64), np.array(tfs, dtype=float)) for w, (ids, tfs) in postings.items()
        }
        num_doc = int(self.doc_len.sum())
        self.avgdl = num_doc / self.corpus_size if self.corpus_size else 0.0
        # rank_bm25 `_calc_idf`, same summation order.
        self.idf: dict[str, float] = {}
        idf_sum = 0.0
        negative: list[str] = []
        for w, (doc_ids, _) in self.postings.items():
            freq = len(doc_ids)
            idf = math.log(self.corpus_size - freq + 0.5) - math.log(freq + 0.5)
            self.idf[w] = idf
            idf_sum += idf
            if idf < 0:
                negative.append(w)
        if self.idf:
            eps = self.epsilon * (idf_sum / len(self.idf))
            for w in negative:
                self.idf[w] = eps
        if self.avgdl > 0:
            self.norm = self.k1 * (1 - self.b + self.b * self.doc_len / self.avgdl)
        else:  # every document is empty: nothing can match
            self.norm = np.ones(self.corpus_size)

    def get_scores(self, query: list[str]) -> np.ndarray:
        """Score of every document for `query` (a token list; repeated tokens count again)."""
        score = np.zeros(self.corpus_size)
        for q in query:
            hit = self.postings.get(q)
            if hit is None:
                continue
            ids, tf = hit
            score[ids] += self.idf[q] * (tf * (self.k1 + 1) / (tf + self.norm[ids]))
        return score

    def top(self, query: list[str], k: int) -> list[int]:
        """Indices of the k best documents, best first; ties keep insertion order."""
        if self.corpus_size == 0 or not query or k <= 0:
            return []
        scores = self.get_scores(query)
        return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


class BM25Store:
    """MemoryArena's BM25 memory: add chunks, retrieve the top-k pieces for a query."""

    def __init__(
        self, *, chunk_tokens: int = 2048, top_k: int = 3, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> None:
        if chunk_tokens < 1 or top_k < 0:
            raise ValueError("bm25: chunk_tokens must be >= 1 and top_k >= 0")
        self.chunk_tokens, self.top_k = chunk_tokens, top_k
        self.okapi = {"k1": k1, "b": b, "epsilon": epsilon}
        self.pieces: list[str] = []
        self.tokens: list[list[str]] = []
        self.index = OkapiIndex([], **self.okapi)

    def __len__(self) -> int:
        return len(self.pieces)

    def add(self, chunk: str) -> int:
        """Store one chunk (split into ≤ chunk_tokens pieces) and rebuild the index. Returns the
        number of pieces added."""
        return self.add_many([chunk])

    def add_many(self, chunks: list[str]) -> int:
        """Store several chunks with one rebuild (same index as adding them one by one)."""
        n = 0
        for chunk in chunks:
            for piece in truncate_tokens(chunk, self.chunk_tokens):
                if not piece.strip():  # rag.py add_chunk: blank pieces are not indexed
                    continue
                self.pieces.append(piece)
                self.tokens.append(tokenize(piece))
                n += 1
        self.index = OkapiIndex(self.tokens, **self.okapi)  # rebuilt from scratch (upstream)
        return n

    def search(self, query: str) -> list[str]:
        """Top-k pieces for `query` regardless of score; [] when empty store or empty query."""
        return [self.pieces[i] for i in self.index.top(tokenize(query), self.top_k)]


class BM25Memory(MemoryMethod):
    """Memory-system baseline with BM25 retrieval (FlowState §3.1, B.3 memory layout)."""

    def __init__(
        self,
        backbone: Backbone,
        *,
        chunk_tokens: int = 2048,
        top_k: int = 3,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        **params: Any,
    ) -> None:
        super().__init__(backbone, **params)
        self.store = BM25Store(chunk_tokens=chunk_tokens, top_k=top_k, k1=k1, b=b, epsilon=epsilon)

    async def add_chunk(self, chunk: str) -> None:
        self.store.add(chunk)

    async def retrieve(self, query: str) -> list[str]:
        return self.store.search(query)
