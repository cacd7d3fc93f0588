"""`python -m runners.provenance <experiment-or-cell> [--call ID] [--json] [--write]`: where each
character of the messages a stored call sent came from.

Every character of a call's messages gets one label:
- `upstream:<key>`: a text the harness read from a pinned upstream file (`runners.upstream`), named by its
  key in the manifest's `text_sources` (a template's literal pieces around its `{...}` fields each count);
- `task`: the task data (the request's text, goal, valid actions, and the task's other fields);
- `observation`: what the benchmark returned (tool results, notes, user messages, its first observation);
- `method`: the method's own state as its step logs record it (`StepRecord.method`, `RequestRecord.method`: its
  strings and its parts as JSON);
- `model`: what the model replied in an earlier call of the episode (replayed history);
- `project:<key>`: the project's fallback wording of a text whose upstream source was expected but not read
  (the manifest lists the key as paraphrased); project wording. A fallback that is not a text (None: the
  caller sends its own layout instead; request settings) cannot be found in the messages: such a key always
  counts as sent (`paraphrased_sent`);
- `project`: everything else: the project's own wording (layout, headers, joiners).

The sources are collected per call, then matched longest first: each occurrence whose characters are all still
unlabelled takes the label, so spans never overlap and cover every character exactly once. Candidates shorter
than `MIN_PIECE` characters are not matched (a short word would be found anywhere); what they would cover
counts as project wording, so the share is an upper bound.

The summary (`--json`, `--write`) gives per cell the characters per label, project wording's share (`project`
and `project:<key>` together) and the fallbacks sent; over an experiment the share is also printed per method x
benchmark (`shares`). The texts are rebuilt at read time: the cell's benchmark and method are constructed from
the manifest's config and asked for their manifest notes under `runners.upstream.capture_texts`, which reads
the same pinned files (offline: the download cache and `$HARNESS_UPSTREAM_DIR`; a file not there shows as
the project's fallback).
The manifest records only keys and checksums of the texts, never the texts themselves, so a cell's share cannot
be computed without them; `--write` stores the summary as `<cell>/provenance.json`, beside the records, from
which the tables mark a cell `[paraphrased]` only for fallback texts its calls actually sent
(runners/analysis/cells.py `paraphrased_prompts`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

MIN_PIECE = 8
PROVENANCE = "provenance.json"
_FIELD = re.compile(r"\{\{|\}\}|\{[^{}\n]*\}")


def leaves(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value (dict keys excluded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v)


def json_forms(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value, and each container in it as JSON (compact, and indented by 2
    as a prompt shows a record)."""
    yield from leaves(value)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (dict, list)) and v:
            for indent in (None, 2):
                yield json.dumps(v, ensure_ascii=False, indent=indent, default=str)
            stack += list(v.values()) if isinstance(v, dict) else v


def template_pieces(text: str) -> list[str]:
    """A text and, when it holds `{...}` fields, its literal pieces around them (`{{`/`}}` as braces)."""
    out = [text]
    if "{" in text:
        pieces, cur = [], []
        pos = 0
        for m in _FIELD.finditer(text):
            cur.append(text[pos : m.start()])
            if m.group(0) in ("{{", "}}"):
                cur.append(m.group(0)[0])
            else:
                pieces.append("".join(cur))
                cur = []
            pos = m.end()
        cur.append(text[pos:])
        pieces.append("".join(cur))
        out += [p for p in pieces if p != text]
    return out


@dataclass
class Sources:
    """Candidate strings with their labels; `add` keeps the first label a string gets."""

    labels: dict[str, str] = field(default_factory=dict)

    def add(self, label: str, texts: Iterable[str]) -> None:
        for t in texts:
            for piece in (t, t.strip()):
                if len(piece) >= MIN_PIECE and piece not in self.labels:
                    self.labels[piece] = label

    def copy(self) -> "Sources":
        return Sources(dict(self.labels))


