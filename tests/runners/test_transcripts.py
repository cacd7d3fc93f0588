"""The transcript store: exact messages and raw replies recovered through runners.records.results,
content addressing (linear storage for a growing history), kill -9 in the middle of a write,
a damaged database set aside, and records from before transcripts existed."""

import collections
import json
import signal
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runners.analysis.episodes import _calls, transcript_of
from runners.api import Completion, Usage
from runners.episode import RecordingBackbone
from runners.records.schema import CallLog, EpisodeRecord, RequestRecord, StepRecord
from runners.records.results import open_experiment
from runners.records.transcripts import (
    TRANSCRIPTS,
    WAL,
    TranscriptError,
    TranscriptReader,
    TranscriptStore,
    canonical,
)
from scripts.chaos.server import request_key
from tests.fake_openai import FakeOpenAI
from tests.runners.sweep_helpers import REPO, run_sweep

PROBE = 'no block here <script>alert(1)</script> <img src=x onerror="alert(2)"> </textarea> </script> <!--'
REASON = "thinking about it </script> carefully"


def responder(body):
    """Judge prompts get 'yes'; agent calls alternate (by prompt hash) between a ReAct final
    answer and an unparseable reply full of HTML probes; the first ask of an episode (a system and
    a user message) is always the unparseable one, so every run sees one whatever the prompts' hashes."""
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "equivalent" in system.lower() and "yes or no" in system.lower():
        return "yes"
    if len(body["messages"]) == 2 or int(request_key({"m": body["messages"]})[:2], 16) % 2:
        return PROBE
    return '<tool_calls>[]</tool_calls><assistant_message>{"content": "42 </script>"}</assistant_message>'


ARGS = (
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "backbone.timeout_s=5",
    "backbone.max_retries=0",
    "runner.cache=false",
    "runner.concurrency=2",
    "experiment.name=tx",
    "roles.judge=agent",
    "roles.tool=agent",
)


