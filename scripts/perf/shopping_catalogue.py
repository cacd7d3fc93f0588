"""Full-product-set shopping search (`benchmarks.memoryarena.catalogue.FullCatalogue`, bm25s) at
WebShop-like sizes: index build time, peak memory growth, and the median search latency, side by
side with the reduced per-task catalogue (rank_bm25 over ~30 products) in one run.

    python -m scripts.perf.shopping_catalogue --sizes 10000 100000 1180000

Products are synthetic WebShop-shaped records (a name of 12 words and 5 bullets of 6 words drawn
from a 40,000-word Zipf-like vocabulary), since the real items_shuffle.json is not shipped.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import statistics
import time


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def products(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40_000)]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    words = rng.choices(vocab, weights=weights, k=n * 42)
    out, k = [], 0
    for i in range(n):
        name = " ".join(words[k : k + 12])
        bullets = [" ".join(words[k + 12 + 6 * j : k + 18 + 6 * j]) for j in range(5)]
        k += 42
        out.append({"asin": f"B{i:09d}", "name": name, "small_description": bullets, "pricing": "$10.00"})
    return out


def main(argv: list[str] | None = None) -> None:
    from benchmarks.memoryarena.catalogue import Catalogue, FullCatalogue

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=50)
    a = ap.parse_args(argv)
    rng = random.Random(1)
    print(
        "| products | build s | RSS growth MB (index + records) | median search ms | reduced (30 products) median ms |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in a.sizes:
        gc.collect()
        base = rss_mb()
        items = products(n)
        after_records = rss_mb()
        t0 = time.perf_counter()
        full = FullCatalogue(items)
        build = time.perf_counter() - t0
        grown = rss_mb() - base
        queries = [" ".join(rng.choice(items)["name"].split()[:4]) for _ in range(a.queries)]
        lat = []
        for q in queries:
            t = time.perf_counter()
            full.search(q)
            lat.append(1000 * (time.perf_counter() - t))
        small = Catalogue(items[:30])
        small.search("warm up")
        lat_small = []
        for q in queries:
            t = time.perf_counter()
            small.search(q)
            lat_small.append(1000 * (time.perf_counter() - t))
        print(
            f"| {n:,} | {build:.1f} | {grown:.0f} (records {after_records - base:.0f}) | "
            f"{statistics.median(lat):.1f} | "
            f"{statistics.median(lat_small):.2f} |",
            flush=True,
        )
        del full, items
        gc.collect()


if __name__ == "__main__":
    main()
