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

Data is embedded as JSON; every episode is its own zlib-compressed, base64 block decoded only
when opened (DecompressionStream), so a report of 10,000 episodes loads in about a second. All
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
import sys
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from runners.analysis.episodes import _calls, episode_success, episode_tokens, step_series, transcript_of
from runners.api import method_tokens
from runners.records.store import ERRORS, StoreError, load_cell, paused_gc, read_jsonl
from runners.records.transcripts import TranscriptError, TranscriptReader

ASSETS = Path(__file__).parent / "assets"
MAX_SCATTER = 5000  # episodes drawn in the success-vs-tokens plot
MAX_SERIES = 60  # episodes drawn in each per-step series plot


def safe_json(obj: Any) -> str:
    """JSON that cannot end a <script> element or open a comment, whatever the strings hold."""
    text = json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _pack(obj: Any) -> str:
    try:
        raw = orjson.dumps(obj, default=str)  # ~5x the standard library's speed; the same JSON value
    except TypeError:  # lone surrogates, ints beyond 64 bits: the standard library writes those
        raw = json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    return base64.b64encode(zlib.compress(raw, 1)).decode()


def gather(root: Path, reference: str = "full_context") -> tuple[dict[str, Any], list[str]]:
    """(the report's index data, one packed payload per episode)."""
    from runners.analysis.tables import build_tables, collect, curves, depth_table, slug

    summaries = collect(root)
    header, rows, _ = build_tables(summaries, reference) if summaries else ([], [], [])
    depth = depth_table(summaries) if summaries else None
    cells, episodes, payloads = [], [], []
    curve_decls: dict[str, dict[str, Any]] = {}  # display name -> how to draw it (MetricSpec.curve)
    for cs in summaries:
        for spec, _ in curves(cs):
            curve_decls.setdefault(spec.display, {"name": spec.display, "id": slug(spec.display), "axis": spec.curve,
                                                  "percent": spec.kind == "rate"})
    series: dict[str, dict[str, Any]] = {}  # name -> the declaration plus [episode index, values] lines
    for ci, cs in enumerate(summaries):
        cell_dir = root / cs.cell
        _, ok = load_cell(cell_dir)
        errs, _ = read_jsonl(cell_dir / ERRORS)
        reader = TranscriptReader(cell_dir)
        cells.append({"cell": cs.cell, "method": cs.method, "backbone": cs.backbone, "benchmark": cs.benchmark,
                      "scripted": cs.scripted, "n_episodes": cs.n_episodes, "metrics": cs.metrics,
                      "curves": {spec.display: values for spec, values in curves(cs)},
                      "tokens_by_role": cs.tokens_by_role, "transcripts": reader.exists,
                      "views": [v.model_dump(mode="json") for v in cs.views]})
        for rec in ok + errs:
            calls = _calls(rec)
            succ = episode_success(rec, cs.outcome)
            idx = len(episodes)
            episodes.append([ci, rec.get("task_id"), rec.get("trial"), rec.get("status"), succ, episode_tokens(rec),
                             sum(len(rr.get("steps") or []) for rr in rec.get("requests") or []), len(calls),
                             any(c.get("prompt") is not None for c in calls)])
            for decl in cs.series:
                entry = series.setdefault(decl.name, {**decl.model_dump(mode="json"), "lines": []})
                vs = step_series(rec, decl.path) if len(entry["lines"]) < MAX_SERIES else []
                if any(v is not None for v in vs):
                    entry["lines"].append([idx, vs])
            payloads.append(_pack({"record": rec, "transcript": transcript_of(rec, reader)}))
        reader.close()
    from runners.analysis.tables import token_unit

    index = {
        "experiment": root.name, "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "reference": reference, "table": {"header": header, "rows": rows},
        "tok_unit": token_unit(summaries)[1] if summaries else "M", "paper": paper_tab(summaries),
        "depth": {"header": depth[0], "rows": depth[1]} if depth else None,
        "scripted": any(c.scripted for c in summaries), "cells": cells,
        "episode_fields": ["cell", "task_id", "trial", "status", "success", "tokens", "steps", "calls", "transcript"],
        "curves": list(curve_decls.values()), "episodes": episodes, "series": [v for v in series.values() if v["lines"]], "max_scatter": MAX_SCATTER,
    }
    return index, payloads