def test_exact_messages_and_raw_text_match_what_the_server_saw(tmp_path):
    with FakeOpenAI(responder=responder, reasoning=lambda b: REASON) as srv:
        p = run_sweep(tmp_path, *ARGS, env={"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "k"})
        bodies = list(srv.bodies)
    assert p.returncode == 0, p.stderr
    served = collections.Counter((json.dumps(b["messages"], sort_keys=True), responder(b)) for b in bodies)
    by_messages = {json.dumps(b["messages"], sort_keys=True): b for b in bodies}
    exp = open_experiment(tmp_path / "tx")
    (cell,) = exp.cells
    recovered = collections.Counter()
    malformed_seen = 0
    for ep in cell.episodes():
        for call in ep.calls():
            assert call.has_transcript and call.n_messages == len(call.messages)
            recovered[(json.dumps(call.messages, sort_keys=True), call.text)] += 1
            assert call.reasoning == REASON
            sampling = dict(call.sampling)  # the effective request: body = model + messages + sampling + extra_body
            body = {"model": "fake-model", "messages": call.messages, **sampling.pop("extra_body", {}), **sampling}
            assert body == by_messages[json.dumps(call.messages, sort_keys=True)]
        for step in ep.steps:
            if step.protocol_errors:  # an unparseable reply: its raw text is now visible beside the error
                malformed_seen += 1
                assert PROBE in [c.text for c in step.calls]
    assert recovered == served and sum(served.values()) == len(bodies) > 0
    assert malformed_seen > 0


def _record(n_steps: int, recorder: RecordingBackbone, sink: list) -> EpisodeRecord:
    """Drive `recorder` like Full Context: each call resends the whole history plus one turn."""
    import asyncio

    class Echo:
        name = model = "echo"

        async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
            return Completion(
                text=f"reply to turn {len(messages)}", role=role, model="echo", usage=Usage(prompt_tokens=1)
            )

    recorder.inner = Echo()
    history = [{"role": "system", "content": "S" * 2000}]
    rr = RequestRecord(request={"index": 0, "request_id": "q1", "text": "go"})
    for t in range(n_steps):
        history.append({"role": "user", "content": f"observation {t} " + "x" * 300})
        c = asyncio.run(recorder.complete(list(history), role="agent", temperature=0.0))
        history.append({"role": "assistant", "content": c.text})
        rr.steps.append(StepRecord(t=t + 1, observation={}, decision={}, calls=list(sink)))
        sink.clear()
    return EpisodeRecord(cell="c", task_id="t", trial=0, seed=0, requests=[rr])


def test_growing_history_is_stored_once(tmp_path):
    sink: list[CallLog] = []
    rec = _record(40, _rb(sink), sink)
    store = TranscriptStore(tmp_path).open()
    store.put(rec)
    store.close()
    reader = TranscriptReader(tmp_path)
    st = reader.stats()
    assert st["nodes"] == 40  # one run per call: the shared prefix by reference, the new pieces by hash
    assert st["blobs"] == 1 + 40 + 39 + 40  # system, observations, replies resent as messages, raw replies
    last = rec.requests[0].steps[-1].calls[0]
    msgs = reader.messages(last.prompt)
    assert (
        len(msgs) == last.n_messages == 80
        and msgs[0]["content"] == "S" * 2000
        and msgs[-1]["content"].startswith("observation 39")
    )
    # pending text is dropped from memory once stored; the record line carries references only
    assert last.pending_transcript() is None and "observation 39" not in rec.model_dump_json()


def test_a_held_transcript_travels_with_its_call_and_leaves_no_trace_once_cleared():
    """The pending blobs live outside the model's fields (no pydantic private attribute, whose set-up
    would run at every CallLog construction): a call that held and cleared them is equal to one that
    never did, and neither the record's JSON nor a copy made for storage carries them."""
    import pickle

    from runners.records.transcripts import Pending

    assert CallLog.__private_attributes__ == {}  # nothing for pydantic to set up per construction
    fields = {"role": "agent", "model": "m", "usage": Usage(prompt_tokens=3), "prompt": "ab" * 16}
    plain, held = CallLog(**fields), CallLog(**fields)
    p = Pending()
    p.blobs["cd" * 16] = b"a message"
    held.hold_pending_transcript(p)
    assert held.pending_transcript() is p and plain.pending_transcript() is None
    assert held != plain  # a call still carrying blobs is not yet the stored call
    assert held.model_dump() == plain.model_dump() and b"a message" not in held.model_dump_json().encode()
    copy = pickle.loads(pickle.dumps(held))
    assert copy.pending_transcript().blobs == p.blobs  # a worker process hands the call on whole
    held.clear_pending_transcript()
    assert held.pending_transcript() is None and held == plain
    held.hold_pending_transcript(None)
    assert held.pending_transcript() is None and held == plain


def test_history_growing_inside_one_message_is_stored_once(tmp_path):
    """Full Context's default rendering: one user message whose history section grows each step."""
    import asyncio

    sink: list[CallLog] = []
    rb = _rb(sink)
    rb.inner = _Echo()
    lines, sent = [], 0
    for t in range(40):
        lines.append(f"Step {t} action: search(query='item {t}') -> observation {t}: " + "detail " * 30)
        user = (
            "<history>\n"
            + "\n".join(lines)
            + "\n</history>\n<latest>\nobservation %d\n</latest>\n<query>\nbuy it\n</query>" % t
        )
        msgs = [{"role": "system", "content": "rules\n" * 200}, {"role": "user", "content": user}]
        sent += len(json.dumps(msgs))
        asyncio.run(rb.complete(msgs, role="agent"))
    rec = EpisodeRecord(cell="c", task_id="t", trial=0, seed=0, task_calls=list(sink))
    TranscriptStore(tmp_path).open().put(rec)
    reader = TranscriptReader(tmp_path)
    assert reader.messages(sink[-1].prompt) == msgs
    distinct = len("rules\n" * 200) + sum(len(x) + 1 for x in lines)
    st = reader.stats()
    assert st["blob_bytes_stored"] < 1.5 * distinct < sent / 10  # linear in the distinct text, not in what was sent
    assert st["blobs"] == 1 + 40 + 1  # system, 40 user messages (39 of them deltas of the one before), the reply


class _Echo:
    """A backbone that answers "ok" to every call."""

    name = model = "echo"

    async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
        return Completion(text="ok", role=role, model="echo")


def _rb(sink):
    class Placeholder:
        name = model = "echo"

    return RecordingBackbone(Placeholder(), sink)


CHILD = textwrap.dedent("""
    import sys, asyncio
    sys.path.insert(0, {repo!r})
    from tests.runners.test_transcripts import _record, _rb
    from runners.records.transcripts import TranscriptStore, digest
    store = TranscriptStore({d!r}).open()
    i = 0
    while True:
        sink = []
        rec = _record(8, _rb(sink), sink)
        for s in rec.requests[0].steps:  # distinct text per episode: every put writes new rows
            blobs = {{digest(f"{{i}}-{{k}}".encode()): b"y" * 4096 for k in range(50)}}
            s.calls[0].pending_transcript().blobs.update(blobs)
        store.put(rec)
        print(rec.requests[0].steps[-1].calls[0].prompt, rec.model_dump_json(), sep="\t", flush=True)
        i += 1
""")


@pytest.mark.parametrize("after", [1, 4])
def test_kill_9_mid_write_loses_nothing_committed(tmp_path, after):
    """SIGKILL the writer while it is inside its next transaction (it writes continuously)."""
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(repo=str(REPO), d=str(tmp_path))],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = [p.stdout.readline() for _ in range(after)]
    p.send_signal(signal.SIGKILL)
    out, err = p.communicate(timeout=10)
    lines += out.splitlines(keepends=True)
    lines = [ln for ln in lines if ln.endswith("\n")]  # a line cut by the kill was never reported
    assert len(lines) >= after, err
    committed = [ln.split("\t")[0] for ln in lines]
    recs = [json.loads(ln.split("\t")[1]) for ln in lines]
    if WAL:  # the store was in write-ahead-log mode: the log is beside it, and a read-only reader reads it
        assert (tmp_path / (TRANSCRIPTS + "-wal")).exists()
    before = TranscriptReader(tmp_path)  # before any writer opens it again
    for rec in recs:
        assert transcript_of(rec, before)["missing"] == []
    before.close()
    store = TranscriptStore(tmp_path).open()  # hot-journal rollback (or log recovery) of the torn transaction
    assert store.moved_aside is None
    sink: list[CallLog] = []
    later = _record(3, _rb(sink), sink)  # the recovered store takes new episodes, with their index rows
    store.put(later)
    store.close()
    reader = TranscriptReader(tmp_path)
    for head in committed:  # everything reported durable can be read back in full
        assert len(reader.messages(head)) == 16 and reader.messages(head)[-1]["content"].startswith("observation 7")
    for rec in recs + [json.loads(later.model_dump_json())]:  # each with its piece index row, its only directory
        assert reader._indexed(*_asked(rec)) is not None
        indexed = transcript_of(rec, reader)
        reader.use_index = False
        assert transcript_of(rec, reader)["nodes"] == {} and indexed["missing"] == []  # no rows to walk
        reader.use_index = True
        view = reader.episode(*_asked(rec))  # the episode's messages from its index row, as by hash
        assert all(view.messages(c["prompt"]) == reader.messages(c["prompt"]) for c in _calls(rec))
    assert reader._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _asked(rec):
    """The sorted heads and texts `transcript_of` asks `pieces` for."""
    calls = [c for c in _calls(rec) if c.get("prompt") is not None]
    heads = sorted({c["prompt"] for c in calls if c["prompt"]})
    texts = sorted({c[k] for c in calls for k in ("reply", "reasoning", "tools", "reply_tool_calls") if c.get(k)})
    return heads, texts


def test_damaged_database_is_set_aside_not_deleted(tmp_path):
    (tmp_path / TRANSCRIPTS).write_bytes(b"this is not a database" * 100)
    with pytest.warns(UserWarning, match="moved aside"):
        store = TranscriptStore(tmp_path).open()
    store.close()
    assert (tmp_path / "transcripts.corrupt-1.sqlite").read_bytes().startswith(b"this is not")
    assert TranscriptReader(tmp_path).stats()["blobs"] == 0


def test_old_records_without_transcripts_still_load(tmp_path):
    out = tmp_path / "old"
    assert (
        run_sweep(out, "runner.transcripts=false", "method=full_context", "benchmark=memoryarena_phys").returncode == 0
    )
    (cell,) = open_experiment(out / "offline_demo").cells
    assert not (cell.dir / TRANSCRIPTS).exists()
    ep = cell.episodes()[0]
    assert not ep.has_transcript
    with pytest.raises(TranscriptError, match="no transcript recorded"):
        _ = ep.steps[0].calls[0].messages
    assert canonical({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_storage_benchmark_meets_its_target():
    """scripts/perf/transcripts.py on a short run: the transcript stays within 1.5× its distinct text."""
    from scripts.perf.transcripts import measure

    r = measure(12)
    assert r["status"] == "ok" and r["steps"] == 12
    assert r["logical"] <= 1.5 * r["distinct"] and r["naive"] > 3 * r["logical"]


def test_native_tool_calls_and_tool_schemas_are_kept(tmp_path):
    """τ's native function-calling agent: the tool schemas sent and the tool calls that came back."""
    assert run_sweep(tmp_path, "method=tau_native", "benchmark=tau_airline", "runner.limit=1").returncode == 0
    (cell,) = open_experiment(tmp_path / "offline_demo").cells
    agent = [c for c in cell.episodes()[0].calls() if c.role == "agent"]
    assert agent and all(c.tools and all(t["type"] == "function" for t in c.tools) for c in agent)
    made = [t["name"] for c in agent for t in c.tool_calls]
    assert made == [s.decision.tool_calls[0].name for s in cell.episodes()[0].steps if s.decision.tool_calls]
    assert made  # the gold actions of the fixture task


def test_an_episode_is_one_pack_and_text_shared_across_episodes_is_stored_once(tmp_path):
    store = TranscriptStore(tmp_path).open()
    heads = []
    for _ in range(2):  # two episodes of the same shape: the 2000-char system prompt is common to both
        sink: list[CallLog] = []
        rec = _record(6, _rb(sink), sink)
        store.put(rec)
        heads.append(rec.requests[0].steps[-1].calls[0].prompt)
    store.close()
    reader = TranscriptReader(tmp_path)
    st = reader.stats()
    assert st["packs"] == 1  # the second episode introduced nothing new: no pack, no rows
    sink = []
    rec = _record(6, _rb(sink), sink)
    rec.requests[0].steps[0].calls[0].pending_transcript().blobs["00" * 16] = b"only in the third episode " * 40
    store = TranscriptStore(tmp_path).open()
    store.put(rec)
    store.close()
    reader = TranscriptReader(tmp_path)
    assert reader.stats()["packs"] == 2 and reader.stats()["blobs"] == st["blobs"] + 1
    assert reader.text("00" * 16) == "only in the third episode " * 40
    assert reader.messages(heads[0])[0]["content"] == "S" * 2000 and len(reader.messages(heads[1])) == 12
    db = reader._conn()
    assert db.execute("SELECT MIN(codec), MAX(codec) FROM blobs").fetchone() == (3, 3)  # every row points into a pack
    # the first pack is compressed alone (zstd); later ones with its payloads as zstd dictionary
    assert db.execute("SELECT codec FROM packs ORDER BY id").fetchall() == [(5,), (6,)]
    assert db.execute("SELECT v FROM meta WHERE k = 'zdict'").fetchone() == ("1",)
    fresh = TranscriptReader(tmp_path)  # nothing cached: the dictionary pack is read first
    assert fresh.text("00" * 16) == "only in the third episode " * 40
    assert db.execute("SELECT MAX(LENGTH(data)) FROM blobs").fetchone()[0] == 12  # rows stay small


def test_packs_written_with_zlib_still_read_and_the_cell_takes_new_episodes(tmp_path):
    """Cells written before zstd hold zlib packs (the first alone, later ones with its payloads as
    zlib dictionary): read as they were, and new packs of the cell use the same dictionary pack."""
    import sqlite3
    import zlib

    from runners.records.transcripts import ZDICT_BYTES, ZLIB, ZLIB_DICT

    store = TranscriptStore(tmp_path).open()
    heads = []
    for k in range(3):
        sink: list[CallLog] = []
        rec = _record(6, _rb(sink), sink)
        rec.requests[0].steps[0].calls[0].pending_transcript().blobs[f"{k:02d}" * 16] = f"episode {k} ".encode() * 50
        store.put(rec)
        heads.append(rec.requests[0].steps[-1].calls[0].prompt)
    store.close()
    reader = TranscriptReader(tmp_path)
    want = [reader.messages(h) for h in heads] + [reader.text(f"{k:02d}" * 16) for k in range(3)]
    raws = {pid: reader._pack(pid) for (pid,) in reader._conn().execute("SELECT id FROM packs")}
    db = sqlite3.connect(tmp_path / "transcripts.sqlite")  # the packs as the former version wrote them
    zdict = raws[1][-ZDICT_BYTES:]
    for pid, raw in raws.items():
        if pid == 1:
            db.execute("UPDATE packs SET codec = ?, data = ? WHERE id = 1", (ZLIB, zlib.compress(raw, 6)))
        else:
            c = zlib.compressobj(6, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict)
            db.execute(
                "UPDATE packs SET codec = ?, data = ? WHERE id = ?", (ZLIB_DICT, c.compress(raw) + c.flush(), pid)
            )
    db.commit()
    db.close()
    old = TranscriptReader(tmp_path)
    assert [old.messages(h) for h in heads] + [old.text(f"{k:02d}" * 16) for k in range(3)] == want
    store = TranscriptStore(tmp_path).open()
    sink = []
    rec = _record(6, _rb(sink), sink)
    rec.requests[0].steps[0].calls[0].pending_transcript().blobs["77" * 16] = b"a new episode " * 50
    store.put(rec)
    store.close()
    new = TranscriptReader(tmp_path)
    assert new.text("77" * 16) == "a new episode " * 50 and new.text("01" * 16) == "episode 1 " * 50
    assert new._conn().execute("SELECT codec FROM packs ORDER BY id").fetchall()[-1] == (6,)  # zstd, zlib's dictionary


def test_a_database_written_before_packs_still_reads_and_takes_new_episodes(tmp_path):
    """Schema 1 stored each blob in its own row (raw, zlib, or a zlib delta)."""
    import sqlite3
    import zlib

    from runners.records.transcripts import DELTA, RAW, ZLIB, _b

    sink: list[CallLog] = []
    old = _record(5, _rb(sink), sink)
    db = sqlite3.connect(tmp_path / TRANSCRIPTS)
    db.executescript(
        "CREATE TABLE blobs (h BLOB PRIMARY KEY, codec INTEGER NOT NULL, base BLOB NOT NULL, data BLOB NOT NULL) "
        "WITHOUT ROWID;"
        "CREATE TABLE nodes (h BLOB PRIMARY KEY, parent BLOB NOT NULL, take INTEGER NOT NULL, pieces BLOB NOT NULL, "
        "tail INTEGER NOT NULL) WITHOUT ROWID;"
        "CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL); INSERT INTO meta VALUES ('schema', '1');"
    )
    codecs = set()
    for s in old.requests[0].steps:
        p = s.calls[0].pending_transcript()
        for h, data in p.blobs.items():
            if isinstance(data, tuple):
                row = (_b(h), DELTA, _b(data[0]), zlib.compress(data[1]))
            else:
                row = (_b(h), RAW, b"", data) if len(data) < 40 else (_b(h), ZLIB, b"", zlib.compress(data))
            codecs.add(row[1])
            db.execute("INSERT INTO blobs VALUES (?, ?, ?, ?)", row)
        for h, (parent, take, pieces, tail) in p.nodes.items():
            db.execute("INSERT INTO nodes VALUES (?, ?, ?, ?, ?)", (_b(h), _b(parent), take, pieces, tail))
    db.commit()
    db.close()
    assert codecs >= {RAW, ZLIB}
    head = old.requests[0].steps[-1].calls[0].prompt
    want = TranscriptReader(tmp_path).messages(head)
    assert len(want) == 10 and want[-1]["content"].startswith("observation 4")
    assert TranscriptReader(tmp_path).stats()["packs"] == 0
    sink = []
    new = _record(8, _rb(sink), sink)
    store = TranscriptStore(tmp_path).open()
    store.put(new)
    store.close()
    reader = TranscriptReader(tmp_path)
    assert reader.messages(head) == want and len(reader.messages(new.requests[0].steps[-1].calls[0].prompt)) == 16
    # rows of schema 1 (not in a pack) cannot be named by a piece index row: the new episode stores its
    # payloads again (the system prompt too), in its own pack, and its index row is its directory
    db = reader._conn()
    assert db.execute("SELECT COUNT(*) FROM episode_pieces").fetchone()[0] == 1
    assert db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == len(
        {h for s in old.requests[0].steps for h in s.calls[0].pending_transcript().blobs}
    )
    indexed = transcript_of(json.loads(new.model_dump_json()), reader)
    assert indexed["missing"] == [] and len(indexed["nodes"]) == 8
    reader.use_index = False  # the walk finds the old rows only
    assert transcript_of(json.loads(new.model_dump_json()), reader)["missing"]
    assert reader.stats()["packs"] == 1 and db.execute("SELECT v FROM meta WHERE k = 'schema'").fetchone()[0] == "3"


_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)),
)
_json_like = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-3, 3)), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_json_like)
def test_canonical_bytes_are_the_standard_librarys(obj):
    """Hashes of stored messages depend on these bytes: the fast orjson path must not change them
    (floats, lone surrogates, big ints, tuples and int keys included)."""
    try:
        ref = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode(
            "utf-8", "surrogatepass"
        )
    except TypeError:  # mixed str/int keys cannot be sorted: the same error as before
        with pytest.raises(TypeError):
            canonical(obj)
        return
    assert canonical(obj) == ref


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF)), st.text(max_size=8))
def test_a_text_message_is_stored_as_its_canonical_bytes(content, role):
    """A text-only message skips `canonical`'s walk (`Encoder.message(..., text=True)`): its blob
    and hash are still the standard library's bytes (lone surrogates included)."""
    from runners.records.transcripts import Encoder, Pending, digest

    m = {"role": role, "content": content}
    ref = json.dumps(m, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    pending = Pending()
    assert Encoder().message(m, None, pending, True) == digest(ref) and pending.blobs == {digest(ref): ref}


_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.sampled_from("abc")})


