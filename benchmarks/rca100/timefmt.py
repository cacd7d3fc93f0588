"""Time rendering for RCA-100 tools: every time is printed in Asia/Shanghai (+08:00, no DST
since 1991, so a fixed offset is exact) (docs/pos-benchmarks.md §2.2)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

SHANGHAI = timezone(timedelta(hours=8), "Asia/Shanghai")
_DIV = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def guess_unit(value: float) -> str:
    """Epoch unit by magnitude (for columns whose unit the schema does not fix, e.g. alerts.time)."""
    v = abs(value)
    return "ns" if v >= 1e17 else "us" if v >= 1e14 else "ms" if v >= 1e11 else "s"


def fmt_epoch(value: object, unit: str | None = None) -> str:
    """Epoch number → 'YYYY-MM-DD HH:MM:SS+08:00'; strings pass through unchanged."""
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return str(value)  # the string given (not a number)
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if v != v:  # NaN
        return ""
    u = unit or guess_unit(v)
    return datetime.fromtimestamp(v / _DIV[u], SHANGHAI).isoformat(sep=" ", timespec="seconds")


def fmt_iso(value: object) -> str:
    """An ISO-8601 string (k8s event timestamps) in +08:00; unparsable text passes through."""
    text = str(value or "")
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(SHANGHAI).isoformat(sep=" ", timespec="seconds")
