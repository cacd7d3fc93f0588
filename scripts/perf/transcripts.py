"""Transcript storage on a long Full Context episode: `python -m scripts.perf.transcripts [--steps 40]`.

One τ-airline fixture episode where the agent makes `steps - 1` read-only tool calls (cycling
through the domain's lookup tools with varying arguments) and then answers, so Full Context's
prompt grows every step. Prints, side by side:

- the episode record as stored before transcripts existed (no call text at all);
- the episode record with transcript references, and compacted as a finished cell keeps it (xz; in a
  cell of many records they compress further);
- naive transcripts: every call's messages and reply as JSON (what a plain call log costs);
- the distinct text: the distinct lines of everything sent and received;
- the content-addressed transcript (transcripts.sqlite file size, and its logical bytes),
  per episode and per call, and its ratio to the distinct text (target ≤ 1.5×).

`--writer N`: the writer's CPU per episode (`TranscriptStore.put`, commit included), index-first
(schema 3: a pack and an index row per episode) and with a row per blob and node beside the index
row (schema 2, `TranscriptStore(rows=True)`), on N episodes of 12 Full Context calls each (distinct
text per episode, a system prompt shared by all), alternating between two stores; and each store's
file bytes per episode. `HARNESS_TRANSCRIPT_ROWS=1` makes the storage figures those of schema 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import lzma
import tempfile
from pathlib import Path
from typing import Any

from runners.api import Completion, Decision, Message, Protocol, Role, ToolCall
from runners.backbones.scripted import ScriptedBackbone

TRANSCRIPT_FIELDS = {"prompt", "n_messages", "reply", "reasoning", "tools", "reply_tool_calls", "sampling", "error"}


def lookups(data: Any) -> list[ToolCall]:
    """Read-only airline calls with varying arguments."""
    users = list(data.db["users"]) if isinstance(getattr(data, "db", None), dict) else []
    out = []
    for day in range(1, 32):
        out.append(
            ToolCall(
                name="search_direct_flight",
                arguments={"origin": "SFO", "destination": "JFK", "date": f"2024-05-{day:02d}"},
            )
        )
        out.append(
            ToolCall(
                name="get_flight_status",
                arguments={"flight_number": f"HAT9{day % 2:02d}", "date": f"2024-05-{day:02d}"},
            )
        )
        out.append(
            ToolCall(
                name="get_reservation_details", arguments={"reservation_id": "FIX001" if day % 3 else f"NOPE{day}"}
            )
        )
        if users:
            out.append(ToolCall(name="get_user_details", arguments={"user_id": users[0]}))
    return out


class LongAgent(ScriptedBackbone):
    """Agent calls: `steps - 1` lookups, then a final message; other roles: the scripted oracle."""

    def __init__(self, steps: int, calls: list[ToolCall], offset: int = 0) -> None:
        super().__init__()
        self.steps, self.lookups, self.n, self.offset = steps, calls, 0, offset

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        if role != "agent" or protocol is None:
            return await super().complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        self.n += 1
        c = await super().complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        if self.n < self.steps:
            text = protocol.render(Decision(tool_calls=[self.lookups[(self.n + self.offset) % len(self.lookups)]]))
        else:
            text = protocol.render(Decision(message="I have checked everything; nothing else to change."))
        return c.model_copy(update={"text": text})


def _sizes(cell: Path) -> tuple[int, int]:
    """(sqlite file bytes, logical bytes: keys + stored payloads of blobs, packs, nodes and index rows)."""
    import sqlite3

    db = sqlite3.connect(cell / "transcripts.sqlite")
    db.execute("PRAGMA wal_checkpoint(PASSIVE)")  # a store open for writing keeps new pages in its log until then
    nodes = db.execute(
        "SELECT COALESCE(SUM(LENGTH(h) + LENGTH(parent) + 4 + LENGTH(pieces)), 0) FROM nodes"
    ).fetchone()[0]
    blobs = db.execute("SELECT COALESCE(SUM(LENGTH(h) + 1 + LENGTH(base) + LENGTH(data)), 0) FROM blobs").fetchone()[0]
    packs = db.execute("SELECT COALESCE(SUM(9 + LENGTH(data)), 0) FROM packs").fetchone()[
        0
    ]  # id, codec, compressed payloads
    index = db.execute("SELECT COALESCE(SUM(8 + LENGTH(k) + LENGTH(v)), 0) FROM episode_pieces").fetchone()[0]
    db.close()
    return (cell / "transcripts.sqlite").stat().st_size, nodes + blobs + packs + index


def _episode_text(ep: Any) -> tuple[int, int, set[str], int]:
    """(calls, naive bytes, distinct lines, last prompt chars) of one episode, read back from the store."""
    calls = list(ep.calls())
    naive = sum(len(json.dumps({"messages": c.messages, "text": c.text}, ensure_ascii=False).encode()) for c in calls)
    lines: set[str] = set()
    for c in calls:
        for m in c.messages:
            if isinstance(m.get("content"), str):
                lines.update(m["content"].splitlines(keepends=True))
        lines.update((c.text or "").splitlines(keepends=True))
    longest = max((len(json.dumps(c.messages, ensure_ascii=False)) for c in calls), default=0)
    return len(calls), naive, lines, longest


async def long_episodes(steps: int, root: Path, episodes: int) -> dict[str, Any]:
    from baselines.full_context import FullContext
    from benchmarks.tau.benchmark import TauBenchmark
    from runners.episode import Episode
    from runners.records.results import open_experiment
    from runners.records.transcripts import TranscriptStore

    bench = TauBenchmark(
        name="tau_airline", domain="airline", data_dir="fixtures", max_steps=4 * steps + 10, max_errors=10**6
    )
    task = bench.load_tasks()[0]
    cell = root / "perf" / "cell"
    store = TranscriptStore(cell).open()
    (cell / "manifest.json").write_text(json.dumps({"config": {}}))
    out: dict[str, Any] = {}
    with open(cell / "episodes.jsonl", "w") as f:
        for trial in range(episodes):
            ep = Episode(
                LongAgent(steps, lookups(bench.data()), offset=11 * trial),
                cell="cell",
                task_id=task.task_id,
                trial=trial,
            )
            rec = await ep.run(ep.make_env(bench, task), FullContext(ep.agent))
            store.put(rec)
            f.write(rec.model_dump_json() + "\n")
            f.flush()
            if trial == 0:
                out["file"], out["logical"] = _sizes(cell)
                out["steps"], out["status"] = len(rec.requests[0].steps) if rec.requests else 0, rec.status
                out["new_record"] = len(rec.model_dump_json().encode())
                out["new_record_xz"] = len(lzma.compress(rec.model_dump_json().encode() + b"\n"))
                ex = {"__all__": TRANSCRIPT_FIELDS}
                out["old_record"] = len(
                    rec.model_dump_json(
                        exclude={
                            "requests": {
                                "__all__": {"steps": {"__all__": {"calls": ex}}, "begin_calls": ex, "end_calls": ex}
                            },
                            "task_calls": ex,
                        }
                    ).encode()
                )
    store.close()
    file_n, logical_n = _sizes(cell)
    eps = open_experiment(root / "perf").cell("cell").episodes()
    texts = [_episode_text(e) for e in eps]
    out["calls"], out["naive"], first_lines, out["last_prompt_chars"] = texts[0]
    out["distinct"] = sum(len(x.encode()) for x in first_lines)
    if episodes > 1:  # marginal cost of one more episode in the same cell (the system prompt is shared)
        new = [sum(len(x.encode()) for x in lines) for _, _, lines, _ in texts[1:]]
        out["marginal_file"] = (file_n - out["file"]) / (episodes - 1)
        out["marginal_logical"] = (logical_n - out["logical"]) / (episodes - 1)
        out["marginal_distinct"] = sum(new) / (episodes - 1)
        out["episodes"] = episodes
    return out


def measure(steps: int, episodes: int = 1) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        return asyncio.run(long_episodes(steps, Path(d), episodes))


def _fc_record(k: int, calls: int) -> Any:
    """One episode of `calls` Full Context calls through the recording backbone (pending rows on its calls)."""
    from runners.api import Usage
    from runners.episode import RecordingBackbone
    from runners.records.schema import CallLog, EpisodeRecord, RequestRecord, StepRecord

    class Echo:
        name = model = "echo"

        async def complete(self, messages: Any, *, role: Any, protocol: Any = None, attempt: int = 0, **kw: Any) -> Any:
            return Completion(
                text=f"episode {k} reply {len(messages)} " + "r" * 200,
                role=role,
                model="echo",
                usage=Usage(prompt_tokens=1),
            )

    sink: list[CallLog] = []
    rb = RecordingBackbone(Echo(), sink)  # type: ignore[arg-type]
    history: list[dict[str, Any]] = [{"role": "system", "content": "rules of the game\n" * 100}]
    rr = RequestRecord(request={"index": 0, "request_id": "q", "text": "go"})
    for t in range(calls):
        history.append({"role": "user", "content": f"episode {k} observation {t}\n" + "o" * 400})
        c = asyncio.run(rb.complete(list(history), role="agent"))
        history.append({"role": "assistant", "content": c.text})
        rr.steps.append(StepRecord(t=t + 1, observation={}, decision={}, calls=list(sink)))
        sink.clear()
    return EpisodeRecord(cell="c", task_id=f"t{k}", trial=0, seed=0, requests=[rr])


def writer_cost(n: int, calls: int = 12) -> dict[str, float]:
    """Median CPU µs per `put`, index-first and with rows (alternating stores), and each store's
    file bytes per episode."""
    import statistics
    import time

    from runners.records.transcripts import TranscriptStore

    recs = [_fc_record(k, calls) for k in range(2 * n)]
    out: dict[str, list[float]] = {"index-first": [], "rows": []}
    with tempfile.TemporaryDirectory() as d:
        stores = {
            "index-first": TranscriptStore(Path(d) / "a", rows=False).open(),
            "rows": TranscriptStore(Path(d) / "b", rows=True).open(),
        }
        for k, rec in enumerate(recs):
            name = "index-first" if k % 2 else "rows"
            t = time.process_time()
            stores[name].put(rec)
            out[name].append((time.process_time() - t) * 1e6)
        for st in stores.values():
            st.close()
        sizes = {f"{k} bytes": stores[k].path.stat().st_size / n for k in stores}
    return {**{k: statistics.median(v[1:]) for k, v in out.items()}, **sizes}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--episodes", type=int, default=20, help="episodes in the cell for the marginal per-episode cost")
    ap.add_argument("--writer", type=int, default=0, help="time the writer on this many episodes per store instead")
    a = ap.parse_args(argv)
    if a.writer:
        w = writer_cost(a.writer)
        print(
            f"TranscriptStore.put, 12-call Full Context episodes, median CPU per episode over {a.writer} each: "
            f"index-first {w['index-first']:,.0f} µs, rows (schema 2) {w['rows']:,.0f} µs; file bytes per episode: "
            f"index-first {w['index-first bytes']:,.0f}, rows {w['rows bytes']:,.0f}"
        )
        return
    r = measure(a.steps, a.episodes)
    n = r["calls"]
    print(
        f"Full Context, tau_airline fixture: {r['steps']} agent steps, {n} calls ({r['status']}); "
        f"longest prompt {r['last_prompt_chars']:,} chars"
    )
    print(f"{'':44}{'bytes/episode':>14}{'bytes/call':>12}{'× distinct':>12}")
    rows = [
        ("record before transcripts (no call text)", r["old_record"]),
        ("record with transcript references", r["new_record"]),
        ("the same record compacted (xz, as a finished cell)", r["new_record_xz"]),
        ("naive transcript (every call's messages + reply)", r["naive"]),
        ("distinct text (distinct lines sent + received)", r["distinct"]),
        ("content-addressed transcript, logical bytes", r["logical"]),
        ("content-addressed transcript, sqlite file", r["file"]),
    ]
    for label, b in rows:
        print(f"{label:44}{b:>14,}{b / max(n, 1):>12,.0f}{b / max(r['distinct'], 1):>12.2f}")
    ratio = r["logical"] / max(r["distinct"], 1)
    print(
        f"naive / content-addressed (logical) = {r['naive'] / max(r['logical'], 1):.1f}×; "
        f"target: transcript ≤ 1.5× distinct text -> {ratio:.2f}× {'PASS' if ratio <= 1.5 else 'FAIL'}"
    )
    print(
        "(the sqlite file of a one-episode cell adds SQLite's fixed pages: schema, four tables, "
        "partly filled B-tree pages)"
    )
    if "marginal_file" in r:
        print(
            f"\none more episode in a cell of {r['episodes']} (mean over episodes 2..{r['episodes']}, "
            "each making different lookups;"
            " messages repeated across episodes, such as the system prompt, are stored once per cell):"
        )
        print(
            f"  its distinct text {r['marginal_distinct']:,.0f} B, transcript logical {r['marginal_logical']:,.0f} B "
            f"({r['marginal_logical'] / max(r['marginal_distinct'], 1):.2f}×), "
            f"sqlite file growth {r['marginal_file']:,.0f} B "
            f"({r['marginal_file'] / max(r['marginal_distinct'], 1):.2f}×)"
        )


if __name__ == "__main__":
    main()