@settings(max_examples=300, deadline=None)
@given(st.lists(_message, max_size=6), st.lists(st.tuples(st.integers(0, 8), st.integers(0, 2), _message), max_size=8))
def test_a_prompts_key_is_the_same_whatever_the_encoder_saw_before(start, edits):
    """`Encoder.messages` reuses what it knows of the last prompt (the leading messages equal to it
    and their prefix chain): the key of every prompt of a conversation that grows, is cut and is
    edited in place is still the key a fresh encoder gives that prompt alone."""
    from runners.records.transcripts import Encoder, Pending

    msgs, enc, prompts = list(start), Encoder(), []
    for at, how, m in edits:
        if how == 0:
            msgs.append(m)
        elif how == 1:
            del msgs[at:]
        elif msgs:
            msgs[at % len(msgs)]["content"] += m["content"]  # the caller edits its own message
        prompts.append([dict(x) for x in msgs] if at % 2 else msgs)  # copies, or the very same objects
        assert enc.messages(prompts[-1], Pending(), "agent") == Encoder().messages(prompts[-1], Pending(), "agent")


@given(st.text(alphabet="ab\n\r\u2028\x0b", max_size=30))
def test_lines_cut_after_each_newline_only(text):
    import re

    from runners.records.transcripts import lines

    assert lines(text) == [x for x in re.split(r"(?<=\n)", text) if x]
    assert "".join(lines(text)) == text


