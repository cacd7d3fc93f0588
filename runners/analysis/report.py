"""`python -m runners.view results/<experiment> [--out PATH] [--serve]`

Writes one self-contained static HTML report (default `results/<experiment>/report.html`; no
network, no CDN, opens from file://): the experiment's tables (the same rows `runners.aggregate`
prints, `(paper)` rows included), plots (the curves benchmarks declare, e.g. MemoryArena's Acc_k by
method, #Tok by method split by role,
success vs tokens, and each per-step series a method declares, e.g. PoS's health H over steps), an
episode browser (filters; per request a step timeline with the context the model saw, the raw
reply, the parsed decision, the observation, protocol errors and the calls with tokens), the
method views each method declares (`Method.step_views`: FlowState's state graph as it evolves,
PoS's belief and health, memory baselines' retrieved items) and a side-by-side comparison of two
methods on the same task. The report knows no method by name: it draws the declarations.

Every place has a URL fragment (`#episodes/<cell>/<task>/<trial>/step/<n>`, tabs as `#plots` …;
back/forward work); the episode browser searches the messages and replies on demand, decoding the
episodes in the background; the marks of the tables are explained on the page (`MARKS`).
docs/report.md describes it all.

Data is embedded as JSON; the episodes' details (each record whole, with the transcript pieces
its calls reference; the record's line and the stored messages and deltas as read: `_payload`)
are zstd-compressed `CHUNK` episodes to a base64 block, decoded only when one of them is opened
or searched (fzstd, a small JavaScript zstd decoder vendored in
`assets/`). Above `PARTS_ABOVE` episodes (2,000; `--parts-above`) those blocks go to files
beside the page (`report.files/part-NNNNN.js`, `PART_SIZE` episodes each, allowed by a nonce in
the page's CSP) that the page loads when one of their episodes is needed; the page itself then
holds the tables, plots and the episode list only. The records are read once: each episode's
details are packed as `collect` streams its record past (its `on_record` hook), and each list
row names its details' place (`payload`), since the cells are sorted only afterwards. All
trajectory text is untrusted: the page builds its DOM with textContent / createElementNS only
(no innerHTML), and the embedded JSON escapes `<`, `>`, `&` and U+2028/U+2029, so model output
such as `</script>` or `<!--` can neither end a script block nor open markup.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import re
import shutil
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from runners.analysis.episodes import _calls, episode_success, episode_tokens, step_series, transcript_of
from runners.analysis.stats import INTERVAL_LEGEND, SIGNIFICANCE_LEGEND, shared_evaluations
from runners.records.store import StoreError, cell_errors, paused_gc, stream_cell
from runners.records.transcripts import open_transcripts

ASSETS = Path(__file__).parent / "assets"
MAX_SCATTER = 5000  # episodes drawn in the success-vs-tokens plot
MAX_SERIES = 60  # episodes drawn in each per-step series plot

# What each mark in the tables means (the report shows these as a legend under the tables and as
# tooltips on the rows that carry them; `runners.aggregate` prints the same notes on the console).
MARKS: list[tuple[str, str]] = [
    (
        "[scripted]",
        "the row ran on the deterministic scripted backbone: an offline test of the pipeline, not a model result",
    ),
    (
        "[partial]",
        "some episodes of the cell are missing (infrastructure errors, an interrupted sweep or a damaged records "
        "file, named on the console; re-run the sweep to finish them): rates cover the finished episodes only "
        "and Tok is a total, so its Δ is not comparable yet",
    ),
    (
        "[mixed code]",
        "the cell's episodes were recorded under more than one code fingerprint (a resume after the code "
        "changed); re-run with runner.fresh=true for one code version",
    ),
    (
        "[paraphrased]",
        "some prompts ran on the project's own wording because the pinned upstream text was unavailable "
        "(the cell's manifest lists them under text_sources; set HARNESS_UPSTREAM_DIR to use the upstream text)",
    ),
    ("(paper)", "the number the paper reports for this method, backbone and benchmark"),
    (
        "Δ vs",
        "the difference from the reference method: pp for rates with the paired bootstrap interval over the tasks "
        "both cells ran and p = the exact two-sided sign test over per-task wins and losses, Holm-adjusted across "
        "the table; relative % for Tok and USD",
    ),
    ("*", SIGNIFICANCE_LEGEND),
    ("[lo, hi]", INTERVAL_LEGEND.removeprefix("[95% interval]: ")),
    (
        "method[key=value]",
        "cells that share method, backbone and benchmark are told apart by the config values that differ",
    ),
]


def safe_json(obj: Any) -> str:
    """JSON that cannot end a <script> element or open a comment, whatever the strings hold."""
    text = json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _payload(
    rec: dict[str, Any], reader: Any, calls: list[dict[str, Any]] | None = None, line: bytes | None = None
) -> bytes:
    """One episode's details as one line of JSON: its record whole and its transcript's pieces.
    What is stored as JSON goes in as read: the record's `line` (given where it is standard JSON,
    which the page's JSON.parse reads: `store.stream_cell_lines`; a line holds no newline, so the
    payloads' separator stays theirs) and, with `fragments`, the messages and deltas
    (`TranscriptReader._form`); the page reads the same values as from a dump of the parsed ones."""
    obj = {"record": orjson.Fragment(line) if line is not None else rec}
    obj["transcript"] = transcript_of(rec, reader, calls, fragments=True)
    try:
        return orjson.dumps(obj, default=str)  # ~5x the standard library's speed; the same JSON value
    except TypeError:  # lone surrogates, ints beyond 64 bits: the standard library writes those (no fragments)
        obj = {"record": rec, "transcript": transcript_of(rec, reader, calls)}
    return json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")


CHUNK = 10
"""Episodes per compressed block: one zstd frame (level 1) of their details, one JSON line each.
On real 12-call episodes (~81 KB of JSON each; scripts/perf/README.md) blocks of 10 take 6.7 KB
per episode and 0.09 ms to compress, against 14.7 KB and 0.30 ms for one zlib block per episode;
opening an episode decompresses its block (~0.8 MB of JSON, a few ms)."""


class _Chunks:
    """Packs payloads `CHUNK` at a time into base64 zstd blocks, handed to `emit` as they fill;
    `add` returns the payload's index (block `index // CHUNK`, line `index % CHUNK`)."""

    def __init__(self) -> None:
        import zstandard

        self.zstd = zstandard.ZstdCompressor(level=1)
        self.n = 0
        self.buf: list[bytes] = []

    def add(self, payload: bytes) -> int:
        self.buf.append(payload)
        self.n += 1
        if len(self.buf) == CHUNK:
            self._block()
        return self.n - 1

    def _block(self) -> None:
        if self.buf:  # orjson and json escape newlines inside strings: "\n" only ends a payload
            self.emit(base64.b64encode(self.zstd.compress(b"\n".join(self.buf))))
            self.buf = []

    def emit(self, block: bytes) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class _Collected(_Chunks):
    """Blocks kept in a list (what `gather` returns when no writer is given)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[str] = []

    def emit(self, block: bytes) -> None:
        self.blocks.append(block.decode("ascii"))

    def finish(self) -> list[str]:
        self._block()
        return self.blocks


def unpack(index: dict[str, Any], blocks: list[str]) -> list[dict[str, Any]]:
    """Every episode's details, in the order of the index's episode list (what the page decodes)."""
    import zstandard

    lines = [ln for b in blocks for ln in zstandard.ZstdDecompressor().decompress(base64.b64decode(b)).split(b"\n")]
    at = index["episode_fields"].index("payload")
    return [json.loads(lines[e[at]]) for e in index["episodes"]]


class _CellPages:
    """One cell's episodes as `collect` streams them: each record's details packed at once (the
    record is let go), its list row and its per-step series values kept (the first `MAX_SERIES`
    episodes with values: the plots draw no more)."""

    def __init__(self, cell_dir: Path) -> None:
        self.reader = open_transcripts(cell_dir)
        self.rows: list[list[Any]] = []
        self.outcome, self.series = _declared(cell_dir)
        self.lines: dict[str, list[Any]] = {d.name: [] for d in self.series}

    def add(self, rec: dict[str, Any], chunks: _Chunks, line: bytes | None = None) -> None:
        calls = _calls(rec)
        for decl in self.series:
            lines = self.lines[decl.name]
            vs = step_series(rec, decl.path) if len(lines) < MAX_SERIES else []
            if any(v is not None for v in vs):
                lines.append([len(self.rows), vs])
        self.rows.append(
            [
                rec.get("task_id"),
                rec.get("trial"),
                rec.get("status"),
                episode_success(rec, self.outcome),  # the number only: a record's scores hold texts too
                episode_tokens(rec),
                sum(len(rr.get("steps") or []) for rr in rec.get("requests") or []),
                len(calls),
                any(c.get("prompt") is not None for c in calls),
                chunks.add(_payload(rec, self.reader, calls, line)),
            ]
        )


def _declared(cell_dir: Path) -> tuple[str, tuple[Any, ...]]:
    """(the score that is an episode's outcome, `Benchmark.outcome`; the per-step series the
    method declares, `Method.step_series`), from the cell's manifest, as `summarize` finds them
    (the defaults where a class cannot be imported here: `summarize` then says why)."""
    from runners.config import ConfigError, import_target

    try:
        cfg = stream_cell(cell_dir)[0]["config"]  # the manifest only: the records are read lazily
    except (KeyError, TypeError, StoreError):
        return "success", ()
    found: list[Any] = []
    for group, attr, default in (("benchmark", "outcome", "success"), ("method", "step_series", ())):
        try:
            found.append(getattr(import_target(cfg[group]["_target_"], group), attr, default))
        except (KeyError, TypeError, ConfigError):
            found.append(default)
    return str(found[0]), tuple(found[1])


def gather(
    root: Path, reference: str = "full_context", writer: Any = None, named: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """(the report's index data, the episodes' compressed blocks). The records are read once: each
    is packed as `collect` streams it (`_CellPages`), into `writer` (`_Writer`: blocks written to
    files as they fill; the list returned is then empty) or into the list returned; the index's
    rows name each episode's place among the payloads (`payload`; `unpack` reads them). `named`:
    the reference was asked for by name, so one the experiment lacks is an error listing its
    methods (checked on this one pass's cells, not on a read of its own)."""
    from runners.analysis.cells import check_reference, collect, curves, reader_warnings, slug, stored_provenance
    from runners.analysis.tables import DEPTH_NOTE, build_tables, depth_table, reference_for, token_unit

    collected = writer is None
    chunks = _Collected() if collected else writer
    pages: dict[str, _CellPages] = {}

    def on_record(cell: str, rec: dict[str, Any], line: bytes | None) -> None:
        if cell not in pages:
            pages[cell] = _CellPages(root / cell)
        pages[cell].add(rec, chunks, line)

    summaries = collect(root, on_record=on_record)
    from runners.heap import release

    release()  # the records streamed past freed their memory; glibc keeps it unless trimmed (runners/heap.py)
    if named and summaries:
        check_reference(reference, summaries, root)
    for w in reader_warnings(root, summaries):  # a damaged records file, a foreign folder: said, not hidden
        print(w, file=sys.stderr)
    reference, reference_note = reference_for(summaries, reference)  # absent: the grid's first method, said
    with shared_evaluations():  # the tables and the paper's tables test the same pairs of cells
        header, rows, _ = build_tables(summaries, reference) if summaries else ([], [], [])
        paper = paper_tab(summaries)
    depth = depth_table(summaries) if summaries else None
    cells: list[Any]
    episodes: list[Any]
    cells, episodes = [], []
    curve_decls: dict[str, dict[str, Any]] = {}  # display name -> how to draw it (MetricSpec.curve)
    for cs in summaries:
        for spec, _ in curves(cs):
            curve_decls.setdefault(
                spec.display,
                {"name": spec.display, "id": slug(spec.display), "axis": spec.curve, "percent": spec.kind == "rate"},
            )
    series: dict[str, dict[str, Any]] = {}  # name -> the declaration plus [episode index, values] lines
    for ci, cs in enumerate(summaries):
        cell_dir = root / cs.cell
        page = pages.pop(cs.cell, None) or _CellPages(cell_dir)
        for rec in cell_errors(cell_dir):  # with its shards' (runner.shard, processes): listed after its records
            page.add(rec, chunks)
        page.reader.close()
        cells.append(
            {
                "cell": cs.cell,
                "method": cs.method,
                "backbone": cs.backbone,
                "benchmark": cs.benchmark,
                "scripted": cs.scripted,
                "n_episodes": cs.n_episodes,
                "metrics": cs.metrics,
                "curves": {spec.display: values for spec, values in curves(cs)},
                "tokens_by_role": cs.tokens_by_role,
                "transcripts": page.reader.exists,
                "partial": cs.partial,
                "mixed_code": cs.mixed_code,
                "paraphrased": cs.paraphrased,
                "project_share": (stored_provenance(cell_dir, cs.n_episodes) or {}).get("project_share"),
                "views": [v.model_dump(mode="json") for v in cs.views],
            }
        )
        first = len(episodes)
        if page.outcome != cs.outcome:  # `Benchmark.outcome` is a class attribute: an instance must not change it
            raise StoreError(
                f"{cs.cell}: the benchmark's outcome is '{cs.outcome}' on its instance but '{page.outcome}' on its "
                "class; Benchmark.outcome must be a class attribute (fix the benchmark's adapter)"
            )
        episodes += ([ci, *row] for row in page.rows)
        for decl in cs.series:
            entry = series.setdefault(decl.name, {**decl.model_dump(mode="json"), "lines": []})
            for k, vs in page.lines.get(decl.name, []):
                if len(entry["lines"]) < MAX_SERIES:
                    entry["lines"].append([first + k, vs])
    for page in pages.values():  # cells `collect` read but does not show
        page.reader.close()

    index = {
        "experiment": root.name,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "reference": reference,
        "reference_note": reference_note,
        "table": {"header": header, "rows": rows},
        "tok_unit": token_unit(summaries)[1] if summaries else "M",
        "paper": paper,
        "depth": {"header": depth[0], "rows": depth[1], "note": DEPTH_NOTE} if depth else None,
        "scripted": any(c.scripted for c in summaries),
        "cells": cells,
        "episode_fields": [
            "cell",
            "task_id",
            "trial",
            "status",
            "success",
            "tokens",
            "steps",
            "calls",
            "transcript",
            "payload",
        ],
        "curves": list(curve_decls.values()),
        "episodes": episodes,
        "series": [v for v in series.values() if v["lines"]],
        "max_scatter": MAX_SCATTER,
        "marks": [list(m) for m in MARKS],
        "chunk": CHUNK,
        "parts": None,  # set by the writer when the blocks go to files
    }
    return index, chunks.finish() if collected else []


def paper_tab(summaries: list[Any]) -> dict[str, Any]:
    """The "Paper" tab: every artefact of runners.paper (tables as rows with best/second marks,
    figures as embedded SVG data URIs), its status, the headlines and the papers' claims checked
    (runners.analysis.paper_claims), shown first."""
    import io

    from runners.analysis import paper, paper_claims, paper_figures

    draw = paper_figures.figures_available()
    arts = paper.build_all(summaries, figures=draw) if summaries else []
    out = []
    for a in arts:
        item: dict[str, Any] = {
            "name": a.name,
            "title": a.title,
            "status": a.status,
            "missing": a.missing,
            "preset": a.preset,
        }
        if a.table is not None and a.status != "not produced":
            item["table"] = {
                "header": a.table.header,
                "spans": a.table.spans,  # header rows above the metrics (domains; Formal Reasoning over two)
                "short": a.table.short,
                "notes": a.table.notes,
                "rows": [
                    {"kind": r.kind, "label": r.label, "backbone": r.backbone, "cells": r.cells, "styles": r.styles}
                    for r in a.table.rows
                ],
            }
        if a.figure is not None:
            buf = io.BytesIO()
            a.figure.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})  # no pyplot to close
            item["svg"] = "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()
        out.append(item)
    from runners.analysis.plots import EXTRA_HINT

    return {
        "artefacts": out,
        "headlines": paper.headlines_md(paper.headlines(paper.Cells(summaries))) if summaries else "",
        "claims": paper_claims.rows(paper_claims.check(paper.Cells(summaries))),  # the reviewer's first page
        "figures_note": None if draw else f"Figures need matplotlib: {EXTRA_HINT}",
    }


