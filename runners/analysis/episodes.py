"""Per-episode readers over raw record dicts (as `runners.records.store.load_cell` returns them):
the headline outcome (the score the benchmark declares as `Benchmark.outcome`), #Tok, a per-step
series a method declares (`Method.step_series`), and the stored transcript pieces an episode's
calls reference. Shared by the HTML report, the plots and W&B."""

from __future__ import annotations

import json
from typing import Any

from runners.api import LogPath, method_tokens, read_path
from runners.records.transcripts import ShardedTranscriptReader, TranscriptError, TranscriptReader


def episode_success(rec: dict[str, Any], outcome: str = "success") -> float | None:
    """The episode's outcome in [0, 1]: its score `outcome` (the benchmark's `Benchmark.outcome`),
    if it has one."""
    v = (rec.get("scores") or {}).get(outcome)
    return float(v) if isinstance(v, (bool, int, float)) else None


def _calls(rec: dict[str, Any]) -> list[dict[str, Any]]:
    out = list(rec.get("task_calls") or [])
    for rr in rec.get("requests") or []:
        out += rr.get("begin_calls") or []
        for s in rr.get("steps") or []:
            out += s.get("calls") or []
        out += rr.get("end_calls") or []
    return out + list(rec.get("unfinished_calls") or [])


def episode_tokens(rec: dict[str, Any]) -> int:
    """#Tok of one episode (runners.api.method_tokens: method-side roles only)."""
    return method_tokens(rec.get("usage_by_role") or {})


def step_series(rec: dict[str, Any], path: LogPath) -> list[float | None]:
    """The number `path` names in each step's method log (`Method.step_series`), None where a step
    logged none."""
    out: list[float | None] = []
    for rr in rec.get("requests") or []:
        for s in rr.get("steps") or []:
            v = read_path(s.get("method") or {}, path)
            out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None)
    return out


def transcript_of(rec: dict[str, Any], reader: TranscriptReader | ShardedTranscriptReader) -> dict[str, Any]:
    """The stored pieces one episode's calls reference, in stored form (deltas stay deltas, so a
    growing Full Context prompt stays linear in the report too): {"nodes", "blobs", "missing"}."""
    nodes: dict[str, list[Any]] = {}
    blobs: dict[str, list[Any]] = {}
    missing: list[str] = []
    if not reader.exists:
        return {"nodes": nodes, "blobs": blobs, "missing": missing}
    seen: dict[str, list[Any]] = reader.__dict__.setdefault("_export_cache", {})  # shared by the cell's episodes

    def stored(h: str) -> list[Any] | None:
        if h not in seen:
            try:
                base, payload = reader.stored(h)
            except TranscriptError:
                return None
            seen[h] = (
                ["d", base, json.loads(payload)]
                if base is not None
                else ["t", payload.decode("utf-8", "surrogatepass")]
            )
            if len(seen) > 20000:
                seen.clear()
                seen[h] = stored(h)  # type: ignore[assignment]
        return seen[h]

    def blob(h: str) -> None:
        while h and h not in blobs:
            v = stored(h)
            if v is None:
                missing.append(h)
                return
            blobs[h] = v
            if v[0] != "d":
                return
            h = v[1]

    for c in _calls(rec):
        if c.get("prompt") is None:
            continue
        h = c["prompt"]
        while h and h not in nodes:
            try:
                parent, take, new, tail = reader.node(h)
            except TranscriptError:
                missing.append(h)
                break
            nodes[h] = [parent, take, new, tail]
            for m in new:
                blob(m)
            h = parent
        for k in ("reply", "reasoning", "tools", "reply_tool_calls"):
            if c.get(k):
                blob(c[k])
    return {"nodes": nodes, "blobs": blobs, "missing": missing}