def _line_delta_by_lines(a, b):
    """The reference: `lines(a)` and `lines(b)` compared element by element from the start, then
    from the end of what is left (the encoder's rule before it compared characters)."""
    from runners.records.transcripts import lines

    al, bl = lines(a), lines(b)
    pre = 0
    for x, y in zip(al, bl):
        if x != y:
            break
        pre += 1
    suf = 0
    for x, y in zip(reversed(al[pre:]), reversed(bl[pre:])):
        if x != y:
            break
        suf += 1
    return pre, suf, "".join(bl[pre : len(bl) - suf])


@settings(max_examples=3000, deadline=None)
@given(*[st.text(alphabet="ab\n", max_size=14)] * 3)
def test_line_delta_is_the_line_by_line_comparison(head, middle, tail):
    """The delta a growing message is stored as (lines kept from the start and the end of the one
    before, and the new text between) comes out as comparing the two texts' lines would give it:
    texts sharing a start and an end, edge cases of line ends at either side of the change."""
    from runners.records.transcripts import apply_delta, line_delta

    pairs = ((head + tail, head + middle + tail), (head + middle + tail, head + tail), (head, middle), (head, head))
    for a, b in pairs:
        got = line_delta(a, b)
        assert got == _line_delta_by_lines(a, b), (a, b)
        delta = canonical({"m": {"role": "user"}, "p": got[0], "s": got[1], "x": got[2]})
        assert apply_delta({"role": "user", "content": a}, delta) == {"role": "user", "content": b}


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="ab", max_size=150), st.text(alphabet="ab", max_size=40), st.text(alphabet="ab", max_size=40))
def test_common_prefix_and_suffix_are_the_character_by_character_counts(head, a, b):
    """The binary searches (C-level comparisons of halves, first inside the leading or trailing
    `_NEAR` = 64 characters) count what a character-by-character walk counts (texts sharing a start,
    an end, both or nothing; shared runs shorter and longer than 64)."""
    from runners.records.transcripts import _common_prefix, _common_suffix

    def walk(x, y):
        n = 0
        while n < min(len(x), len(y)) and x[n] == y[n]:
            n += 1
        return n

    for x, y in ((head + a, head + b), (a + head, b + head), (a, b), (head, head + a), (a + head, head)):
        assert _common_prefix(x, y) == walk(x, y), (x, y)
        assert _common_suffix(x, y) == walk(x[::-1], y[::-1]), (x, y)


