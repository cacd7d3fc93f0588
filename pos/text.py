"""Text heuristics PoS uses to compare gaps and to select subgraphs (docs/pos.md §3, §4, §13.4: keep
them bit-exact; tokenizer and stopwords are module constants)."""

from __future__ import annotations

import re
import unicodedata

STOPWORDS = frozenset(
    {"a", "an", "and", "are", "be", "gap", "gap_type", "is", "of", "or", "reason", "target", "the", "to"}
)
"""§3 stopwords (gap equivalence and the §7 projection)."""
FOCUS_STOPWORDS = STOPWORDS - {"gap"}
"""§4 frontier-relevant subgraph: the §3 stopwords except `gap`."""
TOKEN = re.compile(r"\w+")
EQUIVALENCE_THRESHOLD = 0.8
_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    """NFKC → casefold → collapse whitespace (§3 `norm`)."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", str(text)).casefold()).strip()


def tokens(text: str) -> set[str]:
    """§3 tokens: `\\w+` over `norm(text)` minus STOPWORDS."""
    return set(TOKEN.findall(norm(text))) - STOPWORDS


def focus_tokens(text: str) -> set[str]:
    """§4 tokens: `\\w+` over casefolded text (no NFKC) minus FOCUS_STOPWORDS."""
    return set(TOKEN.findall(str(text).casefold())) - FOCUS_STOPWORDS


def quote_norm(text: str) -> str:
    """§5 evidence normalisation: casefold, whitespace collapsed."""
    return _WS.sub(" ", str(text).casefold()).strip()


def gaps_semantically_equivalent(a: str, b: str) -> bool:
    """Whether two gap targets name the same gap (§3; targets only, reasons ignored)."""
    na, nb = norm(a), norm(b)
    if na == nb:
        return True
    ta, tb = set(TOKEN.findall(na)) - STOPWORDS, set(TOKEN.findall(nb)) - STOPWORDS
    if len(ta) < 2 or len(tb) < 2:
        return False
    inter = len(ta & tb)
    score = 0.7 * inter / min(len(ta), len(tb)) + 0.3 * inter / len(ta | tb)
    return score >= EQUIVALENCE_THRESHOLD
