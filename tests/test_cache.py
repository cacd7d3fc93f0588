"""ResponseCache and CachedBackbone: real SQLite files, real HTTP on 127.0.0.1."""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from runners.api import BackboneError, Completion, Usage
from runners.backbones.openai import OpenAIBackbone
from runners.backbones.scripted import ScriptedBackbone
from runners.cache import CachedBackbone, ResponseCache, cache_key
from tests.fake_openai import FakeOpenAI

MSGS = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def srv():
    with FakeOpenAI(
        usage=lambda body, text: {
            "prompt_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 32},
        }
    ) as s:
        yield s


@pytest.fixture
def cache(tmp_path):
    c = ResponseCache(tmp_path / "cache" / "responses.sqlite")
    yield c
    c.close()


def inner(srv: FakeOpenAI, **kw) -> OpenAIBackbone:
    opts = dict(max_retries=0, timeout_s=2, backoff_base_s=0.01, api_key="k") | kw
    return OpenAIBackbone(
        name="fake",
        model="fake-model",
        base_url=srv.base_url,
        sampling={"temperature": 0.1},
        extra_body={"thinking": {"type": "disabled"}},
        **opts,
    )


async def test_hit_makes_no_request_and_keeps_usage(srv, cache):
    b = CachedBackbone(inner(srv), cache, trial=0)
    first = await b.complete(MSGS, role="agent")
    second = await b.complete(MSGS, role="agent")
    assert srv.requests == 1
    assert not first.cached and second.cached and second.text == first.text
    assert second.usage == first.usage and second.usage.cached_prompt_tokens == 32 and second.usage.source == "api"
    assert second.retries == [] and second.raw_usage == first.raw_usage
    assert (cache.hits, cache.misses, len(cache)) == (1, 1, 1)


async def test_hit_has_no_retries_even_if_the_miss_had_some(srv, cache):
    srv.enqueue("500")
    b = CachedBackbone(inner(srv, max_retries=2), cache, trial=0)
    miss = await b.complete(MSGS, role="agent")
    hit = await b.complete(MSGS, role="agent")
    assert len(miss.retries) == 1 and hit.retries == [] and hit.cached


@pytest.mark.parametrize(
    "change",
    [
        {"trial": 1},
        {"seed": 1},
        {"attempt": 1},
        {"role": "judge"},
        {"sampling": {"temperature": 0.7}},
        {"sampling": {"extra_body": {"seed": 3}}},
        {"sampling": {"tools": [{"type": "function", "function": {"name": "f"}}]}},
        {"messages": [{"role": "user", "content": "hello there!"}]},
    ],
)
async def test_any_key_part_changes_the_key(srv, cache, change):
    base = {"trial": 0, "seed": 0, "attempt": 0, "role": "agent", "sampling": {}, "messages": MSGS}
    await CachedBackbone(inner(srv), cache, trial=0).complete(MSGS, role="agent")
    v = {**base, **change}
    b = CachedBackbone(inner(srv), cache, trial=v["trial"], seed=v["seed"])
    c = await b.complete(v["messages"], role=v["role"], attempt=v["attempt"], **v["sampling"])
    assert not c.cached and srv.requests == 2
    assert (await b.complete(v["messages"], role=v["role"], attempt=v["attempt"], **v["sampling"])).cached
    assert srv.requests == 2


async def test_endpoint_and_model_are_in_the_key(srv, cache):
    await CachedBackbone(inner(srv), cache, trial=0).complete(MSGS, role="agent")
    with FakeOpenAI() as other:
        c = await CachedBackbone(inner(other), cache, trial=0).complete(MSGS, role="agent")
        assert not c.cached and other.requests == 1
    other_model = inner(srv)
    other_model.model = "another-model"
    assert not (await CachedBackbone(other_model, cache, trial=0).complete(MSGS, role="agent")).cached


async def test_errors_are_never_cached(srv, cache):
    b = CachedBackbone(inner(srv), cache, trial=0)
    srv.mode = 500
    with pytest.raises(BackboneError):
        await b.complete(MSGS, role="agent")
    assert len(cache) == 0
    srv.mode = None
    c = await b.complete(MSGS, role="agent")
    assert not c.cached and srv.requests == 2 and len(cache) == 1


async def test_corrupt_row_is_a_miss_and_is_overwritten(srv, cache):
    b = CachedBackbone(inner(srv), cache, trial=0)
    await b.complete(MSGS, role="agent")
    key = b.key(MSGS, role="agent", attempt=0, sampling={})
    assert cache.flush(5)
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE responses SET payload = ? WHERE key = ?", ('{"text": "trunc', key))
    again = await b.complete(MSGS, role="agent")
    assert not again.cached and srv.requests == 2
    assert (await b.complete(MSGS, role="agent")).cached and srv.requests == 2
    assert cache.flush(5)
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE responses SET payload = ? WHERE key = ?", ('{"valid json": "wrong schema"}', key))
    assert cache.get(key) is None


