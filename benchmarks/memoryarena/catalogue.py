"""The offline reduced product catalogue for Bundled Web Shopping (docs/memoryarena.md §3.1 "Offline
reduction" [harness choice]) and the task-text parsing it needs (§2.1, upstream `task_files.py`).

Records use WebShop `items_shuffle.json` field names (`asin`, `name`, `pricing`, `average_rating`,
`product_category`, `small_description`, `full_description`, `customization_options`), so a real
product file can drop in. Sources, in order: a catalogue JSON file (an object mapping task id →
records, or a list of records shared by every task, e.g. WebShop's own file), else a synthetic
per-task catalogue built from the option lists (see `synthetic_catalogue`). Search is local BM25
over name + bullets, top 50, ties broken by ASIN. Results are labelled "reduced catalogue": they are
not comparable with the paper's full 1.18M-product store."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.memoryarena.shopping_score import substring_matches

Product = dict[str, Any]
SEARCH_RETURN_N = 50  # WebShop SEARCH_RETURN_N
PRODUCT_WINDOW = 10  # WebShop PRODUCT_WINDOW
_TOKEN = re.compile(r"[a-z0-9]+")


# ----------------------------------------------------------------------------- task text
def preamble(questions: Sequence[str]) -> str:
    """Upstream: `questions[0]` before the first `Product\\s+1:` (case-insensitive)."""
    m = re.search(r"Product\s+1:", questions[0], re.IGNORECASE)
    return questions[0][: m.start()] if m else ""


def section(questions: Sequence[str], i: int) -> str:
    """Section of product i (1-based): from `Product i:` in `questions[i-1]` to its end."""
    q = questions[i - 1]
    m = re.search(rf"Product\s+{i}:", q, re.IGNORECASE)
    return q[m.start() :] if m else q


def option_names(text: str) -> list[str]:
    """Bulleted names after the `Available Options` line of a section (total; [] if none)."""
    m = re.search(r"Available Options[^\n]*\n", text, re.IGNORECASE)
    if not m:
        return []
    names: list[str] = []
    for line in text[m.end() :].splitlines():
        s = line.strip()
        b = re.match(r"^(?:[-*•]|\d+[.)])\s+(.*)$", s)
        if b:
            names.append(b.group(1).strip())
        elif names and (not s or s.startswith(("**", "#"))):
            break
    return names


def goal(text: str) -> str:
    m = re.search(r"Goal:?\**:?\s*(.*)", text, re.IGNORECASE)
    return m.group(1).strip() if m else ""


# ----------------------------------------------------------------------------- catalogue records
def synthetic_asin(task_id: str, name: str) -> str:
    """Deterministic synthetic `B0…` ASIN (10 characters) for a distractor option."""
    h = hashlib.sha256(f"{task_id}/{name}".encode()).hexdigest().upper()
    return "B0" + "".join(c for c in h if c.isalnum())[:8]


def bullets(name: str) -> list[str]:
    """Bullet points derived from the name alone (no gold attribute reaches the page)."""
    return [p.strip() for p in re.split(r",|\s-\s|\|", name) if p.strip()]


def synthetic_catalogue(row: dict[str, Any]) -> list[Product]:
    """Per-task catalogue from the option lists [harness choice]: the option that shares most
    gold attributes (substring test; first on ties) gets the target ASIN, the others synthetic
    ASINs. Prices and ratings are synthetic and arranged so that the target wins the section's
    goal (highest-rated / highest / lowest price); the real values live only in the product DB."""
    out: list[Product] = []
    seen: set[str] = set()
    cat = str(row.get("category", "shopping")).split("_item_")[0]
    for i, ans in enumerate(row["answers"], 1):
        sec = section(row["questions"], i)
        names = option_names(sec)
        if not names:
            continue
        hits = [sum(substring_matches(n, ans.get("attributes", []))) for n in names]
        t = hits.index(max(hits))
        rng = random.Random(f"{row.get('id')}/{i}")
        prices = sorted(round(rng.uniform(8, 60), 2) for _ in names)
        ratings = sorted(round(rng.uniform(3.0, 4.6), 1) for _ in names)
        g = goal(sec).lower()
        heading = re.search(r"###\s*(.*)", sec)
        rest = {k: r for r, k in enumerate(x for x in range(len(names)) if x != t)}
        for j, n in enumerate(names):
            target = j == t
            if "lowest" in g or "cheapest" in g:
                price = prices[0] if target else prices[1:][rest[j]]
            elif "highest price" in g or "most expensive" in g:
                price = prices[-1] if target else prices[:-1][rest[j]]
            else:
                price = prices[j]
            if "rat" in g:  # highest-rated goal: the target is strictly best
                rating = round(ratings[-1] + 0.2, 1) if target else ratings[:-1][rest[j]]
            else:
                rating = ratings[j]
            asin = str(ans["target_asin"]) if target else synthetic_asin(str(row.get("id")), n)
            if asin in seen:
                continue
            seen.add(asin)
            out.append(
                {
                    "asin": asin,
                    "name": n,
                    "pricing": f"${price:.2f}",
                    "average_rating": rating,
                    "product_category": f"{cat.title()} › {heading.group(1).strip() if heading else 'Item'}",
                    "small_description": bullets(n),
                    "full_description": n,
                    "customization_options": {},
                    "synthetic": True,
                }
            )
    return out


def _key(name: Any) -> str:
    return " ".join(str(name or "").lower().split())


class ProductIndex:
    """A full product list (e.g. WebShop `items_shuffle.json`) indexed by ASIN and by name."""

    def __init__(self, products: Sequence[Product]) -> None:
        self.products = [p for p in products if isinstance(p, dict) and p.get("asin")]
        self.by_asin = {str(p["asin"]).upper(): p for p in self.products}
        self.by_name: dict[str, Product] = {}
        for p in self.products:
            self.by_name.setdefault(_key(p.get("name")), p)

    def task_catalogue(self, row: dict[str, Any]) -> list[Product]:
        """Per-task reduction: each step's target record (by ASIN) and the products whose name
        equals an option name (case- and space-insensitive); options found in neither keep the
        synthetic record of `synthetic_catalogue`, and a target missing from the list too."""
        targets = {str(a["target_asin"]).upper() for a in row["answers"]}
        out = [self.by_asin[t] for t in sorted(targets) if t in self.by_asin]
        names = {_key(p.get("name")) for p in out}
        for p in synthetic_catalogue(row):
            if str(p["asin"]).upper() in targets:
                if str(p["asin"]).upper() not in self.by_asin:
                    out.append(p)
                continue
            real = self.by_name.get(_key(p["name"]))
            if _key(p["name"]) in names:
                continue
            out.append(real if real is not None else p)
            names.add(_key(p["name"]))
        return out


def load_catalogues(path: str | Path) -> dict[str, list[Product]] | list[Product]:
    """A catalogue file: {task id: [records]} or [records] (shared by all tasks)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(
            f"shopping catalogue not found: {p}; set benchmark.catalogue_path to a JSON file "
            "({task id: [products]} or a product list), or null for the synthetic per-task catalogue"
        )
    from runners.inputs import read_json

    data = read_json(p)  # lone surrogates replaced (noted for the manifest); damaged files name file and line
    if not isinstance(data, (dict, list)):
        raise ValueError(f"{p}: a catalogue is a JSON object (task id → products) or a list of products")
    return data


