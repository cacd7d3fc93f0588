"""Reading results in Python: experiment → cells → episodes → requests → steps → calls.

    from runners.records.results import open_experiment

    exp = open_experiment("results/offline_demo")
    cell = exp.cells[0]                       # or exp.cell("full_context__scripted__...")
    ep = cell.episode("formal_reasoning_math-0", trial=0)
    for step in ep.steps:                     # every request's steps, in order
        for call in step.calls:
            call.messages                     # the exact message list the backbone received
            call.text                         # the raw text it returned (None: failed call)

A tool that only needs the raw record dicts of one cell (its directory, its `episodes.jsonl`, or
its compressed `episodes.jsonl.zst`, or the `episodes.jsonl.xz` of a cell finished before zstd)
reads them with `episode_records(path)`.

Records are the pydantic models of `runners.records.schema` (`EpisodeRecord`, `RequestRecord`,
`StepRecord`, `CallLog`); `Call` adds the transcript (`messages`, `text`, `reasoning`, `tools`)
read lazily from the cell's `transcripts.sqlite` (runners/records/transcripts.py). A call recorded
before transcripts existed has `call.has_transcript == False` and its text properties raise
`TranscriptError` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

from runners.records.schema import CallLog, EpisodeRecord, RequestRecord, StepRecord
import json

from runners.records.store import (
    COMPACTED,
    EPISODES,
    LEGACY_COMPACTED,
    ERRORS,
    StoreError,
    cell_dirs,
    cell_errors,
    compacted,
    has_records,
    load_cell,
    record_lines,
)
from runners.records.schema import episode_calls
from runners.records.transcripts import (
    EpisodeTranscript,
    ShardedTranscriptReader,
    TranscriptError,
    TranscriptReader,
    open_transcripts,
)

Reader = TranscriptReader | ShardedTranscriptReader


@dataclass
class Call:
    """One model call: the record's `CallLog` fields (`role`, `usage`, `cached`, `latency_s`,
    `finish_reason`, `retries`, `attempt`, `sampling` …) plus its transcript."""

    log: CallLog
    reader: Reader
    where: str = ""  # "task", "begin", "step", "end", "unfinished"
    # the episode's transcript (its pieces read once, for every call of the episode); None: by hash
    scope: EpisodeTranscript | None = None

    def __getattr__(self, name: str) -> Any:  # CallLog fields
        if name in ("log", "reader", "scope"):
            raise AttributeError(name)
        return getattr(self.log, name)

    @property
    def _source(self) -> Reader | EpisodeTranscript:
        return self.reader if self.scope is None else self.scope

    @property
    def has_transcript(self) -> bool:
        return self.log.prompt is not None

    def _need(self) -> None:
        if not self.has_transcript:
            raise TranscriptError(
                "no transcript recorded for this call (written before transcripts existed, "
                "or with runner.transcripts=false)"
            )

    @cached_property
    def messages(self) -> list[dict[str, Any]]:
        self._need()
        return self._source.messages(self.log.prompt)

    @cached_property
    def text(self) -> str | None:
        self._need()
        return self._source.text(self.log.reply)

    @cached_property
    def reasoning(self) -> str | None:
        self._need()
        return self._source.text(self.log.reasoning)

    @cached_property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The native tool calls the reply made ([] when it made none)."""
        self._need()
        return self._source.blob_json(self.log.reply_tool_calls) or []

    @cached_property
    def tools(self) -> list[dict[str, Any]] | None:
        self._need()
        return self._source.blob_json(self.log.tools)


@dataclass
class Step:
    record: StepRecord
    request: "Request"
    calls: list[Call]

    def __getattr__(self, name: str) -> Any:  # t, observation, decision, method, overhead_s
        if name in ("record", "request", "calls"):
            raise AttributeError(name)
        return getattr(self.record, name)

    @property
    def protocol_errors(self) -> list[Any]:
        return list((self.record.method or {}).get("protocol_errors") or [])


@dataclass
class Request:
    record: RequestRecord
    steps: list[Step] = field(default_factory=list)
    begin_calls: list[Call] = field(default_factory=list)
    end_calls: list[Call] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:  # request, outcome, method
        if name in ("record", "steps", "begin_calls", "end_calls"):
            raise AttributeError(name)
        return getattr(self.record, name)


