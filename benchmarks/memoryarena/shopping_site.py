"""A WebShop-style text store over a `Catalogue` (docs/memoryarena.md §3.1; princeton-nlp/WebShop
text mode): pages as visible strings joined by ` [SEP] `, one `search[kw]` or `click[v]` per
turn, `v` lower-cased and matched against the current page's buttons, ASINs and option values.
Anything else is a silent no-op (the page stays as it was), as in WebShop."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from benchmarks.memoryarena.catalogue import PRODUCT_WINDOW, Catalogue, Product, price_value

SEP = " [SEP] "
ACTION_RE = re.compile(r"(search|click)\[(.*?)\]", re.IGNORECASE | re.DOTALL)
BACK, NEXT, PREV, BUY = "back to search", "next >", "< prev", "buy now"
SUBPAGES = ("description", "features", "reviews")


def parse_action(text: str | None) -> tuple[str, str] | None:
    """(verb, argument) of the first `search[...]`/`click[...]` in text; MemoryArena's wrapper
    keeps the text after `Action:` if present. None when there is no action (total)."""
    if not isinstance(text, str):
        return None
    if "Action:" in text:
        text = text.split("Action:")[-1]
    m = ACTION_RE.search(text)
    return (m.group(1).lower(), m.group(2).strip()) if m else None


@dataclass
class Site:
    """One step episode's browsing state. `instruction` is shown on every page (MemoryArena puts
    the step instruction in place of WebShop's own)."""

    catalogue: Catalogue
    instruction: str
    page: str = "search"  # search | results | item | sub
    query: str = ""
    results: list[Product] = field(default_factory=list)
    page_no: int = 1
    asin: str | None = None
    sub: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    purchased: Product | None = None

    # --------------------------------------------------------------------------- rendering
    def _head(self) -> list[str]:
        return ["WebShop", "Instruction:", self.instruction]

    def render(self) -> str:
        parts = self._head()
        if self.page == "search":
            parts.append("Search")
        elif self.page == "results":
            parts += ["Back to Search", f"Page {self.page_no} (Total results: {len(self.results)})"]
            if self.page_no > 1:
                parts.append("< Prev")
            parts.append("Next >")
            for p in self.window():
                parts += [str(p["asin"]), str(p.get("name", "")), str(p.get("pricing", ""))]
        elif self.page == "item":
            p = self.product() or {}
            parts += ["Back to Search", "< Prev"]
            for opt, values in (p.get("customization_options") or {}).items():
                parts.append(str(opt))
                parts += [str(v.get("value", v)) if isinstance(v, dict) else str(v) for v in values]
            rating = p.get("average_rating")
            parts += [
                str(p.get("name", "")),
                f"Price: {p.get('pricing', '')}",
                f"Rating: {rating if rating not in (None, '') else 'N.A.'}",
                "Description",
                "Features",
                "Reviews",
                "Buy Now",
            ]
        else:
            p = self.product() or {}
            body = {
                "description": p.get("full_description") or p.get("description", ""),
                "features": " ".join(str(b) for b in p.get("small_description") or []),
                "reviews": " ".join(str(r) for r in p.get("reviews") or []) or "No reviews.",
            }[self.sub or "description"]
            parts += ["Back to Search", "< Prev", str(body)]
        return SEP.join(parts)

    def window(self) -> list[Product]:
        lo = (self.page_no - 1) * PRODUCT_WINDOW
        return self.results[lo : lo + PRODUCT_WINDOW]

    def product(self) -> Product | None:
        return self.catalogue.get(self.asin)

    def clickables(self) -> list[str]:
        if self.page == "results":
            return [BACK, NEXT] + ([PREV] if self.page_no > 1 else []) + [str(p["asin"]).lower() for p in self.window()]
        if self.page == "item":
            p = self.product() or {}
            vals = [
                str(v.get("value", v) if isinstance(v, dict) else v).lower()
                for vs in (p.get("customization_options") or {}).values()
                for v in vs
            ]
            return [BACK, PREV, *vals, *SUBPAGES, BUY]
        if self.page == "sub":
            return [BACK, PREV]
        return []

    # --------------------------------------------------------------------------- actions
    def step(self, verb: str, arg: str) -> bool:
        """Apply one action; False when it is not valid on this page (no-op)."""
        if verb == "search":
            if self.page != "search" or not arg.strip():
                return False
            self.query, self.results, self.page_no, self.page = arg, self.catalogue.search(arg), 1, "results"
            return True
        v = arg.strip().lower()
        if verb != "click" or v not in self.clickables():
            return False
        if v == BACK:
            self.page, self.asin, self.options = "search", None, {}
        elif v == NEXT:
            if self.page_no * PRODUCT_WINDOW < len(self.results):  # past the last page: nothing moves
                self.page_no += 1
        elif v == PREV:
            if self.page == "results":
                self.page_no -= 1
            elif self.page == "item":
                self.page, self.asin, self.options = "results", None, {}
            else:
                self.page, self.sub = "item", None
        elif self.page == "results":
            self.page, self.asin = "item", next(str(p["asin"]) for p in self.window() if str(p["asin"]).lower() == v)
        elif v in SUBPAGES:
            self.page, self.sub = "sub", v
        elif v == BUY:
            self.purchased = self.product()
        else:  # an option value
            for opt, vs in ((self.product() or {}).get("customization_options") or {}).items():
                if v in [str(x.get("value", x) if isinstance(x, dict) else x).lower() for x in vs]:
                    self.options[str(opt)] = v
        return True

    def summary(self, n: int = 1) -> str:
        """Purchase summary of MemoryArena's wrapper: `Purchase #n: <ASIN> ($<price>)`."""
        p = self.purchased or {}
        price = price_value(p.get("pricing"))
        return (
            f"Purchase completed.\nPurchase #{n}: {p.get('asin')} (${price:.2f})"
            if price is not None
            else f"Purchase completed.\nPurchase #{n}: {p.get('asin')} ($?)"
        )

    def state(self) -> dict[str, Any]:
        return {"page": self.page, "query": self.query, "page_no": self.page_no, "asin": self.asin}