def _assets() -> tuple[str, str]:
    css = (ASSETS / "report.css").read_text()
    # the zstd decoder (its licence header kept), then the viewer: one script, one hash
    js = (ASSETS / "fzstd.min.js").read_text().rstrip() + ";\n" + (ASSETS / "report.js").read_text()
    if "</script" in js.lower() or "</style" in css.lower():  # pragma: no cover - our own assets
        raise RuntimeError("report assets must not contain closing script/style tags")
    return css, js


def _head(experiment: str, css: str, js: str, nonce: str | None = None) -> str:
    """The page up to the episode blocks. Only our own script may run (its hash), and, for a
    report with its episodes in files beside it, the scripts carrying the nonce (those files)."""
    title = html.escape(f"{experiment} — report")
    script_hash = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"script-src 'sha256-{script_hash}'" + (f" 'nonce-{nonce}'" if nonce else "") + "; "
        "style-src 'unsafe-inline'; img-src data:\">"
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>'
        f"<style>{css}</style></head><body>"
        '<noscript>This report needs JavaScript to render.</noscript><div id="app"></div>\n'
    )


def _block(k: int, block: str) -> str:
    return f'<script type="application/x-episode" id="ch-{k}">{block}</script>\n'


def _tail(index: dict[str, Any], js: str) -> str:
    return (
        f'<script type="application/json" id="index">{safe_json(index)}</script>\n<script>{js}</script></body></html>\n'
    )