def test_wal_mode_and_persistence(tmp_path):
    path = tmp_path / "r.sqlite"
    c1 = ResponseCache(path)
    assert c1.journal_mode == "wal"
    comp = Completion(text="ä answer", role="agent", model="m", usage=Usage(prompt_tokens=5, completion_tokens=2))
    c1.put("k1", comp)
    assert c1.flush(5)
    assert (tmp_path / "r.sqlite-wal").exists()
    c1.close()
    c2 = ResponseCache(path)  # a re-run of a finished sweep reads the same answers
    assert c2.get("k1") == comp and c2.get("nope") is None and c2.stats() == {"hits": 1, "misses": 1, "entries": 1}
    c2.close()
    assert "pickle" not in sqlite3.connect(path).execute("SELECT payload FROM responses").fetchone()[0]


def test_unreadable_file_degrades_to_misses_with_one_warning(tmp_path, caplog):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    c = ResponseCache(bad)
    comp = Completion(text="x", role="agent", model="m")
    for i in range(3):
        c.put(f"k{i}", comp)
        assert c.get(f"k{i}") is None
    c.close()
    warnings = [r for r in caplog.records if "response cache" in r.getMessage()]
    assert (
        len(warnings) == 1
        and "delete the file" in warnings[0].getMessage()
        and "runner.cache=false" in warnings[0].getMessage()
    )
    assert (
        c.misses == 3 and c.disabled and bad.read_bytes() == b"this is not a database" * 100
    )  # nothing lost or overwritten


def test_write_locked_cache_never_blocks_the_caller(tmp_path, caplog, monkeypatch):
    """Another process holds the write lock (a real SQLite lock on a real file): puts return at
    once, the writer gives up after its busy timeout with one warning, reads keep working."""
    import runners.cache as rc

    monkeypatch.setattr(rc, "WRITE_TIMEOUT_S", 0.3)
    path = tmp_path / "r.sqlite"
    c = ResponseCache(path)
    comp = Completion(text="x", role="agent", model="m")
    c.put("before", comp)
    assert c.flush(5)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held
    holder.execute("INSERT INTO responses VALUES ('other', '{}', 0)")
    t0 = time.perf_counter()
    for i in range(50):
        c.put(f"k{i}", comp)
    assert time.perf_counter() - t0 < 0.1
    assert c.get("before") == comp  # WAL: reading is not blocked by the writer's lock
    assert c.flush(5) and c.disabled and "could not be written" in c.disabled
    c.put("after", comp)
    assert c.get("after") is None
    holder.execute("ROLLBACK")
    holder.close()
    c.close()
    assert len([r for r in caplog.records if "response cache" in r.getMessage()]) == 1


def test_exclusively_locked_cache_reads_are_misses_without_stalling(tmp_path, caplog):
    """A rollback-journal database locked EXCLUSIVE by another connection cannot even be read:
    the cache degrades within its short busy timeout instead of waiting 30 s per call."""
    path = tmp_path / "r.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, payload TEXT NOT NULL, created REAL NOT NULL)")
    db.execute("BEGIN EXCLUSIVE")
    t0 = time.perf_counter()
    c = ResponseCache(path)
    assert all(c.get(f"k{i}") is None for i in range(20))
    assert time.perf_counter() - t0 < 2 and c.disabled
    db.execute("ROLLBACK")
    db.close()
    c.close()
    assert len([r for r in caplog.records if "response cache" in r.getMessage()]) == 1


