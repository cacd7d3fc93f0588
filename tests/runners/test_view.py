"""runners.view without a browser: embedded JSON cannot break out of its script element, every
episode's payload carries the transcript pieces its calls reference (deltas included), and bad
input fails with a clear message. Records without transcripts: test_report_browser.py."""

import json
import shutil

import orjson
import pytest

from runners.records.results import open_experiment
from runners.records.store import stream_cell
from runners.analysis.report import CHUNK, build_report, gather, main, safe_json, unpack
from runners.analysis.episodes import episode_success
from runners.analysis.episodes import transcript_of
from tests.runners.sweep_helpers import run_sweep
from tests.runners.test_transcripts import _asked


def test_safe_json_cannot_close_the_script_or_open_a_comment():
    nasty = {"t": "</script><script>alert(1)</script> <!-- x --> & \u2028\u2029", "k</script>": 1}
    text = safe_json(nasty)
    assert "</" not in text and "<!--" not in text and "<" not in text and "\u2028" not in text
    assert json.loads(text) == nasty


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("view")
    assert run_sweep(out, "backbone.scripted.malformed_rate=0.2").returncode == 0
    return out / "offline_demo"


@pytest.fixture(scope="module")
def demo_rows(tmp_path_factory):
    """The same sweep, its transcripts written with a row per blob and node (schema 2) beside the index."""
    out = tmp_path_factory.mktemp("view_rows")
    assert run_sweep(out, "backbone.scripted.malformed_rate=0.2", env={"HARNESS_TRANSCRIPT_ROWS": "1"}).returncode == 0
    return out / "offline_demo"


def _page_message(blobs, h):
    """The page's `Episode.message` (report.js): a message embedded as stored JSON ("j"), as text
    ("t"), or as a delta of its base ("d", applied as `apply_delta` applies it)."""
    from runners.records.transcripts import apply_delta

    kind, *v = blobs[h]
    if kind == "j":
        return v[0]
    if kind == "t":
        return json.loads(v[0])
    return apply_delta(_page_message(blobs, v[0]), json.dumps(v[1]).encode())