def text_sources(texts: dict[str, tuple[str, Any]]) -> Sources:
    """The cell's upstream texts (`upstream:<key>`) and fallbacks (`project:<key>`), template pieces too."""
    src = Sources()
    for kind in ("upstream", "paraphrase"):
        for key, (source, value) in sorted(texts.items()):
            if source != kind:
                continue
            if kind == "paraphrase" and not isinstance(value, str):  # None (another layout stands in), settings
                continue  # not a text to find: the key stays marked (CellMap.unseen)
            label = f"upstream:{key}" if kind == "upstream" else f"project:{key}"
            src.add(label, (p for s in json_forms(value) for p in template_pieces(s)))
    return src


def label_text(text: str, sources: Sources) -> list[dict[str, Any]]:
    """Spans `{"start", "end", "label"}` covering `text` exactly once (longest candidate first)."""
    owner: list[str | None] = [None] * len(text)
    for cand in sorted(sources.labels, key=len, reverse=True):
        if len(cand) > len(text):
            continue
        i = text.find(cand)
        while i >= 0:
            j = i + len(cand)
            if all(o is None for o in owner[i:j]):
                owner[i:j] = [sources.labels[cand]] * len(cand)
                i = text.find(cand, j)
            else:
                i = text.find(cand, i + 1)
    spans: list[dict[str, Any]] = []
    for k, o in enumerate(owner):
        lab = o or "project"
        if spans and spans[-1]["label"] == lab and spans[-1]["end"] == k:
            spans[-1]["end"] = k + 1
        else:
            spans.append({"start": k, "end": k + 1, "label": lab})
    return spans


def message_text(m: dict[str, Any]) -> str:
    """The text of a message as sent: its content (a parts list: the text parts joined)."""
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return "" if c is None else json.dumps(c, ensure_ascii=False)


def is_project(label: str) -> bool:
    return label == "project" or label.startswith("project:")


def call_map(messages: list[dict[str, Any]], sources: Sources) -> list[dict[str, Any]]:
    """Per message: role, text and its spans."""
    out = []
    for m in messages:
        text = message_text(m)
        out.append({"role": m.get("role"), "text": text, "spans": label_text(text, sources)})
    return out


def _episode_sources(base: Sources, ep: Any, task: Any = None) -> Iterator[tuple[str, Any, Sources]]:
    """(call id, call, the sources known when it was made) for every call of a results Episode."""
    src = base.copy()
    task_leaves: list[str] = []
    for r in ep.requests:
        task_leaves += [s for k, v in r.request.model_dump().items() if k != "observation" for s in leaves(v)]
        src.add("observation", [r.request.observation or ""])
    src.add("task", task_leaves)
    if task is not None:  # the task's own data, incl. what only the benchmark's simulated roles see
        src.add("task", json_forms(task.model_dump(mode="json") if hasattr(task, "model_dump") else vars(task)))
    n = 0

    def each(calls: list[Any]) -> Iterator[tuple[str, Any, Sources]]:
        nonlocal n
        for c in calls:
            yield f"{ep.record.task_id}/{ep.record.trial}/{n}", c, src
            n += 1
            if c.has_transcript:
                src.add("model", [c.text or "", *json_forms(c.tool_calls)])
                for t in c.tool_calls:
                    try:
                        src.add("model", json_forms(json.loads((t.get("function") or {}).get("arguments") or "")))
                    except (ValueError, TypeError, AttributeError):
                        pass

    yield from each(ep.task_calls)
    for r in ep.requests:
        src.add("method", json_forms(r.record.method))
        yield from each(r.begin_calls)
        for s in r.steps:
            src.add("observation", leaves(s.record.observation.model_dump()))
            src.add("method", json_forms(s.record.method))
            yield from each(s.calls)
        yield from each(r.end_calls)
    yield from each(ep.unfinished_calls)


def _manifest(cell_dir: Path) -> dict[str, Any]:
    """The cell's manifest as the readers see it (a sharded cell's merged; `store.cell_manifest`)."""
    from runners.records.store import StoreError, cell_manifest

    try:
        return cell_manifest(cell_dir)
    except StoreError as e:
        raise ProvenanceError(f"{e} (is {cell_dir} a cell folder?)") from None