def test_key_equals_the_pre_orjson_key():
    """Keys built from the recorder's bytes equal the former json.dumps keys (existing caches
    keep their hits), unicode and floats included."""
    import hashlib
    import json

    msgs = [{"role": "system", "content": "Ünïcode — ✓ «q»"}, {"role": "user", "content": 'quote " and \\ and \n'}]
    kw = dict(
        base_url="http://h/v1",
        model="m",
        sampling={"temperature": 0.1, "top_p": 1.0, "max_completion_tokens": 32768},
        extra_body={"thinking": {"type": "disabled"}},
        tools=None,
        trial=2,
        attempt=1,
        role="agent",
    )
    legacy = {**kw, "messages": msgs}
    text = json.dumps(legacy, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert cache_key(messages=msgs, **kw) == hashlib.sha256(text.encode()).hexdigest()
    legacy["seed"] = 5
    text = json.dumps(legacy, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    assert cache_key(messages=msgs, seed=5, **kw) == hashlib.sha256(text.encode()).hexdigest()


def test_thread_safe_within_a_process(cache):
    comp = Completion(text="x", role="agent", model="m")

    def work(t: int) -> int:
        for i in range(40):
            cache.put(f"{t}-{i}", comp)
            assert cache.get(f"{t}-{i}") is not None
        return t

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(work, range(8)))
    assert len(cache) == 320 and cache.hits == 320


def test_key_is_canonical():
    args = dict(
        base_url="http://h/v1",
        model="m",
        sampling={"temperature": 0, "top_p": 1},
        extra_body={},
        tools=None,
        trial=0,
        attempt=0,
        role="agent",
    )
    a = cache_key(messages=[{"role": "user", "content": "q"}], **args)
    b = cache_key(
        messages=[{"content": "q", "role": "user"}],
        **{**args, "base_url": "http://h/v1/", "sampling": {"top_p": 1, "temperature": 0}},
    )
    assert a == b and len(a) == 64
    assert a != cache_key(messages=[{"role": "user", "content": "q"}], **{**args, "attempt": 1})


def test_scripted_backbones_are_not_cached(cache):
    with pytest.raises(TypeError, match="scripted"):
        CachedBackbone(ScriptedBackbone(), cache, trial=0)


def test_seed_zero_keeps_the_pre_seed_key():
    """runner.seed=0 (the default) keys exactly as before the seed joined the key, so existing
    caches stay valid; any other seed is a different key (fresh samples for a seeded re-run)."""
    kw = dict(
        base_url="http://h/v1",
        model="m",
        sampling={},
        extra_body={},
        messages=MSGS,
        tools=None,
        trial=0,
        attempt=0,
        role="agent",
    )
    assert cache_key(**kw) == cache_key(**kw, seed=0) != cache_key(**kw, seed=1)


async def test_backbone_config_sampling_and_extra_body_are_in_the_key(srv, cache):
    await CachedBackbone(inner(srv), cache, trial=0).complete(MSGS, role="agent")
    hot = inner(srv)
    hot.sampling = {"temperature": 0.9}
    assert not (await CachedBackbone(hot, cache, trial=0).complete(MSGS, role="agent")).cached
    thinking = inner(srv)
    thinking.extra_body = {"thinking": {"type": "enabled"}}
    assert not (await CachedBackbone(thinking, cache, trial=0).complete(MSGS, role="agent")).cached
    assert srv.requests == 3


# ------------------------------------------------------------------ secrets in rows written before redaction
OLD_KEY = "sk-old-LEAKED-0123456789abcdef"


def _old_row(cache: ResponseCache, key: str) -> None:
    """A row as a harness without today's redaction wrote it: the key echoed in clear, in hex and in base64."""
    import base64

    leaked = Completion(
        text=f"you sent Bearer {OLD_KEY}",
        role="agent",
        model="fake-model",
        reasoning="hex " + OLD_KEY.encode().hex() + " b64 " + base64.b64encode(f"k={OLD_KEY}".encode()).decode(),
    )
    cache.put(key, leaked)
    assert cache.flush(5)


async def test_a_cached_reply_holding_the_key_is_redacted_on_read(srv, cache, caplog):
    b = CachedBackbone(inner(srv, api_key=OLD_KEY), cache, trial=0)
    _old_row(cache, b.key(MSGS, role="agent", attempt=0, sampling={}))
    hit = await b.complete(MSGS, role="agent")
    assert hit.cached and srv.requests == 0
    dumped = hit.model_dump_json()
    assert OLD_KEY not in dumped and OLD_KEY.encode().hex() not in dumped and "Bearer ***" in hit.text
    assert any("cached reply held a configured secret" in h for h in hit.hygiene)
    await b.complete(MSGS, role="agent")
    warnings = [r.message for r in caplog.records if "runners.cache scrub" in r.getMessage()]
    assert len(warnings) == 1 and cache.redacted_hits == 2  # warned once, naming the fix


def test_scrub_command_rewrites_an_old_cache_and_leaves_no_trace_in_the_file(tmp_path):
    import base64
    import os
    import subprocess
    import sys

    from tests.runners.sweep_helpers import REPO

    path = tmp_path / "out" / ".cache" / "responses.sqlite"
    c = ResponseCache(path)
    _old_row(c, "a" * 64)
    c.put("b" * 64, Completion(text="nothing secret here", role="agent", model="m"))
    c.close()
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    none = subprocess.run(
        [sys.executable, "-m", "runners.cache", "scrub", str(tmp_path / "out")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert none.returncode == 2 and "OPENAI_API_KEY" in none.stderr and "--stdin" in none.stderr
    p = subprocess.run(
        [sys.executable, "-m", "runners.cache", "scrub", str(tmp_path / "out")],
        cwd=REPO,
        env={**env, "OPENAI_API_KEY": OLD_KEY},
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "1 of 2 cached replies held a secret (from OPENAI_API_KEY)" in p.stdout and OLD_KEY not in p.stdout
    raw = b"".join(f.read_bytes() for f in path.parent.iterdir())  # the database, its WAL and shm: old pages too
    core = base64.b64encode(f"k={OLD_KEY}".encode()).decode()[4:30]
    assert OLD_KEY.encode() not in raw and OLD_KEY.encode().hex().encode() not in raw and core.encode() not in raw
    c = ResponseCache(path)
    row = c.get("a" * 64)
    assert row is not None and row.text == "you sent Bearer ***" and c.get("b" * 64).text == "nothing secret here"
    c.close()