def render(index: dict[str, Any], blocks: list[str]) -> str:
    """The whole page with every block embedded (a report without parts)."""
    css, js = _assets()
    return _head(index["experiment"], css, js) + "".join(_block(k, b) for k, b in enumerate(blocks)) + _tail(index, js)


PARTS_ABOVE = 2000
"""Above this many episodes the report keeps its episodes' details in files beside it (`parts_dir`)
instead of inside the page: a real sweep's episode takes ~9 KB there (12-call episodes of 33 KB
records; scripts/perf/README.md), so the page stays small at any size; smaller reports stay one
self-contained file (what the W&B artifact uploads)."""
PART_SIZE = 500  # episodes per file of a report with parts (a whole number of blocks; one file is read to open one)


def parts_dir(out: Path) -> Path:
    """Where a report with parts keeps them: `report.html` → `report.files/`."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".html") + ".files")


class _Writer(_Chunks):
    """Writes the blocks (`gather(writer=...)`) as they fill into `part-NNNNN.js` files of
    `PART_SIZE` episodes each (a script that hands its base64 blocks to the page, nothing else),
    then the page (`finish`): above `parts_above` episodes the files stay beside it, loaded when
    one of their episodes is opened or searched; otherwise their blocks are embedded in the page
    and the files removed. So packed episodes are never all held in memory, and the split is
    decided once their number is known."""

    def __init__(self, page: Path, files: Path, experiment: str, parts_above: int) -> None:
        super().__init__()
        self.page, self.files, self.experiment, self.parts_above = page, files, experiment, parts_above
        self.css, self.js = _assets()
        self.per_part = max(1, PART_SIZE // CHUNK)  # blocks per file
        self.part = 0
        self.blocks: list[bytes] = []  # base64 blocks of the part being filled
        self.split = False
        if self.files.exists() and not _is_parts(self.files):  # not a former build's: never removed
            raise StoreError(f"{self.files} exists and is not a report's parts folder; move it, or use --out")
        shutil.rmtree(self.files, ignore_errors=True)
        self.files.mkdir(parents=True)

    def emit(self, block: bytes) -> None:
        self.blocks.append(block)
        if len(self.blocks) == self.per_part:
            self._flush()

    def _flush(self) -> None:
        if self.blocks:  # base64 blocks as bytes, written as they are (no text round trip)
            data = b'window.__reportPart(%d,["' % self.part + b'","'.join(self.blocks) + b'"]);\n'
            (self.files / f"part-{self.part:05d}.js").write_bytes(data)
            self.part, self.blocks = self.part + 1, []

    def _parts(self) -> Any:
        for k in range(self.part):
            text = (self.files / f"part-{k:05d}.js").read_text(encoding="ascii")
            yield from json.loads(text[text.index(",") + 1 : text.rindex(")")])

    def finish(self, index: dict[str, Any]) -> None:
        import secrets

        self._block()
        self._flush()
        self.split = self.n > self.parts_above
        nonce = secrets.token_urlsafe(18) if self.split else None
        if self.split:
            dest = self.files.name.removesuffix(".tmp")  # the folder's name once in place (build_report renames it)
            index["parts"] = {"dir": dest, "blocks": self.per_part, "count": self.part, "nonce": nonce}
        with open(self.page, "w", encoding="utf-8") as fh:
            fh.write(_head(self.experiment, self.css, self.js, nonce))
            if not self.split:
                for k, block in enumerate(self._parts()):
                    fh.write(_block(k, block))
            fh.write(_tail(index, self.js))
        if not self.split:
            shutil.rmtree(self.files)

    def abort(self) -> None:
        self.page.unlink(missing_ok=True)
        shutil.rmtree(self.files, ignore_errors=True)


def _is_parts(d: Path) -> bool:
    """A folder that holds only a report's parts (safe to replace)."""
    return d.is_dir() and all(re.fullmatch(r"part-\d{5}\.js", f.name) for f in d.iterdir())


