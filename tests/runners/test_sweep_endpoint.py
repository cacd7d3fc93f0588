"""The sweep against a real HTTP endpoint on 127.0.0.1 (tests/fake_openai.py): ~20% injected
faults (429 + Retry-After, 500, hangs past the timeout, connection resets, malformed bodies)
give results identical to a fault-free run; 401/400 fail fast with a clear message; the API key
never appears under the results directory; a rerun is served from the response cache."""

import json

import pytest

from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import metrics_csv, record_files, records_under, run_sweep

KEY = "sk-test-SECRET-0123456789abcdef"
ARGS = (
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "method=full_context",
    "benchmark.params.data_dir=fixtures",
    "backbone.timeout_s=1",
    "backbone.backoff_cap_s=0.2",
    "backbone.max_retries=12",
    "runner.concurrency=4",
    "experiment.name=endpoint",
    "roles.judge=agent",
    "roles.tool=agent",
)  # the judge and reasoning tool on the endpoint, not gpt-5-mini


def env(srv):
    return {"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": KEY}


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean")
    with FakeOpenAI(responder=react_responder) as srv:
        p = run_sweep(out, *ARGS, env=env(srv))
    assert p.returncode == 0, p.stderr
    return out


def test_faults_give_identical_results_and_are_logged(clean_run, tmp_path):
    with FakeOpenAI(responder=react_responder, fault_rate=0.2, seed=3, hang_s=3) as srv:
        p = run_sweep(tmp_path, *ARGS, env=env(srv), timeout=300)
        outcomes = dict(srv.outcomes)
    assert p.returncode == 0, p.stderr + p.stdout
    assert sum(v for k, v in outcomes.items() if k != "ok") >= 3, outcomes
    ours = metrics_csv(tmp_path / "endpoint" / "tables" / "metrics.csv")
    assert ours == metrics_csv(clean_run / "endpoint" / "tables" / "metrics.csv")
    recs = records_under(tmp_path / "endpoint")
    assert sum(r["retries"] for r in recs) >= 3
    retried = [c for r in recs for q in r["requests"] for s in q["steps"] for c in s["calls"] if c["retries"]]
    assert retried and all(e["wait_s"] >= 0 for c in retried for e in c["retries"])


def test_api_key_never_written(clean_run, tmp_path):
    with FakeOpenAI(responder=react_responder, fault_rate=0.3, seed=5, hang_s=3) as srv:
        run_sweep(tmp_path, *ARGS, env=env(srv), timeout=300)
        srv.mode = 401
        run_sweep(
            tmp_path, *ARGS, "benchmark=memoryarena_phys", "runner.cache=false", "experiment.name=denied", env=env(srv)
        )
    for root in (clean_run, tmp_path):
        for f in root.rglob("*"):
            if f.is_file():
                assert KEY.encode() not in f.read_bytes(), f
                assert KEY[-12:].encode() not in f.read_bytes(), f
        for t in root.rglob("transcripts.sqlite"):  # compressed blobs: check the decompressed text too
            from runners.records.transcripts import TranscriptReader

            blobs = list(TranscriptReader(t.parent).all_blobs())
            assert blobs and not any(KEY[-12:].encode() in b for _, b in blobs), t


@pytest.mark.parametrize("status, hint", [(401, "OPENAI_COMPAT_API_KEY"), (400, "400")])
def test_fail_fast_on_client_errors(tmp_path, status, hint):
    with FakeOpenAI(responder=react_responder) as srv:
        srv.mode = status
        p = run_sweep(tmp_path, *ARGS, env=env(srv), timeout=60)
        n = srv.requests
    assert p.returncode == 3
    assert hint in p.stderr and KEY not in p.stderr + p.stdout
    assert n <= 4  # no retries: at most one call per in-flight episode


def test_rerun_is_served_from_cache(clean_run, tmp_path):
    with FakeOpenAI(responder=react_responder) as srv:
        p1 = run_sweep(tmp_path, *ARGS, env=env(srv))
        first = srv.requests
        for f in record_files(tmp_path / "endpoint"):
            f.unlink()  # forget finished episodes, keep the response cache
        p2 = run_sweep(tmp_path, *ARGS, env=env(srv))
        assert p1.returncode == p2.returncode == 0
        assert srv.requests == first  # zero new model calls
    assert "0 made" in p2.stdout and "served from the response cache" in p2.stdout


def test_manifest_records_the_endpoint_actually_called(clean_run):
    """base_url_env overrides the config's base_url, so the manifest must say where calls went."""
    for m in (clean_run / "endpoint").glob("*/manifest.json"):
        data = json.loads(m.read_text())
        assert data["config"]["backbone"]["base_url"] == "http://127.0.0.1:8000/v1"  # the yaml default, not used
        url = data["endpoints"]["agent"]
        assert url.startswith("http://127.0.0.1:") and url != "http://127.0.0.1:8000/v1"
        assert data["runs"][-1]["endpoints"] == data["endpoints"]


def test_fresh_resamples_every_call_and_a_cache_only_run_says_so(tmp_path):
    """runner.fresh=true: cache reads off, writes on; a run served entirely from the cache says so."""
    with FakeOpenAI(responder=react_responder) as srv:
        p1 = run_sweep(tmp_path, *ARGS, "runner.limit=1", env=env(srv))
        first = srv.requests
        assert p1.returncode == 0 and first > 0, p1.stderr
        assert "served from the response cache: no endpoint" not in p1.stdout
        p2 = run_sweep(tmp_path, *ARGS, "runner.limit=1", "runner.fresh=true", env=env(srv))
        assert p2.returncode == 0, p2.stderr
        assert srv.requests == 2 * first  # every call went to the endpoint again
        assert f"Model calls: {first} made, 0 served" in p2.stdout
        for f in record_files(tmp_path / "endpoint"):
            f.unlink()  # forget finished episodes; the fresh run's answers are in the cache
        p3 = run_sweep(tmp_path, *ARGS, "runner.limit=1", env=env(srv))
        assert p3.returncode == 0, p3.stderr
        assert srv.requests == 2 * first  # served from the cache the fresh run wrote
    last = "\n".join(p3.stdout.strip().splitlines()[-3:])  # after the tables, where a reader looks last
    assert "was served from the response cache: no endpoint was called" in last and "runner.fresh=true" in last