def test_common_prefix_and_suffix_at_the_edges_of_the_first_comparison():
    """Shared runs of every length around `_NEAR` (the first comparison's 64 characters) and the
    halving's powers of two, in texts longer than the run and of unequal lengths."""
    from runners.records.transcripts import _NEAR, _common_prefix, _common_suffix

    for n in sorted({0, 1, 2, *range(_NEAR - 3, _NEAR + 4), 127, 128, 129, 255, 256, 257}):
        for rest_a, rest_b in (("x" * 300, "y" * 300), ("x" * 300, "y" * 70), ("xy" * 40, "z")):
            shared = "".join("ab"[(i * 7) % 3 % 2] for i in range(n))
            assert _common_prefix(shared + rest_a, shared + rest_b) == n, (n, len(rest_a), len(rest_b))
            assert _common_suffix(rest_a + shared, rest_b + shared) == n, (n, len(rest_a), len(rest_b))


def test_a_message_the_caller_edits_after_the_call_keeps_its_transcript(tmp_path):
    """The encoder remembers the previous prompt's messages as delta bases and to skip hashing a
    message sent again unchanged: a method that edits its message list in place afterwards (the
    same dicts, new text) still gets every prompt stored exactly as it was sent."""
    import asyncio

    sink: list[CallLog] = []
    rb = _rb(sink)
    rb.inner = _Echo()
    system = {"role": "system", "content": "rules\n" * 50}
    user = {"role": "user", "content": "step 0\n" + "history line\n" * 40}
    sent = []
    for t in range(6):
        asyncio.run(rb.complete([system, user], role="agent"))
        sent.append(json.loads(json.dumps([system, user])))
        system["content"] = system["content"] if t % 2 else "rules\n" * 50 + f"edited {t}\n"  # same dict, new text
        user["content"] = user["content"] + f"step {t + 1}\n"
    rec = EpisodeRecord(cell="c", task_id="t", trial=0, seed=0, task_calls=list(sink))
    TranscriptStore(tmp_path).open().put(rec)
    reader = TranscriptReader(tmp_path)
    assert [reader.messages(c.prompt) for c in sink] == sent