def cell_texts(cell_dir: Path) -> tuple[dict[str, tuple[str, Any]], Mapping[str, Any]]:
    """(the model-facing texts of a cell, rebuilt as its run read them (see the module docstring),
    its tasks by id)."""
    from runners.api import tasks_by_id
    from runners.config import CellConfig
    from runners.prepare import _load_benchmark, method_notes
    from runners.upstream import ENV_DIR, capture_texts, reading_records, text_sha256

    manifest = _manifest(Path(cell_dir))
    cfg = CellConfig.model_validate(manifest["config"])
    with reading_records(), capture_texts() as got:
        prep = _load_benchmark(cfg)
        if isinstance(prep, list):
            raise SystemExit(f"{cell_dir}: its benchmark could not be rebuilt: {'; '.join(map(str, prep))}")
        prep.bench.notes()
        method_notes(cfg.method.cls, cfg.method.params, prep.bench)
    differ = sorted(k for k, want in _recorded(manifest).items() if k in got and text_sha256(got[k][1]) != want)
    if differ:
        raise ProvenanceError(
            f"{cell_dir}: the texts read now differ from those the cell ran on ({', '.join(differ[:5])}"
            f"{', ...' if len(differ) > 5 else ''}); point ${ENV_DIR} at the pinned upstream copies the run used "
            "(or clear it, for a cell that ran on the project's wording) and run this again"
        )
    return got, tasks_by_id(prep.tasks)  # a task read when looked up


class ProvenanceError(RuntimeError):
    """The texts rebuilt at read time are not those the cell ran on."""


def _recorded(manifest: dict[str, Any]) -> dict[str, str]:
    """key → text_sha256 the manifest records for each text (benchmark and method)."""
    out: dict[str, str] = {}
    for part in ("benchmark_notes", "method_notes"):
        prompts = ((manifest.get(part) or {}).get("text_sources") or {}).get("prompts") or {}
        out.update({k: v["text_sha256"] for k, v in prompts.items() if isinstance(v, dict) and "text_sha256" in v})
    return out


@dataclass
class CellMap:
    cell: str
    calls: dict[str, list[dict[str, Any]]]
    paraphrase_keys: list[str]
    method: str = ""
    benchmark: str = ""
    unseen: list[str] = field(default_factory=list)
    n_episodes: int = 0

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for msgs in self.calls.values():
            for m in msgs:
                for s in m["spans"]:
                    out[s["label"]] = out.get(s["label"], 0) + s["end"] - s["start"]
        return dict(sorted(out.items()))

    def project_share(self) -> float | None:
        t = self.totals()
        total = sum(t.values())
        return None if not total else sum(v for k, v in t.items() if is_project(k)) / total

    def fallbacks_sent(self) -> list[str]:
        """The paraphrased keys whose fallback wording some call actually sent, and (conservatively) those
        the map cannot see (no piece of `MIN_PIECE` characters, or every piece also another text's)."""
        sent = {k.split(":", 1)[1] for k in self.totals() if k.startswith("project:")}
        return sorted(sent | set(self.unseen))

    def summary(self) -> dict[str, Any]:
        share = self.project_share()
        return {
            "cell": self.cell,
            "method": self.method,
            "benchmark": self.benchmark,
            "calls": len(self.calls),
            "chars": self.totals(),
            "project_share": None if share is None else round(share, 6),
            "paraphrased_sent": self.fallbacks_sent(),
            "n_episodes": self.n_episodes,
        }


def cell_map(cell_dir: Path, only: str | None = None) -> CellMap:
    from runners.records.results import Cell

    cell_dir = Path(cell_dir)
    texts, tasks = cell_texts(cell_dir)
    base = text_sources(texts)
    calls: dict[str, list[dict[str, Any]]] = {}
    owners = set(base.labels.values())
    unseen = sorted(k for k, (s, _) in texts.items() if s == "paraphrase" and f"project:{k}" not in owners)
    episodes = Cell(cell_dir).episodes()
    for ep in episodes:
        for cid, call, src in _episode_sources(base, ep, tasks.get(ep.record.task_id)):
            if (only is None or cid == only) and call.has_transcript:
                calls[cid] = call_map(call.messages, src)
    keys = sorted(k for k, (s, _) in texts.items() if s == "paraphrase")
    conf = _manifest(cell_dir).get("config") or {}
    method, bench = ((conf.get(k) or {}).get("name", "") for k in ("method", "benchmark"))
    return CellMap(cell_dir.name, calls, keys, method, bench, unseen=unseen, n_episodes=len(episodes))


