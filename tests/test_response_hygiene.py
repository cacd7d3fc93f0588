"""Response hygiene of the OpenAI-compatible backbone against a real loopback server
(tests/fake_openai.py): `content: null` / empty replies are retried, never cached or scored, and a
re-run against a healthy endpoint repairs them; lone surrogates are sanitised (and recorded)
before anything is serialised, so a sweep with `runner.cache=false` completes;
`max_completion_chars` caps what is stored and parsed; a failing store never ends the sweep."""

import asyncio
import json
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from runners.backbones.openai import OpenAIBackbone
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import records_under, run_sweep

ARGS = (
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "method=full_context",
    "benchmark.params.data_dir=fixtures",
    "backbone.timeout_s=2",
    "backbone.backoff_cap_s=0.01",
    "backbone.max_retries=2",
    "runner.concurrency=3",
    "experiment.name=hygiene",
    "roles.judge=agent",
    "roles.tool=agent",
    "runner.limit=2",
)


def env(srv):
    return {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "sk-test"}


def records(root, name="episodes.jsonl"):
    if name == "episodes.jsonl":  # live or compacted (a finished cell)
        return records_under(root / "hygiene")
    return [
        json.loads(line) for f in (root / "hygiene").rglob(name) for line in f.read_text().splitlines() if line.strip()
    ]


def test_content_null_is_neither_cached_nor_scored_and_a_rerun_repairs_it(tmp_path):
    with FakeOpenAI(responder=lambda body: {"content": None}) as srv:
        run_sweep(tmp_path, *ARGS, env=env(srv))
    assert records(tmp_path) == []  # nothing scored
    errs = records(tmp_path, "errors.jsonl")
    assert errs and all(r["status"] == "infra_error" and "empty reply: content null" in r["error"] for r in errs)
    for db in tmp_path.rglob("responses.sqlite"):
        with sqlite3.connect(db) as con:
            tables = [t for (t,) in con.execute("select name from sqlite_master where type='table'")]
            assert all(con.execute(f"select count(*) from {t}").fetchone()[0] == 0 for t in tables), (
                "an empty reply was cached"
            )
    with FakeOpenAI(responder=react_responder) as srv:
        p = run_sweep(tmp_path, *ARGS, env=env(srv))
    assert p.returncode == 0, p.stderr
    ok = records(tmp_path)
    assert {(r["cell"], r["task_id"]) for r in ok} == {
        (r["cell"], r["task_id"]) for r in errs
    }  # every affected episode repaired
    assert all(r["status"] == "ok" and r["scores"]["subtask_correct"] for r in ok)


def test_lone_surrogate_reply_without_cache_completes_the_sweep(tmp_path):
    def responder(body):
        """A lone surrogate on the wire (the body's JSON string carries it) and one written as a
        `\\ud800` escape inside the model's own JSON block."""
        text = react_responder(body)
        return text if text == "yes" else text.replace('"x"', '"x \\ud800 y"') + " \ud800"

    with FakeOpenAI(responder=responder) as srv:
        p = run_sweep(tmp_path, *ARGS, "runner.cache=false", env=env(srv))
    assert p.returncode == 0, p.stderr + p.stdout
    ok = records(tmp_path)
    assert len(ok) == 4 and records(tmp_path, "errors.jsonl") == []  # math and phys fixtures, 2 tasks each
    calls = [c for r in ok for q in r["requests"] for s in q["steps"] for c in s["calls"]]
    assert any("lone surrogate" in h for c in calls for h in c["hygiene"])
    assert all(a is None or "\ufffd" in a for r in ok for a in r["scores"]["answers"])
    steps = [s for r in ok for q in r["requests"] for s in q["steps"]]
    assert any(rep["kind"] == "invalid_unicode" for s in steps for rep in s["method"].get("repairs", []))


def test_max_completion_chars_caps_and_records():
    async def go():
        with FakeOpenAI(responder=lambda body: "y" * 5000) as srv:
            b = OpenAIBackbone(name="t", model="m", base_url=srv.base_url, api_key="k", max_completion_chars=100)
            c = await b.complete([{"role": "user", "content": "hi"}], role="agent")
            await b.aclose()
            return c

    c = asyncio.run(go())
    assert len(c.text) == 100 and any("cut to max_completion_chars=100" in h for h in c.hygiene)


def test_store_error_makes_a_harness_error_not_a_dead_sweep(tmp_path):
    """The scheduler's store path with a real cell store and transcript store: a record that cannot
    be written (a value no JSON encoder takes; a lone surrogate is sanitised instead, see
    tests/test_inputs.py) is stored as a harness error, run again on resume."""
    from runners.records.schema import EpisodeRecord
    from runners.progress import CellReport, Progress
    from runners.pool import BackbonePool
    from runners.run import Scheduler, _CellRun
    from runners.records.store import EPISODES, ERRORS, CellStore, read_jsonl
    from runners.records.transcripts import TranscriptStore

    store = CellStore(tmp_path, "c").open({"config": {}})
    run = _CellRun(
        prep=None, store=store, report=CellReport(cell="c"), todo=[], transcripts=TranscriptStore(store.dir).open()
    )
    rec = EpisodeRecord(cell="c", task_id="t", trial=0, seed=0, scores={"answer": object()})
    try:
        out = asyncio.run(Scheduler(tmp_path, BackbonePool(None), Progress("none"), 1)._store(run, rec))
    finally:
        run.close()
    assert out.status == "harness_error" and out.scores == {}
    assert out.error.startswith("storing the episode record failed (PydanticSerializationError: ")
    assert out.error.endswith("the episode is recorded as a harness error and run again on resume")
    assert (store.dir / EPISODES).read_text() == "" and store.done == set()
    errors, bad_lines = read_jsonl(store.dir / ERRORS)
    assert [(r["task_id"], r["status"], r["error"]) for r in errors] == [
        ("t", "harness_error", out.error)
    ] and bad_lines == 0


@given(
    st.lists(
        st.sampled_from(
            ["\\ud800", "\\udfff", "\\uD83D\\uDE00", "\\ud83d", "\\ude00", "a", "\\u00e9", "\\\\", "\u00e9"]
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_a_body_orjson_reads_holds_no_lone_surrogate(parts, in_key):
    """OpenAIBackbone skips the surrogate walk for bodies orjson decoded (only the standard
    library's fallback can return lone surrogates): that rests on orjson refusing them."""
    import orjson

    from runners.inputs import _SURROGATE

    text = "".join(parts)
    body = ('{"choices":[{"message":{' + (f'"{text}":1,' if in_key else "") + f'"content":"{text}"' + "}}]}").encode()
    try:
        data = orjson.loads(body)
    except ValueError:
        return  # the standard library reads it; the walk then runs
    assert data == json.loads(body)  # what the standard library reads, too
    msg = data["choices"][0]["message"]
    assert not any(
        _SURROGATE.search(x) for x in [*msg, msg["content"]]
    )  # no lone surrogate (a pair may form from neighbours)