class Episode:
    def __init__(self, record: EpisodeRecord, reader: Reader) -> None:
        self.record = record
        self.reader = reader
        # the calls read their text from the episode's pieces: one index row of the store, read on the first question
        calls = [c for c in episode_calls(record) if c.prompt is not None]
        scope = reader.episode(
            (c.prompt for c in calls),
            (t for c in calls for t in (c.reply, c.reasoning, c.tools, c.reply_tool_calls) if t),
        )
        wrap = lambda logs, where: [Call(c, reader, where, scope) for c in logs]  # noqa: E731
        self.task_calls = wrap(record.task_calls, "task")
        self.unfinished_calls = wrap(record.unfinished_calls, "unfinished")
        self.requests: list[Request] = []
        for rr in record.requests:
            req = Request(rr, begin_calls=wrap(rr.begin_calls, "begin"), end_calls=wrap(rr.end_calls, "end"))
            req.steps = [Step(s, req, wrap(s.calls, "step")) for s in rr.steps]
            self.requests.append(req)

    def __getattr__(self, name: str) -> Any:  # cell, task_id, trial, status, scores, usage_by_role …
        if name in ("record", "reader", "requests", "task_calls", "unfinished_calls"):
            raise AttributeError(name)
        return getattr(self.record, name)

    def __repr__(self) -> str:
        return (
            f"Episode({self.record.cell!r}, {self.record.task_id!r}, trial={self.record.trial}, "
            f"status={self.record.status!r})"
        )

    @property
    def steps(self) -> list[Step]:
        return [s for r in self.requests for s in r.steps]

    def calls(self) -> Iterator[Call]:
        """Every call of the episode, in the order it was made."""
        return episode_calls(self)

    @property
    def has_transcript(self) -> bool:
        return any(c.has_transcript for c in self.calls())


class Cell:
    def __init__(self, path: Path) -> None:
        self.dir = Path(path)
        self.name = self.dir.name
        self.reader = open_transcripts(self.dir)  # a cell run in shards / worker processes: every store's

    def __repr__(self) -> str:
        return f"Cell({self.name!r})"

    @cached_property
    def manifest(self) -> dict[str, Any]:
        return load_cell(self.dir)[0]

    @property
    def config(self) -> dict[str, Any]:
        return self.manifest.get("config", {})

    @property
    def method(self) -> str:
        return self.config.get("method", {}).get("name", "?")

    @property
    def backbone(self) -> str:
        return self.config.get("backbone", {}).get("name", "?")

    @property
    def benchmark(self) -> str:
        return self.config.get("benchmark", {}).get("name", "?")

    def records(self, errors: bool = False) -> list[dict[str, Any]]:
        """Finished episode records as dicts (deduplicated; `errors=True` adds errors.jsonl's)."""
        out = load_cell(self.dir)[1]
        if errors:
            out += cell_errors(self.dir)
        return out

    def episodes(self, errors: bool = False) -> list[Episode]:
        return [Episode(EpisodeRecord.model_validate(r), self.reader) for r in self.records(errors)]

    def episode(self, task_id: str, trial: int = 0) -> Episode:
        for r in self.records(errors=True):
            if r["task_id"] == task_id and int(r["trial"]) == trial:
                return Episode(EpisodeRecord.model_validate(r), self.reader)
        raise KeyError(f"no episode ({task_id!r}, trial {trial}) in {self.dir}/{EPISODES} or {ERRORS}")


class Experiment:
    def __init__(self, path: Path) -> None:
        self.dir = Path(path)
        if not self.dir.is_dir():
            raise StoreError(f"no results directory {self.dir}; run `python -m runners.sweep` first")
        self.notes: list[str] = []  # names left out: not UTF-8, or a second name (symlink) of a cell
        self.cells = [Cell(d) for d in cell_dirs(self.dir, self.notes)]

    @property
    def name(self) -> str:
        return self.dir.name

    def __repr__(self) -> str:
        return f"Experiment({str(self.dir)!r}, {len(self.cells)} cells)"

    def cell(self, name: str) -> Cell:
        for c in self.cells:
            if c.name == name:
                return c
        raise KeyError(f"no cell {name!r} in {self.dir}; cells: {', '.join(c.name for c in self.cells)}")


def episode_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The episode records of one cell, in file order, as dicts: `path` is the cell's directory,
    its `episodes.jsonl`, `episodes.jsonl.zst` or (finished before zstd) `episodes.jsonl.xz`.
    FileNotFoundError names what is missing."""
    p = Path(path)
    p = p / EPISODES if p.is_dir() else p
    for suffix in (COMPACTED, LEGACY_COMPACTED):
        p = p.with_name(p.name[: -len(suffix)]) if p.name.endswith(suffix) else p
    if not has_records(p):
        raise FileNotFoundError(
            f"{p}: no such file (nor {compacted(p).name}); give a cell's directory or its {EPISODES}"
        )
    for line in record_lines(p):
        if line.strip():
            yield json.loads(line)


def open_experiment(path: str | Path) -> Experiment:
    """The experiment at `results/<experiment>`."""
    return Experiment(Path(path))