def price_value(pricing: Any) -> float | None:
    """First number of a WebShop `pricing` ("$12.99", "$10.00 - $15.00", [12.99]); None if none."""
    if isinstance(pricing, (int, float)):
        return float(pricing)
    if isinstance(pricing, list) and pricing:
        return price_value(pricing[0])
    m = re.search(r"\d+(?:\.\d+)?", str(pricing or "").replace(",", ""))
    return float(m.group(0)) if m else None


# ----------------------------------------------------------------------------- search
def tokens(text: str) -> list[str]:
    return _TOKEN.findall((text or "").lower())


class Catalogue:
    """Products of one task with a BM25 index (rank_bm25 defaults) over name + bullets."""

    def __init__(self, products: Sequence[Product]) -> None:
        self.products = [p for p in products if isinstance(p, dict) and p.get("asin")]
        self.by_asin = {str(p["asin"]).upper(): p for p in self.products}
        self._bm25: Any = None  # rank_bm25.BM25Okapi, built on first search

    def get(self, asin: str | None) -> Product | None:
        return self.by_asin.get(str(asin or "").strip().upper())

    def search(self, query: str, n: int = SEARCH_RETURN_N) -> list[Product]:
        """Top `n` products sharing a token with the query, by BM25 score then ASIN."""
        q = tokens(query)
        if not q or not self.products:
            return []
        if self._bm25 is None:
            from rank_bm25 import BM25Okapi

            docs = [
                tokens(" ".join([str(p.get("name", ""))] + [str(b) for b in p.get("small_description") or []]))
                for p in self.products
            ]
            self._docs = [set(d) for d in docs]
            self._bm25 = BM25Okapi([d or ["_"] for d in docs])
        scores = self._bm25.get_scores(q)
        hits = [(-s, str(p["asin"]), p) for s, p, d in zip(scores, self.products, self._docs) if d & set(q)]
        return [p for _, _, p in sorted(hits, key=lambda h: (h[0], h[1]))[:n]]


