"""A response cache written before a form of redaction existed: its rows are redacted as they are
read, so the key reaches neither the records nor the transcripts, and the sweep says so, naming the
scrub; `python -m runners.cache scrub` then rewrites the cache."""

from __future__ import annotations

import lzma
import sqlite3
import subprocess
import sys

from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import REPO, run_sweep

KEY = "sk-test-OLDCACHE-0123456789abcdef"
ARGS = (
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "runner.limit=1",
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "backbone.timeout_s=5",
    "roles.judge=agent",
    "roles.tool=agent",
)


def test_an_old_cache_holding_the_key_leaks_nothing_and_is_scrubbed(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeOpenAI(responder=react_responder) as srv:
        env = {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": KEY}
        p = run_sweep(tmp_path / "a", *ARGS, f"runner.cache_path={cache}", "experiment.name=first", env=env)
        assert p.returncode == 0, p.stderr[-2000:]
        db = sqlite3.connect(cache)  # as an older harness stored an echo: the key in clear, in every row
        rows = db.execute("SELECT key, payload FROM responses").fetchall()
        assert rows
        for key, payload in rows:
            leaky = payload.replace('"text":"', f'"text":"echo {KEY} ', 1)
            db.execute("UPDATE responses SET payload = ? WHERE key = ?", (leaky, key))
        db.commit()
        db.close()
        requests = srv.requests
        q = run_sweep(tmp_path / "b", *ARGS, f"runner.cache_path={cache}", "experiment.name=second", env=env)
        assert q.returncode == 0, q.stderr[-2000:]
        assert srv.requests == requests  # every call a cache hit
    assert "echoed a configured secret" in q.stdout + q.stderr and "runners.cache scrub" in q.stdout + q.stderr
    for f in (tmp_path / "b").rglob("*"):  # records (compacted: decompressed here), manifests, errors
        if f.is_file() and f.suffix in (".xz", ".jsonl", ".json"):
            data = lzma.decompress(f.read_bytes()) if f.suffix == ".xz" else f.read_bytes()
            assert KEY.encode() not in data, f
    from runners.records.results import open_experiment  # the transcripts hold the replies compressed

    cell = open_experiment(tmp_path / "b" / "second").cells[0]
    texts = [c.text or "" for e in cell.episodes() for s in e.steps for c in s.calls]
    assert texts and all(KEY not in t for t in texts) and any("echo ***" in t for t in texts)
    s = subprocess.run(
        [sys.executable, "-m", "runners.cache", "scrub", str(cache)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "OPENAI_COMPAT_API_KEY": KEY},
    )
    assert s.returncode == 0 and f"{len(rows)} of {len(rows)} cached replies held a secret" in s.stdout, s.stderr
    assert KEY.encode() not in b"".join(f.read_bytes() for f in tmp_path.glob("cache.sqlite*"))