def test_a_call_that_raises_without_a_log_loses_no_text_of_later_calls(tmp_path):
    """The prompt's transcript is made before the call (its hashes key the attempt number): when
    the call then ends without a log (cancelled, or a backbone bug that a method catches), the
    text it would have stored travels with the next call's log, so a later prompt that repeats
    it (the same system message) still reads back in full."""
    import asyncio

    sink: list[CallLog] = []
    rb = _rb(sink)
    calls = []

    class FailsFirst(_Echo):
        async def complete(self, messages, *, role, protocol=None, attempt=0, **sampling):
            calls.append(attempt)
            if len(calls) == 1:
                raise RuntimeError("a bug in a backbone")
            return await super().complete(messages, role=role)

    rb.inner = FailsFirst()
    system = {"role": "system", "content": "rules\n" * 50}
    prompts = [[system, {"role": "user", "content": f"question {k}\n" * 20}] for k in range(3)]

    async def go():
        with pytest.raises(RuntimeError):
            await rb.complete(prompts[0], role="agent")
        for p in prompts[1:]:
            await rb.complete(p, role="agent")

    asyncio.run(go())
    assert len(sink) == 2
    rec = EpisodeRecord(cell="c", task_id="t", trial=0, seed=0, task_calls=list(sink))
    TranscriptStore(tmp_path).open().put(rec)
    reader = TranscriptReader(tmp_path)
    assert [reader.messages(c.prompt) for c in sink] == prompts[1:]