def shares(summaries: list[dict[str, Any]]) -> dict[tuple[str, str], float | None]:
    """Project wording's share of the characters sent, per (method, benchmark) over its cells."""
    chars: dict[tuple[str, str], list[int]] = {}
    for s in summaries:
        acc = chars.setdefault((s["method"], s["benchmark"]), [0, 0])
        acc[0] += sum(v for k, v in s["chars"].items() if is_project(k))
        acc[1] += sum(s["chars"].values())
    return {k: (p / t if t else None) for k, (p, t) in sorted(chars.items())}


def stored(cell_dir: Path) -> dict[str, Any] | None:
    """The summary `--write` stored for a cell, or None."""
    try:
        return json.loads((Path(cell_dir) / PROVENANCE).read_text())
    except (OSError, ValueError):
        return None


def _cells(path: Path) -> list[Path]:
    if (path / "manifest.json").is_file() or any(path.glob("shard-*/manifest.json")):
        return [path]
    from runners.records.store import cell_dirs

    return list(cell_dirs(path))


def _show(cid: str, msgs: list[dict[str, Any]]) -> str:
    lines = [f"== call {cid}"]
    for i, m in enumerate(msgs):
        lines.append(f"-- message {i} ({m['role']})")
        for s in m["spans"]:
            lines.append(f"[{s['label']}] {m['text'][s['start'] : s['end']]!r}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m runners.provenance", description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="results/<experiment> or one cell's folder")
    ap.add_argument("--call", help="one call: <task_id>/<trial>/<n> (n: its place among the episode's calls)")
    ap.add_argument("--json", action="store_true", help="spans as JSON instead of text")
    ap.add_argument("--write", action="store_true", help=f"store each cell's summary as <cell>/{PROVENANCE}")
    a = ap.parse_args(argv)
    path = Path(a.path)
    if not path.is_dir():
        print(f"error: {path} is not a folder; give results/<experiment> or a cell folder", file=sys.stderr)
        return 2
    cells = _cells(path)
    if not cells:
        print(f"error: no cell under {path} (a cell folder holds manifest.json)", file=sys.stderr)
        return 2
    out: list[dict[str, Any]] = []
    found = False
    summaries: list[dict[str, Any]] = []
    for d in cells:
        try:
            cm = cell_map(d, a.call)
        except ProvenanceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        summary = cm.summary()
        summaries.append(summary)
        if a.write:
            (d / PROVENANCE).write_text(json.dumps(summary, indent=1) + "\n")
        if a.call:
            if not cm.calls:
                continue
            found = True
            if a.json:
                out.append({"cell": cm.cell, "calls": cm.calls})
            else:
                print(f"# {cm.cell}\n" + "\n".join(_show(c, m) for c, m in cm.calls.items()))
        elif a.json:
            out.append(summary)
        else:
            share = summary["project_share"]
            print(
                f"{cm.cell}: {summary['calls']} calls, project wording "
                f"{'-' if share is None else f'{100 * share:.1f}%'} of the characters sent; "
                f"fallbacks sent: {', '.join(summary['paraphrased_sent']) or 'none'}"
            )
    if not a.call and not a.json and len(summaries) > 1:
        print("\nproject wording, share of the characters sent (method x benchmark):")
        for (m, b), share in shares(summaries).items():
            print(f"  {m} x {b}: {'-' if share is None else f'{100 * share:.1f}%'}")
    if a.call and not found:
        print(
            f"error: no call {a.call!r} with a transcript under {path}; ids are <task_id>/<trial>/<n>", file=sys.stderr
        )
        return 2
    if a.json:
        print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