def build_report(
    root: Path,
    out: Path | None = None,
    reference: str = "full_context",
    parts_above: int = PARTS_ABOVE,
    named: bool = False,
) -> Path:
    """Write the report (page and, above `parts_above` episodes, its parts folder) and return the
    page's path. The page is written to a temporary file and its parts to a temporary folder, both
    moved into place at the end."""
    root = Path(root)
    if not root.is_dir():  # before any folder is made for the page
        raise StoreError(f"no results directory {root}; run `python -m runners.sweep` first")
    out = Path(out) if out else root / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    files = parts_dir(out)
    foreign = files.exists() and not _is_parts(files)  # not ours: never replaced nor removed
    writer = None
    try:
        writer = _Writer(out.with_name(out.name + ".tmp"), files.with_name(files.name + ".tmp"), root.name, parts_above)
        with paused_gc():  # the rows and summaries stay alive until the page is written: no cycle to find
            index, _ = gather(root, reference, writer, named)
        writer.finish(index)
        if writer.split and foreign:
            raise StoreError(
                f"{files} exists and is not a report's parts folder; the report keeps its episodes there above "
                f"{parts_above} episodes. Fix: move that folder, or write the report elsewhere with --out"
            )
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    if files.exists() and not foreign:  # a former build's parts: replaced, or removed when this page embeds them
        shutil.rmtree(files)
    if writer.split:
        writer.files.rename(files)
    writer.page.replace(out)
    return out