def paper_tab(summaries: list[Any]) -> dict[str, Any]:
    """The "Paper" tab: every artefact of runners.paper (tables as rows with best/second marks,
    figures as embedded SVG data URIs), its status and the headlines."""
    import io

    from runners.analysis import paper, paper_figures

    draw = paper_figures.figures_available()
    arts = paper.build_all(summaries, figures=draw) if summaries else []
    out = []
    for a in arts:
        item: dict[str, Any] = {"name": a.name, "title": a.title, "status": a.status, "missing": a.missing, "preset": a.preset}
        if a.table is not None and a.status != "not produced":
            item["table"] = {"header": a.table.header, "notes": a.table.notes,
                             "rows": [{"kind": r.kind, "label": r.label, "backbone": r.backbone, "cells": r.cells, "styles": r.styles} for r in a.table.rows]}
        if a.figure is not None:
            buf = io.BytesIO()
            a.figure.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
            paper_figures._plt().close(a.figure)
            item["svg"] = "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode()
        out.append(item)
    from runners.analysis.plots import EXTRA_HINT

    return {"artefacts": out, "headlines": paper.headlines_md(paper.headlines(paper.Cells(summaries))) if summaries else "",
            "figures_note": None if draw else f"Figures need matplotlib: {EXTRA_HINT}"}


def render(index: dict[str, Any], payloads: list[str]) -> str:
    css = (ASSETS / "report.css").read_text()
    js = (ASSETS / "report.js").read_text()
    if "</script" in js.lower() or "</style" in css.lower():  # pragma: no cover - our own assets
        raise RuntimeError("report assets must not contain closing script/style tags")
    title = html.escape(f"{index['experiment']} — report")
    script_hash = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()  # only our own script may run
    blocks = "\n".join(f'<script type="application/x-episode" id="ep-{i}">{p}</script>' for i, p in enumerate(payloads))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-{script_hash}'; "
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title>"
        f"<style>{css}</style></head><body>"
        "<noscript>This report needs JavaScript to render.</noscript><div id=\"app\"></div>"
        f"<script type=\"application/json\" id=\"index\">{safe_json(index)}</script>\n{blocks}\n"
        f"<script>{js}</script></body></html>\n"
    )


def build_report(root: Path, out: Path | None = None, reference: str = "full_context") -> Path:
    root = Path(root)
    with paused_gc():  # every record stays alive until the page is written: no cycle to find (runners.records.store)
        index, payloads = gather(root, reference)
    out = Path(out) if out else root / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render(index, payloads), encoding="utf-8")
    tmp.replace(out)
    return out


def make_server(path: Path, port: int = 0):
    """An HTTP server for the report's folder, bound to 127.0.0.1 only."""
    import functools
    import http.server

    handler = functools.partial(_QuietHandler, directory=str(Path(path).parent))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def _quiet_handler_base():
    import http.server

    return http.server.SimpleHTTPRequestHandler


class _QuietHandler(_quiet_handler_base()):  # type: ignore[misc]
    def log_message(self, *args: Any) -> None:
        return None


def serve(path: Path, port: int = 0) -> None:
    """Serve the report's folder on 127.0.0.1 until interrupted."""
    with make_server(path, port) as srv:
        print(f"serving http://127.0.0.1:{srv.server_address[1]}/{Path(path).name} (Ctrl-C to stop)", flush=True)
        try:
            srv.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="results/<experiment> directory")
    ap.add_argument("--out", type=Path, default=None, help="where to write the report (default <results>/report.html)")
    ap.add_argument("--reference", default="full_context", help="method the Δ rows compare against")
    ap.add_argument("--serve", action="store_true", help="also serve it on 127.0.0.1 (loopback only)")
    ap.add_argument("--port", type=int, default=0, help="port for --serve (default: any free port)")
    a = ap.parse_args(argv)
    try:
        out = build_report(a.results, a.out, a.reference)
    except StoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report written to {out} ({out.stat().st_size / 1e6:.1f} MB); open it in a browser (file://{out.resolve()})")
    if a.serve:
        serve(out, a.port)
    return 0