def test_a_reader_reads_while_the_writer_runs_and_a_closed_store_is_one_file(tmp_path):
    """While the writer runs (write-ahead log), a read-only reader reads every committed episode;
    closing checkpoints the log into the file (emptied even with a reader open, whose reads go on),
    and with nobody reading leaves one file in rollback-journal mode."""
    import sqlite3

    store = TranscriptStore(tmp_path).open()
    reader = TranscriptReader(tmp_path)
    for k in range(3):
        sink: list[CallLog] = []
        rec = _record(4 + k, _rb(sink), sink)
        store.put(rec)
        head = rec.requests[0].steps[-1].calls[0].prompt
        assert len(reader.messages(head)) == 2 * (4 + k)  # committed: readable at once
        assert reader.episode(*_asked(json.loads(rec.model_dump_json()))).messages(head) == reader.messages(head)
    if WAL:
        assert (tmp_path / (TRANSCRIPTS + "-wal")).exists()
    store.close()  # the reader still holds its connection
    assert len(reader.messages(head)) == 12
    reader.close()
    wal = tmp_path / (TRANSCRIPTS + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed; the file stays while a reader held it
    TranscriptStore(tmp_path).open().close()  # nobody reading: always one file after close
    assert not (tmp_path / (TRANSCRIPTS + "-wal")).exists()
    assert sqlite3.connect(tmp_path / TRANSCRIPTS).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_payloads_shared_across_episodes_are_stored_once_while_remembered(tmp_path):
    """Index-first: a system prompt every episode sends stays in the writer's bounded map of rows
    (used by each episode, never forgotten) and is stored once; a payload nobody used for longer
    than the map holds is stored again in its new episode's pack; a writer opened on the cell
    again has not seen anything and stores the prompt once more. Every episode reads back whole."""
    from runners.records.transcripts import _Recent
    from scripts.perf.transcripts import _fc_record

    system = canonical({"role": "system", "content": "rules of the game\n" * 100})
    rare = b"a payload used by the first and the last episode only " * 20
    store = TranscriptStore(tmp_path).open()
    store._blob_map = _Recent(40)  # ~2 episodes' rows per generation
    recs = [_fc_record(k, 4) for k in range(30)]
    for k in (0, 29):
        recs[k].requests[0].steps[0].calls[0].pending_transcript().blobs["ab" * 16] = rare
    for rec in recs:
        store.put(rec)
    assert 20 <= len(store._blob_map) <= 40 + 20
    store.close()
    reader = TranscriptReader(tmp_path)

    def stored(payload):
        n_packs = reader._conn().execute("SELECT MAX(id) FROM packs").fetchone()[0]
        return sum(reader._pack(pid).count(payload) for pid in range(1, n_packs + 1))

    assert stored(system) == 1 and stored(rare) == 2
    assert reader._conn().execute("SELECT COUNT(*) FROM blobs").fetchone()[0] == 0
    store = TranscriptStore(tmp_path).open()
    store.put(_fc_record(30, 4))
    store.close()
    reader = TranscriptReader(tmp_path)
    assert stored(system) == 2
    for rec in recs:
        r = json.loads(rec.model_dump_json())
        view = reader.episode(*_asked(r))
        for c in _calls(r):
            msgs = view.messages(c["prompt"])
            assert msgs[0] == json.loads(system) and msgs == reader.messages(c["prompt"])
            assert view.text(c["reply"]).startswith(f"episode {r['task_id'][1:]} reply {len(msgs)} ")
    assert reader.text("ab" * 16) == rare.decode()


@settings(max_examples=500, deadline=None)
@given(
    st.text(max_size=60),
    st.text(max_size=20),
    st.dictionaries(st.sampled_from(["name", "tool_call_id", "ü", "\ud800"]), st.text(max_size=8), max_size=2),
)
def test_a_text_only_delta_has_the_bytes_of_the_general_one(head, grown, extra):
    """`make_delta(..., text=True)` (a message of `str` keys and values only, the encoder's usual
    case) skips `canonical`'s walk: its bytes are those of the general path, with non-ASCII
    text, lone surrogates (the standard library's fallback) and extra keys."""
    from runners.records.transcripts import _text_only, make_delta

    base = {"role": "user", "content": head + "\n"}
    new = {"role": "user", "content": head + "\n" + grown, **extra}
    assert _text_only(new) is not None
    assert make_delta(base, new, text=True) == make_delta(base, new)