class FullCatalogue(Catalogue):
    """The whole product set (upstream searches WebShop's 1.18M products) behind one `bm25s`
    sparse BM25 index over name + bullets, built once and shared by every task. Same tokens and
    ranking rule as `Catalogue` (BM25 score, ties by ASIN, only products sharing a query token)."""

    def __init__(self, products: Sequence[Product]) -> None:
        super().__init__(products)
        import bm25s

        docs = [
            tokens(" ".join([str(p.get("name", ""))] + [str(b) for b in p.get("small_description") or []]))
            for p in self.products
        ]
        self._bm25s = bm25s.BM25()
        self._bm25s.index([d or ["_"] for d in docs], show_progress=False)
        self._vocab = {t for d in docs for t in d}

    def search(self, query: str, n: int = SEARCH_RETURN_N) -> list[Product]:
        q = [t for t in tokens(query) if t in self._vocab]
        if not q or not self.products:
            return []
        k = min(len(self.products), max(4 * n, n + 50))  # extra candidates so ties at the cut break by ASIN
        idx, scores = self._bm25s.retrieve([q], k=k, show_progress=False)
        hits = [
            (-float(sc), str(self.products[i]["asin"]), self.products[i]) for i, sc in zip(idx[0], scores[0]) if sc > 0
        ]
        return [p for _, _, p in sorted(hits, key=lambda h: (h[0], h[1]))[:n]]


class CatalogueSource:
    """Where each task's catalogue comes from: a catalogue file's data ({task id: [products]} or
    a product list) or None (synthetic). A product list (the real product file) is searched whole
    by default (`scope="global"`/`"auto"`, one `FullCatalogue`, as upstream); `scope="task"` reduces
    it per task (targets + products named in the options), the labelled reduced mode."""

    def __init__(self, data: dict[str, list[Product]] | list[Product] | None = None, scope: str = "auto") -> None:
        if scope not in ("auto", "task", "global"):
            raise ValueError(f"catalogue_scope must be 'auto', 'task' or 'global', got {scope!r}")
        if scope == "auto":
            scope = "global" if isinstance(data, list) else "task"
        self.data, self.scope = data, scope
        self._index: ProductIndex | None = None
        self._global: Catalogue | None = None

    def for_task(self, row: dict[str, Any]) -> Catalogue:
        if isinstance(self.data, list):
            if self.scope == "global":
                self._global = self._global or FullCatalogue(self.data)
                return self._global
            self._index = self._index or ProductIndex(self.data)
            return Catalogue(self._index.task_catalogue(row))
        if isinstance(self.data, dict) and str(row.get("id")) in self.data:
            return Catalogue(self.data[str(row["id"])])
        return Catalogue(synthetic_catalogue(row))


def catalogue_mode(source: CatalogueSource) -> str:
    """'full product set' or 'reduced catalogue' (every manifest and table says which)."""
    return "full product set" if isinstance(source.data, list) and source.scope == "global" else "reduced catalogue"