def test_payloads_rebuild_every_call_exactly(demo):
    """Every call's messages and reply rebuilt from the payload as the page rebuilds them; messages
    and deltas are embedded as their stored JSON (no text decoded and escaped again)."""
    index, blocks = gather(demo)
    payloads = unpack(index, blocks)
    kinds = {b[0] for p in payloads for b in p["transcript"]["blobs"].values()}
    assert kinds == {"j", "t", "d"}  # messages as stored JSON, replies as text, deltas
    assert len(payloads) == len(index["episodes"]) == sum(c["n_episodes"] for c in index["cells"])
    assert len(blocks) == -(-len(payloads) // CHUNK)
    exp = open_experiment(demo)
    read: dict = {}
    for row, p in zip(index["episodes"], payloads):
        assert (p["record"]["task_id"], p["record"]["trial"]) == (row[1], row[2])  # the row's own details
        cell = exp.cell(index["cells"][row[0]]["cell"])
        ep = cell.episode(p["record"]["task_id"], p["record"]["trial"])
        blobs, nodes = p["transcript"]["blobs"], p["transcript"]["nodes"]
        assert p["transcript"]["missing"] == []
        for call in ep.calls():  # the report's pieces rebuild the same messages the API reads
            pieces, h = [], call.prompt
            path = []
            while h:
                path.append(nodes[h])
                h = nodes[h][0]
            for _, take, new, tail in reversed(path):
                pieces = pieces[:take] + new + (pieces[len(pieces) - tail :] if tail else [])
            assert [_page_message(blobs, m) for m in pieces] == call.messages
            assert blobs[call.reply] == ["t", call.text]
        if row[0] not in read:
            read[row[0]] = {(r["task_id"], r["trial"]): r for r in stream_cell(demo / cell.name)[1]}
        assert p["record"] == read[row[0]][row[1], row[2]]  # the record whole, as the store reads it


def test_the_payload_embeds_the_record_line_as_read_only_when_it_is_standard_json(demo, tmp_path):
    """The record goes into its payload as the line was read (`store.stream_cell_lines`: no dump of
    the parsed record); a line orjson refuses (NaN, which the page's JSON.parse refuses too) comes
    without its line and is dumped from the parsed record, as standard JSON."""
    from runners.analysis.report import _payload
    from runners.records import store
    from runners.records.transcripts import TranscriptReader

    cell = next(d for d in demo.iterdir() if (d / "transcripts.sqlite").exists())
    copy = tmp_path / cell.name
    shutil.copytree(cell, copy)
    plain = store.uncompact(copy)
    first, second, *rest = plain.read_bytes().splitlines(keepends=True)
    line = first.rstrip()
    spaced = line.replace(b'{"', b'{ "', 1)  # the same record; a dump of the parsed one has no space
    nan_line = second.rstrip()[:-1] + b',"x":NaN}'
    plain.write_bytes(b"".join([spaced + b"\n", nan_line + b"\n", *rest]))
    _, pairs, _ = store.stream_cell_lines(copy)
    (rec, got_line), (nan, nan_got), *_ = list(pairs)
    assert got_line == spaced and nan_got is None and nan["x"] != nan["x"]  # the line as stored; NaN: none
    reader = TranscriptReader(copy)
    out = _payload(rec, reader, line=got_line)
    assert out.startswith(b'{"record":' + spaced + b',"transcript":')
    embedded = json.loads(orjson.dumps(transcript_of(rec, reader, fragments=True)))  # what the page reads
    assert json.loads(out) == {"record": json.loads(line), "transcript": embedded}

    def refuse(c):
        raise AssertionError(f"{c} in the payload")

    got = json.loads(_payload(nan, reader, line=nan_got), parse_constant=refuse)
    assert got["record"] == {**json.loads(second), "x": None}


def test_report_file_is_written(demo, tmp_path):
    out = build_report(demo, tmp_path / "r.html")
    html = out.read_text()
    assert html.count('type="application/x-episode"') == -(-10 // CHUNK) and "Content-Security-Policy" in html
    assert "sha256-" in html and "https://" not in html.split("<script>")[0]  # no network references in the head
    assert episode_success({"scores": {"success": True}}) == 1.0 and episode_success({"scores": {}}) is None
    assert (
        episode_success({"scores": {"diagnosis_correct": False}}, "diagnosis_correct") == 0.0
    )  # the benchmark's declared outcome


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy benchmark (the cheapest end-to-end run) under three methods with declared views."""
    out = tmp_path_factory.mktemp("toyview")
    p = run_sweep(out, "benchmark=toy", "experiment.name=toy", "experiment.grid.method=[pos,bm25,full_context]")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return out / "toy"


def test_report_draws_what_methods_declare(toy):
    """Views and per-step series come from each cell's method class (Method.step_views,
    step_series); the report matches no method name."""
    from pos.method import PoS

    index, _ = gather(toy)
    views = {c["method"]: [v["name"] for v in c["views"]] for c in index["cells"]}
    assert views == {"pos": ["pos"], "bm25": ["memory"], "full_context": []}
    pos_view = next(c for c in index["cells"] if c["method"] == "pos")["views"][0]
    assert pos_view == PoS.step_views[0].model_dump(mode="json") and pos_view["kind"] == "step_table"
    (health,) = index["series"]
    assert health["name"] == "pos_health" and health["threshold"] == 0.25
    methods = {index["cells"][index["episodes"][i][0]]["method"] for i, _ in health["lines"]}
    assert methods == {"pos"} and len(health["lines"]) == 4
    assert all(0.0 <= v <= 1.0 for _, vs in health["lines"] for v in vs if v is not None)


def test_bad_directory_is_a_clear_error(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert "run `python -m runners.sweep` first" in capsys.readouterr().err


def test_serve_is_loopback_only(demo, tmp_path):
    import threading
    import urllib.request

    from runners.analysis.report import make_server

    out = build_report(demo, tmp_path / "report.html")
    srv = make_server(out)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        host, port = srv.server_address[:2]
        assert host == "127.0.0.1"
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/report.html", timeout=5).read()
        assert body == out.read_bytes()
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read() == body
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_answers_the_report_alone(demo, tmp_path):
    """Nothing else in the report's folder is served or listed (`--out /tmp/r.html` would expose all of /tmp)."""
    import threading
    import urllib.error
    import urllib.request

    from runners.analysis.report import make_server

    out = build_report(demo, tmp_path / "r.html")
    (tmp_path / "secret.txt").write_text("not for the browser")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.html").write_text("x")
    srv = make_server(out)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        for path in (
            "/secret.txt",
            "/sub/",
            "/sub/x.html",
            "/../secret.txt",
            "/%2e%2e/secret.txt",
            "/r.html/..",
            "/favicon.ico",
        ):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
            assert e.value.code == 404, path
            assert b"secret.txt" not in e.value.read()
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/r.html?x=1", timeout=5).read() == out.read_bytes()
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_answers_a_reports_parts_and_nothing_beside_them(demo, tmp_path):
    """A report with parts (`parts_above=0`): its part files are served beside it, as scripts;
    other names in the folder, or beside it, are not. A rebuild that embeds the episodes again
    removes the former parts; a folder of that name that is not a report's is never removed."""
    import threading
    import urllib.error
    import urllib.request

    from runners.analysis.report import make_server, parts_dir
    from runners.records.store import StoreError

    out = build_report(demo, tmp_path / "r.html", parts_above=0)
    files = parts_dir(out)
    (tmp_path / "secret.txt").write_text("x")
    srv = make_server(out)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        port = srv.server_address[1]
        got = urllib.request.urlopen(f"http://127.0.0.1:{port}/r.files/part-00000.js", timeout=5)
        assert got.read() == (files / "part-00000.js").read_bytes() and got.headers["Content-Type"] == "text/javascript"
        for path in ("/r.files/", "/r.files/part-99999.js", "/r.files/../secret.txt", "/r.files/x.js"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
            assert e.value.code == 404, path
    finally:
        srv.shutdown()
        srv.server_close()
    html = out.read_text()
    assert "'nonce-" in html and 'type="application/x-episode"' not in html
    build_report(demo, out)  # few episodes: embedded again, the parts folder goes
    assert not files.exists() and html.count("x-episode") == 0 and out.read_text().count("x-episode") == -(-10 // CHUNK)
    files.mkdir()
    (files / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match="not a report's parts folder"):
        build_report(demo, out, parts_above=0)
    assert (files / "notes.txt").read_text() == "mine" and out.read_text().count("x-episode") == -(-10 // CHUNK)


def test_serve_refuses_other_hosts_and_never_follows_a_symlink_in_the_parts(demo, tmp_path):
    """DNS rebinding: a page of another domain that resolves to 127.0.0.1 sends its own Host; only
    the loopback names with the bound port are answered. A symlink placed among the parts (to a
    file outside) is not served."""
    import http.client
    import threading

    from runners.analysis.report import make_server, parts_dir

    out = build_report(demo, tmp_path / "r.html", parts_above=0)
    files = parts_dir(out)
    (tmp_path / "secret.txt").write_text("not for the browser")
    (files / "part-00000.js").unlink()
    (files / "part-00000.js").symlink_to(tmp_path / "secret.txt")
    srv = make_server(out)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]

    def get(path: str, host: str | None) -> tuple[int, bytes]:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.putrequest("GET", path, skip_host=True)
        if host is not None:
            c.putheader("Host", host)
        c.endheaders()
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    try:
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io", f"localhost:{port + 1}", None):
            status, data = get("/r.html", host)
            assert status == 421 and b"x-episode" not in data, host
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
            assert get("/r.html", host)[0] == 200, host
        status, data = get("/r.files/part-00000.js", f"127.0.0.1:{port}")
        assert status == 404 and b"not for the browser" not in data
    finally:
        srv.shutdown()
        srv.server_close()


def _old_walk(rec, reader):
    """The stored pieces found one piece at a time (`TranscriptReader.node` / `stored`): what
    `TranscriptReader.pieces`' few queries must find."""
    from runners.analysis.episodes import _calls
    from runners.records.transcripts import TranscriptError

    nodes, blobs, missing = {}, {}, set()

    def blob(h):
        while h and h not in blobs:
            try:
                base, payload = reader.stored(h)
            except TranscriptError:
                missing.add(h)
                return
            blobs[h] = ["d", base, json.loads(payload)] if base else ["t", payload.decode()]
            h = base

    for c in _calls(rec):
        if c.get("prompt") is None:
            continue
        h = c["prompt"]
        while h and h not in nodes:
            try:
                nodes[h] = list(reader.node(h))
            except TranscriptError:
                missing.add(h)
                break
            for m in nodes[h][2]:
                blob(m)
            h = nodes[h][0]
        for k in ("reply", "reasoning", "tools", "reply_tool_calls"):
            blob(c.get(k))
    return {"nodes": nodes, "blobs": blobs, "missing": sorted(missing)}


def test_pieces_are_read_across_stores_and_missing_ones_named(demo_rows, tmp_path):
    """An episode's pieces in a few queries (`transcript_of`), the same as read one by one; a
    cell in shards finds a node in one store and its messages in another; a lost row is named
    missing, not an error."""
    import shutil
    import sqlite3

    from runners.analysis.episodes import transcript_of
    from runners.records.store import stream_cell
    from runners.records.transcripts import ShardedTranscriptReader, TranscriptReader

    cell = next(d for d in demo_rows.iterdir() if (d / "transcripts.sqlite").exists())
    recs = list(stream_cell(cell)[1])
    whole = TranscriptReader(cell)
    for rec in recs:
        got = transcript_of(rec, whole)
        assert got == _old_walk(rec, whole) and got["missing"] == [] and got["nodes"]
    a, b = tmp_path / "a", tmp_path / "b"
    for d, table in ((a, "nodes"), (b, "blobs")):  # a: blobs only; b: nodes (and packs) only
        d.mkdir()
        shutil.copy(cell / "transcripts.sqlite", d / "transcripts.sqlite")
        with sqlite3.connect(d / "transcripts.sqlite") as db:  # a store that lost rows has no index of them
            db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM episode_pieces")
    split = ShardedTranscriptReader([a, b])
    for rec in recs:
        assert transcript_of(rec, split) == transcript_of(rec, whole)
    rec = recs[0]
    full = transcript_of(rec, whole)
    lost_blob = next(h for h, v in full["blobs"].items() if v[0] == "t")
    lost_node = next(iter(full["nodes"]))
    with sqlite3.connect(a / "transcripts.sqlite") as db:
        db.execute("DELETE FROM blobs WHERE h = ?", (bytes.fromhex(lost_blob),))
    with sqlite3.connect(b / "transcripts.sqlite") as db:
        db.execute("DELETE FROM nodes WHERE h = ?", (bytes.fromhex(lost_node),))
    for reader in (ShardedTranscriptReader([a, b]), ShardedTranscriptReader([b, a])):
        got = transcript_of(rec, reader)
        assert lost_blob in got["missing"] and lost_node in got["missing"]
        assert lost_blob not in got["blobs"] and lost_node not in got["nodes"]
    one = TranscriptReader(a)  # a store with no nodes at all: every prompt missing
    assert set(transcript_of(rec, one)["missing"]) >= {c["prompt"] for c in recs[0]["requests"][0]["steps"][0]["calls"]}


def test_an_index_first_store_reads_as_the_rows_of_the_same_sweep(demo, demo_rows):
    """The sweep's store (schema 3: per episode a pack and its index row, no blob or node rows) gives
    every episode the same pieces, every call the same messages and texts, and its audit
    (`all_blobs`) and `stats` the same blobs, as the same sweep written with its rows (schema 2)."""
    import sqlite3

    from runners.records.store import stream_cell
    from runners.records.transcripts import TranscriptReader

    exp, exp_rows = open_experiment(demo), open_experiment(demo_rows)
    assert [c.name for c in exp.cells] == [c.name for c in exp_rows.cells]
    n_calls = 0
    for cell, cell_rows in zip(exp.cells, exp_rows.cells):
        if not (cell.dir / "transcripts.sqlite").exists():
            continue
        db = sqlite3.connect(cell.dir / "transcripts.sqlite")
        assert (
            db.execute("SELECT COUNT(*) FROM blobs").fetchone() == db.execute("SELECT COUNT(*) FROM nodes").fetchone()
        )
        assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 0  # the index rows are the directory
        assert sqlite3.connect(cell_rows.dir / "transcripts.sqlite").execute("SELECT COUNT(*) FROM blobs").fetchone()[0]
        new, old = TranscriptReader(cell.dir), TranscriptReader(cell_rows.dir)
        for rec, rec_rows in zip(stream_cell(cell.dir)[1], stream_cell(cell_rows.dir)[1]):
            assert transcript_of(rec, new) == transcript_of(rec_rows, old)
            assert json.loads(orjson.dumps(transcript_of(rec, new, fragments=True))) == json.loads(
                orjson.dumps(transcript_of(rec_rows, old, fragments=True))
            )
        for ep, ep_rows in zip(cell.episodes(), cell_rows.episodes()):
            for c, c_rows in zip(ep.calls(), ep_rows.calls()):
                if c.has_transcript:
                    n_calls += 1
                    assert (c.messages, c.text, c.reasoning, c.tools, c.tool_calls) == (
                        c_rows.messages,
                        c_rows.text,
                        c_rows.reasoning,
                        c_rows.tools,
                        c_rows.tool_calls,
                    )
                    assert new.messages(c.prompt) == c.messages  # by hash alone: a scan of the index rows
        assert sorted(new.all_blobs()) == sorted(old.all_blobs())
        st, st_rows = new.stats(), old.stats()
        assert (st["blobs"], st["nodes"], st["blob_bytes_raw"]) == (
            st_rows["blobs"],
            st_rows["nodes"],
            st_rows["blob_bytes_raw"],
        )
        assert st["file_bytes"] <= st_rows["file_bytes"]  # a few pages here; scripts/perf/README.md at scale
    assert n_calls > 20


def _walked(rec, reader):
    reader.use_index = False
    try:
        return transcript_of(rec, reader)
    finally:
        reader.use_index = True


def test_the_piece_index_answers_as_the_walk_in_one_lookup(demo_rows, tmp_path):
    """Each episode's piece index row (written by the sweep with its rows) gives the same pieces as
    the level-by-level walk, in one lookup and no query of the nodes or blobs; a store without
    the index (older), a missing row, a row naming another episode's pieces or a damaged row
    are all read by the walk; a cell in shards uses the index of the store that wrote it."""
    import shutil
    import sqlite3

    from runners.records.store import stream_cell
    from runners.records.transcripts import ShardedTranscriptReader, TranscriptReader

    cell = next(d for d in demo_rows.iterdir() if (d / "transcripts.sqlite").exists())
    recs = [r for r in stream_cell(cell)[1] if transcript_of(r, TranscriptReader(cell))["nodes"]]
    reader = TranscriptReader(cell)
    n_rows = reader._conn().execute("SELECT COUNT(*) FROM episode_pieces").fetchone()[0]
    assert len(recs) >= 2 and n_rows >= len(recs)
    walks = [_walked(rec, reader) for rec in recs]
    queries: list[str] = []
    reader._conn().set_trace_callback(queries.append)
    for rec, walk in zip(recs, walks):
        del queries[:]
        assert transcript_of(rec, reader) == walk and walk["missing"] == []
        assert [q for q in queries if "FROM nodes" in q or "FROM blobs" in q] == []  # only the index row
        assert sum("FROM episode_pieces" in q for q in queries) == 1
    reader._conn().set_trace_callback(None)

    def copy(name, sql):
        d = tmp_path / name
        d.mkdir()
        shutil.copy(cell / "transcripts.sqlite", d / "transcripts.sqlite")
        with sqlite3.connect(d / "transcripts.sqlite") as db:
            for q in sql:
                db.execute(*q)
        return d

    keys = [k for (k,) in sqlite3.connect(cell / "transcripts.sqlite").execute("SELECT k FROM episode_pieces")]
    older = copy("older", [("DROP TABLE episode_pieces",)])
    missing = copy("missing", [("DELETE FROM episode_pieces",)])
    swapped = copy(  # every row holds the next row's value: pieces of another episode
        "swapped",
        [("UPDATE episode_pieces SET k = ? WHERE k = ?", (b"~" + a, a)) for a in keys]
        + [("UPDATE episode_pieces SET k = ? WHERE k = ?", (b, b"~" + a)) for a, b in zip(keys, keys[1:] + keys[:1])],
    )
    damaged = copy("damaged", [("UPDATE episode_pieces SET v = substr(v, 1, length(v) - 3)",)])
    for d in (older, missing, swapped, damaged):
        r = TranscriptReader(d)
        for rec, walk in zip(recs, walks):
            assert r._indexed(*_asked(rec)) is None
            assert transcript_of(rec, r) == walk
    first, second = copy("first", []), copy("second", [("DELETE FROM episode_pieces",)])
    empty = copy("empty", [(f"DELETE FROM {t}",) for t in ("nodes", "blobs", "episode_pieces")])
    for readers in ([first, second], [second, first], [empty, first]):
        sharded = ShardedTranscriptReader(readers)
        for rec, walk in zip(recs, walks):
            assert transcript_of(rec, sharded) == walk
    embedding = [reader, TranscriptReader(older), ShardedTranscriptReader([second, first])]  # index, walks
    for r in embedding:  # as the report reads: stored JSON embedded as read
        for rec, walk in zip(recs, walks):
            got = transcript_of(rec, r, fragments=True)
            assert json.loads(orjson.dumps(got)) == _as_embedded(walk, _asked(rec)[1])


def _as_embedded(walk, texts):
    """`walk` as the report's readers answer it (`TranscriptReader._form`), parsed: a message (a
    blob the calls do not name as a text) is ["j", the message], the other blobs as before."""
    blobs = {h: ["j", json.loads(b[1])] if b[0] == "t" and h not in texts else b for h, b in walk["blobs"].items()}
    return {**walk, "blobs": blobs}


def test_the_report_reads_each_records_file_once(toy, monkeypatch):
    """The episodes' details are packed as the tables' pass streams the records (collect's
    `on_record`), not in a second read of every record; every episode is still listed, with the
    place of its own details."""
    from runners.records import store

    reads: list[str] = []
    real = store.record_lines

    def counted(path, *a, **k):
        if path.name.startswith("episodes."):  # the records (errors.jsonl, a few lines, aside)
            reads.append(str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(store, "record_lines", counted)
    index, blocks = gather(toy)
    assert reads and len(reads) == len(set(reads)) == len(index["cells"])  # one read per cell's records
    payloads = unpack(index, blocks)
    assert len(payloads) == len(index["episodes"]) == sum(c["n_episodes"] for c in index["cells"])
    at = index["episode_fields"].index("payload")
    assert sorted(e[at] for e in index["episodes"]) == list(range(len(payloads)))  # each its own details
    for row, p in zip(index["episodes"], payloads):
        assert index["cells"][row[0]]["cell"] == p["record"]["cell"] and p["record"]["task_id"] == row[1]


def test_the_transcript_store_is_mapped_only_when_asked(demo):
    """`HARNESS_TRANSCRIPT_MMAP_MB` (read when the module loads): unset, a reader maps nothing (the
    mapped pages would count in the view's resident size); set, SQLite maps that many MiB."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    cell = next(d for d in demo.iterdir() if (d / "transcripts.sqlite").exists())
    code = (
        "import sys; from runners.records.transcripts import TranscriptReader; "
        "print(TranscriptReader(sys.argv[1])._conn().execute('PRAGMA mmap_size').fetchone()[0])"
    )
    root = Path(__file__).resolve().parents[2]
    for value, want in ((None, 0), ("8", 8 << 20)):
        env = {k: v for k, v in os.environ.items() if k != "HARNESS_TRANSCRIPT_MMAP_MB"}
        if value is not None:
            env["HARNESS_TRANSCRIPT_MMAP_MB"] = value
        out = subprocess.run([sys.executable, "-c", code, str(cell)], cwd=root, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert int(out.stdout.strip()) == want


def test_a_cell_written_with_rows_takes_index_first_episodes_on_resume(tmp_path):
    """A cell an older harness wrote (schema 2: blob and node rows) resumed by this one: its new
    episodes are written index-first into the same store, and every call of both kinds reads the
    messages and texts of the same sweep run at once, as does the report's payload of every episode."""
    import sqlite3

    from runners.records.store import stream_cell
    from runners.records.transcripts import TranscriptReader

    out = tmp_path / "mixed"
    first = run_sweep(
        out, "backbone.scripted.malformed_rate=0.2", "runner.trials=1", env={"HARNESS_TRANSCRIPT_ROWS": "1"}
    )
    assert first.returncode == 0, first.stderr
    rows_before = {}
    for cell in (out / "offline_demo").iterdir():
        if (cell / "transcripts.sqlite").exists():
            db = sqlite3.connect(cell / "transcripts.sqlite")
            assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]  # written with rows
            rows_before[cell.name] = db.execute("SELECT COUNT(*) FROM episode_pieces").fetchone()[0]
    assert rows_before and all(rows_before.values())
    again = run_sweep(out, "backbone.scripted.malformed_rate=0.2", "runner.trials=2")  # each cell's second trial
    assert again.returncode == 0, again.stderr
    at_once = run_sweep(tmp_path / "ref", "backbone.scripted.malformed_rate=0.2", "runner.trials=2")
    assert at_once.returncode == 0, at_once.stderr
    mixed, ref = open_experiment(out / "offline_demo"), open_experiment(tmp_path / "ref" / "offline_demo")
    n_old = n_new = 0
    for cell in mixed.cells:
        if cell.name not in rows_before:
            continue
        db = sqlite3.connect(cell.dir / "transcripts.sqlite")
        kinds = dict(db.execute("SELECT substr(v, 1, 1), COUNT(*) FROM episode_pieces GROUP BY 1").fetchall())
        # the old episodes' rows (schema 2) kept; the new ones' written index-first (schema 3), but
        # for an episode whose transcript one of the old rows already holds (the same piece key)
        assert kinds[b"\x01"] == rows_before[cell.name] and 1 <= kinds.get(b"\x02", 0) <= rows_before[cell.name]
        ref_cell = ref.cell(cell.name)
        for ep in cell.episodes():
            ref_ep = ref_cell.episode(ep.task_id, ep.trial)
            for c, r in zip(ep.calls(), ref_ep.calls(), strict=True):
                assert (c.messages, c.text, c.reasoning) == (r.messages, r.text, r.reasoning)
            n_old += ep.trial == 0
            n_new += ep.trial > 0
        reader = TranscriptReader(cell.dir)
        for rec in stream_cell(cell.dir)[1]:
            assert transcript_of(rec, reader)["missing"] == []
    assert n_old and n_new