def make_server(path: Path, port: int = 0) -> Any:
    """An HTTP server for the report alone, bound to 127.0.0.1 only: `/` and `/<report name>`
    answer the report file, `/<report>.files/part-NNNNN.js` its parts (a report above
    `PARTS_ABOVE` episodes); every other path is 404, so the folder the report sits in (with
    `--out /tmp/r.html`, all of /tmp) is neither listed nor served. A request whose `Host` is not
    this machine's loopback name (localhost, 127.0.0.1, [::1]) with the bound port is refused (421):
    a web page that rebinds its own domain to 127.0.0.1 (DNS rebinding) cannot read the report. A
    symlink in the parts folder (or the folder itself a symlink) is never followed."""
    import http.server
    import os

    report = Path(path).resolve()
    files = parts_dir(report)
    part = re.compile("/" + re.escape(files.name) + r"/(part-\d{5}\.js)")
    hosts = {"localhost", "127.0.0.1", "[::1]"}

    def read_part(name: str) -> bytes:
        if files.is_symlink():
            raise OSError(f"{files} is a symlink")
        fd = os.open(files / name, os.O_RDONLY | os.O_NOFOLLOW)  # a symlink placed there: ELOOP, never followed
        with os.fdopen(fd, "rb") as f:
            return f.read()

    class ReportOnly(http.server.BaseHTTPRequestHandler):
        def _host_ok(self) -> bool:
            host = (self.headers.get("Host") or "").strip().lower()
            if not host:  # HTTP/1.0 without a Host: no browser (and so no rebinding page) sends that
                return self.request_version == "HTTP/1.0"
            name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
            if not name:  # no port given
                name, port = host, ""
            return name in hosts and port in ("", str(getattr(self.server, "server_port", "")))

        def _answer(self, body: bool) -> None:
            from urllib.parse import unquote, urlsplit

            if not self._host_ok():
                self.send_error(
                    421,
                    "Misdirected Request",
                    f"this server answers only http://127.0.0.1:{getattr(self.server, 'server_port', '')}",
                )
                return
            where = unquote(urlsplit(self.path).path)
            got = part.fullmatch(where)
            if where not in ("/", "/" + report.name) and not got:
                self.send_error(404, "Not Found", f"only the report is served: /{report.name}")
                return
            try:
                data = read_part(got.group(1)) if got else report.read_bytes()
            except OSError:
                self.send_error(404, "Not Found", f"{report.name} is gone; build it again with python -m runners.view")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/javascript" if got else "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if body:
                self.wfile.write(data)

        def do_GET(self) -> None:  # http.server's naming
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

        def log_message(self, *args: Any) -> None:
            return None

    return http.server.ThreadingHTTPServer(("127.0.0.1", port), ReportOnly)


