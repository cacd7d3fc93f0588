"""What each memory costs beyond its tokens, on this machine (medians, milliseconds).

1. BM25 (docs/baselines.md §2): retrieval latency at 100, 1,000 and 10,000 stored pieces, and the
   rebuild-on-add cost at each size (upstream rebuilds the whole index on every add).
2. ReasoningBank (§3.2): retrieval latency at the same sizes — embed the instruction-wrapped query
   with local MiniLM, cosine against every record, top 5. The stored records carry random unit
   vectors (retrieval cost does not depend on their content); the cost of embedding one chunk at
   add time is reported apart. Needs the `mem0` extra (`--skip-minilm` to leave it out).
3. Mem0 (§4): `add` and `search` latency with MiniLM + FAISS, LLM time excluded (an instant
   in-process LLM answers one fact and ADD): add(infer=True), add(infer=False), search.
4. `--steps`: the harness's per-step overhead outside the backbone for these methods
   (scripts/perf/harness.py), to read the numbers above against.

Run: `python -m scripts.perf.memory_latency [--queries 30] [--steps]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, cast

if TYPE_CHECKING:
    from runners.api import Backbone, Completion, Message, Protocol, Role

SIZES = (100, 1_000, 10_000)
WORDS = (
    "series limit converge sum integral matrix prime lemma proof bound order group ring field vector "
    "product price cart size colour hotel flight dinner budget traveller day order refund account user"
).split()


def synthetic_chunk(rng: random.Random, i: int) -> str:
    body = " ".join(rng.choices(WORDS, k=60)) + f" item{i}"
    return f"## Task:\nsubtask {i}: {' '.join(rng.choices(WORDS, k=8))}\n## solution:\n{body}"


def median_ms(fn: Callable[[], object], n: int) -> float:
    xs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        xs.append(time.perf_counter() - t)
    return 1000 * statistics.median(xs)


def bm25_rows(queries: int) -> list[tuple]:
    from baselines.bm25 import BM25Store, OkapiIndex

    rng = random.Random(0)
    rows = []
    for n in SIZES:
        store = BM25Store()
        store.add_many([synthetic_chunk(rng, i) for i in range(n)])
        qs = [" ".join(rng.choices(WORDS, k=12)) for _ in range(queries)]
        it = iter(qs * 2)
        search = median_ms(lambda: store.search(next(it)), queries)
        rebuild = median_ms(lambda: OkapiIndex(store.tokens), 3)
        rows.append(("bm25", n, search, f"rebuild on add {rebuild:.1f} ms"))
    return rows


def reasoningbank_rows(queries: int) -> list[tuple]:
    import numpy as np

    from baselines.reasoningbank import ReasoningBank
    from baselines.embedder import MiniLMEmbedder

    rng = random.Random(1)
    emb = MiniLMEmbedder()
    emb.encode(["warm up"])
    chunk = synthetic_chunk(rng, 0)
    add_embed = median_ms(lambda: emb.encode([chunk[:4096]]), 10)
    rows = []
    for n in SIZES:
        rb = ReasoningBank(backbone=cast("Backbone", None), embedder="minilm")  # no model call: only the index is timed
        vecs = np.random.default_rng(n).standard_normal((n, emb.dims)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        rb.records = [{"timestamp": None, "task_id": str(i), "memory_items": [], "status": "success"} for i in range(n)]
        rb._vecs = list(vecs)
        rb.search("warm up")  # builds the record matrix once
        qs = iter([" ".join(rng.choices(WORDS, k=12)) for _ in range(queries)] * 2)
        search = median_ms(lambda: rb.search(next(qs)), queries)
        rows.append(("reasoningbank", n, search, f"embed one chunk at add {add_embed:.1f} ms"))
    return rows


async def mem0_rows(queries: int, prefill: int) -> list[tuple]:
    from baselines.mem0_method import Mem0Memory
    from runners.api import Completion

    class InstantLLM:
        """In-process stand-in for the model: one fact, then ADD (no model time)."""

        name = model = "instant"

        async def complete(
            self,
            messages: list[Message],
            *,
            role: Role,
            protocol: Protocol | None = None,
            attempt: int = 0,
            **sampling: Any,
        ) -> Completion:
            if messages[0]["role"] == "system":
                text = json.dumps({"facts": [messages[-1]["content"][-80:]]})
            else:
                text = json.dumps({"memory": [{"id": "new", "text": f"fact {time.perf_counter_ns()}", "event": "ADD"}]})
            return Completion(text=text, role=role, model="instant")

    from runners.api import TaskView

    m = Mem0Memory(cast("Backbone", InstantLLM()))  # a duck-typed stand-in
    t = time.perf_counter()
    await m.begin_task(TaskView(task_id="perf", benchmark="perf"))
    setup = time.perf_counter() - t
    rng = random.Random(2)
    m.infer = False
    for i in range(prefill):
        await m.add_chunk(synthetic_chunk(rng, i))

    async def timed(coro_fn: Callable[[], Awaitable[object]], n: int) -> float:
        xs = []
        for _ in range(n):
            t0 = time.perf_counter()
            await coro_fn()
            xs.append(time.perf_counter() - t0)
        return 1000 * statistics.median(xs)

    raw = await timed(lambda: m.add_chunk(synthetic_chunk(rng, 0)), queries)
    m.infer = True
    inferred = await timed(lambda: m.add_chunk(synthetic_chunk(rng, 0)), queries)
    search = await timed(lambda: m.retrieve(" ".join(rng.choices(WORDS, k=12))), queries)
    size = prefill + 2 * queries
    return [
        ("mem0 add(infer=False)", size, raw, f"Memory.from_config {1000 * setup:.0f} ms (first includes model load)"),
        ("mem0 add(infer=True)", size, inferred, "2 LLM calls answered instantly; their model time excluded"),
        ("mem0 search", size, search, "limit=100, FAISS cosine"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=30, help="timed calls per size")
    ap.add_argument("--mem0-prefill", type=int, default=100, help="memories stored before timing Mem0")
    ap.add_argument("--skip-minilm", action="store_true", help="leave out ReasoningBank and Mem0 (no mem0 extra)")
    ap.add_argument("--steps", action="store_true", help="also print the harness per-step overhead of these methods")
    a = ap.parse_args()
    rows = bm25_rows(a.queries)
    if not a.skip_minilm:
        rows += reasoningbank_rows(a.queries)
        rows += asyncio.run(mem0_rows(a.queries, a.mem0_prefill))
    print(f"{'memory operation':<24} {'items':>7} {'median ms':>10}  note")
    for name, n, ms, note in rows:
        print(f"{name:<24} {n:>7} {ms:>10.2f}  {note}")
    if a.steps:
        from scripts.perf.harness import step_overheads

        print(f"\n{'method':<24} {'steps':>7} {'median ms/step outside backbone':>32}")
        for m in ("full_context", "bm25", "zipact", "zipact_bm25", "reasoningbank", "mem0"):
            xs = step_overheads(m)
            print(f"{m:<24} {len(xs):>7} {1000 * statistics.median(xs):>32.2f}")


if __name__ == "__main__":
    main()
