"""Per-episode readers over raw record dicts (as `runners.records.store.load_cell` returns them):
the headline outcome (the score the benchmark declares as `Benchmark.outcome`), #Tok, a per-step
series a method declares (`Method.step_series`), and the stored transcript pieces an episode's
calls reference. Shared by the HTML report, the plots and W&B."""

from __future__ import annotations

from typing import Any

from runners.api import LogPath, method_tokens, read_path
from runners.records.transcripts import ShardedTranscriptReader, TranscriptReader


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


def transcript_of(
    rec: dict[str, Any],
    reader: TranscriptReader | ShardedTranscriptReader,
    calls: list[dict[str, Any]] | None = None,
    fragments: bool = False,
) -> dict[str, Any]:
    """The stored pieces one episode's calls (`_calls(rec)`, when the caller has them) reference, in
    stored form (deltas stay deltas, so a growing Full Context prompt stays linear in the report
    too): {"nodes", "blobs", "missing"}, read with one lookup of the episode's piece index, or a
    few queries in a store without it (`TranscriptReader.pieces`; `fragments`: stored JSON as read)."""
    if not reader.exists:
        return {"nodes": {}, "blobs": {}, "missing": []}
    calls = [c for c in (_calls(rec) if calls is None else calls) if c.get("prompt") is not None]
    got = reader.pieces(
        (c["prompt"] for c in calls),
        (c[k] for c in calls for k in ("reply", "reasoning", "tools", "reply_tool_calls") if c.get(k)),
        fragments,
    )
    return {"nodes": got.nodes, "blobs": got.blobs, "missing": sorted(got.missing_nodes | got.missing_blobs)}