def serve(path: Path, port: int = 0) -> None:
    """Serve the report (alone) on 127.0.0.1 until interrupted."""
    import gc

    gc.enable()  # a long-running server collects as usual (`python -m runners.view` builds with it off)
    with make_server(path, port) as srv:
        print(f"serving http://127.0.0.1:{srv.server_address[1]}/{Path(path).name} (Ctrl-C to stop)", flush=True)
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("results", type=Path, help="results/<experiment> directory")
    ap.add_argument("--out", type=Path, default=None, help="where to write the report (default <results>/report.html)")
    ap.add_argument(
        "--reference",
        default=None,
        help="method the Δ rows compare against (default full_context; one the "
        "experiment does not have is an error listing its methods)",
    )
    ap.add_argument(
        "--serve",
        action="store_true",
        help="also serve it on 127.0.0.1 (loopback only; the report alone, no other file)",
    )
    ap.add_argument("--port", type=int, default=0, help="port for --serve (default: any free port)")
    ap.add_argument(
        "--parts-above",
        type=int,
        default=PARTS_ABOVE,
        metavar="N",
        help=f"above N episodes keep the episodes' details in files beside the page (<report>.files/, loaded when "
        f"an episode is opened) instead of inside it (default {PARTS_ABOVE}; 0 = always)",
    )
    a = ap.parse_args(argv)
    from runners.analysis.cells import check_reference
    from runners.config import ConfigError, canonical_method

    try:
        reference = canonical_method(a.reference or "full_context")  # raw_trajectory (PoS's name) is full_context
        check_reference(reference)
        # named but not in the experiment: an error listing its methods, found in the report's one read
        out = build_report(a.results, a.out, reference, a.parts_above, named=a.reference is not None)
    except (StoreError, ConfigError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    files = parts_dir(out)
    parts = (
        f" and its episodes' details to {files}/ ({sum(f.stat().st_size for f in files.iterdir()) / 1e6:.1f} MB; keep "
        "the folder beside the page)"
        if files.is_dir() and _is_parts(files)
        else ""
    )
    print(
        f"report written to {out} ({out.stat().st_size / 1e6:.1f} MB){parts}; open it in a browser "
        f"(file://{out.resolve()})"
    )
    if a.serve:
        serve(out, a.port)
    return 0
