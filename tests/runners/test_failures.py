"""Every failure explained: the documented `error: … Fix: …` with exit 3 (never a traceback) for
an output_dir that is a file, a read-only or full results disk and an unreadable cache file; a
full disk keeps every finished record and resumes; credentials never reach a written file."""

import base64
import json
import os
import subprocess

import pytest

from runners.records.store import record_lines
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import cell_records, metrics_csv, run_sweep

SMALL = (
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "experiment.name=exp",
)


def no_traceback(p):
    assert "Traceback" not in p.stderr and "HYDRA_FULL_ERROR" not in p.stderr, p.stderr


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a small tmpfs (root only); yields (mountpoint, remount(options))."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (read-only and full-disk cases)")
    mnt = tmp_path / "mnt"
    mnt.mkdir()

    def mount(opts: str) -> None:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")

    def remount(opts: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{opts}", str(mnt)], check=True)

    yield mnt, mount, remount
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_output_dir_that_is_a_file(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    p = run_sweep(f, *SMALL)
    assert p.returncode == 3 and "is a file, not a directory" in p.stderr and "runner.output_dir" in p.stderr
    no_traceback(p)


def test_read_only_results_dir(tmpfs):
    mnt, mount, _ = tmpfs
    mount("size=4m,ro")
    p = run_sweep(mnt, *SMALL)
    assert p.returncode == 3 and "not writable" in p.stderr and "runner.output_dir" in p.stderr
    no_traceback(p)


@pytest.mark.parametrize("wal", ["0", "1"], ids=["rollback-journal", "write-ahead-log"])
def test_disk_full_keeps_finished_records_and_resumes(tmpfs, tmp_path, wal):
    env = {"HARNESS_TRANSCRIPT_WAL": wal}
    ref = run_sweep(tmp_path / "ref", *SMALL, "runner.trials=2", env=env)
    assert ref.returncode == 0, ref.stderr
    mnt, mount, remount = tmpfs
    # room for what a running cell holds besides its records (manifest, transcripts.sqlite and its
    # rollback journal during a write; tmpfs counts whole pages) and about half the records, as
    # written while the sweep runs (the plain file: a finished cell compacts them). In write-ahead-log
    # mode the log (every page committed since the last checkpoint, and its 32 KB index) is what
    # fills this room first: the run stops the same way, and resumes the same way
    files = [f for f in (tmp_path / "ref").rglob("*") if f.is_file()]
    pages = lambda n: -(-n // 4096) * 4096  # noqa: E731
    records = sum(sum(map(len, record_lines(f.with_suffix("")))) for f in files if f.name == "episodes.jsonl.zst")
    running = (
        sum(pages(f.stat().st_size) for f in files if f.name in ("manifest.json", "transcripts.sqlite")) + 4 * 4096
    )
    mount(f"size={(running + pages(records // 2)) // 1024}k")
    p = run_sweep(mnt, *SMALL, "runner.trials=2", "runner.concurrency=1", env=env)
    assert p.returncode == 3 and "disk is full" in p.stderr and "resume" in p.stderr
    no_traceback(p)
    cell = next((mnt / "exp").glob("full_context__*"))
    if wal == "0":
        lines = (cell / "episodes.jsonl").read_bytes().splitlines(keepends=True)
        assert lines  # some finished before the disk filled
    remount("size=16m")
    r = run_sweep(mnt, *SMALL, "runner.trials=2", env=env)
    assert r.returncode == 0, r.stderr
    keys = [(d["task_id"], d["trial"]) for d in cell_records(cell)]
    assert len(keys) == len(set(keys)) == 6  # 3 tasks × 2 trials, each once
    assert metrics_csv(mnt / "exp" / "tables" / "metrics.csv") == metrics_csv(
        tmp_path / "ref" / "exp" / "tables" / "metrics.csv"
    )


ENDPOINT = (
    "backbone=openai_compatible",
    "backbone.model=fake-model",
    "backbone.timeout_s=2",
    "backbone.backoff_cap_s=0.1",
    "roles.judge=agent",
    "roles.tool=agent",
)  # judge and reasoning tool on the endpoint


def test_unreadable_cache_file_is_explained(tmp_path):
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"this is not a database" * 100)
    with FakeOpenAI(responder=react_responder) as srv:
        p = run_sweep(
            tmp_path / "out",
            *SMALL,
            *ENDPOINT,
            f"runner.cache_path={cache}",
            env={"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": "k"},
        )
    no_traceback(p)
    if p.returncode == 3:  # refused up front with the fix
        assert str(cache) in p.stderr and "runner.cache" in p.stderr
    else:  # or degraded to misses with one warning
        assert p.returncode == 0 and p.stderr.lower().count("cache") >= 1


# ----------------------------------------------------------------------------- defect 10
PW = "pw-URLSECRET-4242"
KEY = "sk-test-KEYSECRET-0123456789"


def secret_forms():
    return [PW, KEY, KEY[-10:], base64.b64encode(f"bob:{PW}".encode()).decode().rstrip("=")]


def assert_clean(root, *texts):
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in secret_forms():
                assert s.encode() not in data, (f, s)
    for t in texts:
        for s in secret_forms():
            assert s not in t, s


def test_url_password_never_written_anywhere_including_multirun_and_401_bodies(tmp_path):
    import sys

    from tests.runners.sweep_helpers import REPO

    with FakeOpenAI(responder=react_responder) as srv:
        url = srv.base_url.replace("http://", f"http://bob:{PW}@")
        args = [
            "runner.display=plain",
            *(a for a in SMALL if not a.startswith("method=")),
            *ENDPOINT,
            f"backbone.base_url={url}",
            "backbone.base_url_env=null",
            "backbone.api_key_env=null",
        ]

        def sweep(out, *extra):
            return subprocess.run(
                [sys.executable, "-m", "runners.sweep", f"runner.output_dir={out}", *args, *extra],  # noqa: E731
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=180,
            )

        p = sweep(tmp_path, "++experiment.grid.method=[full_context,flowstate]")
        assert p.returncode == 0, p.stderr
        assert srv.auth_headers and all(h.startswith("Basic ") for h in srv.auth_headers)  # explicit, as documented
        # `-m` (one grid): Hydra writes multirun.yaml with the URL before any job runs; it is scrubbed
        m = sweep(tmp_path / "multirun", "method=full_context,flowstate", "-m")
        assert m.returncode == 0 and m.stdout.count("Completeness") == 1, m.stderr
        srv.mode = 401  # its body echoes the Authorization header
        q = sweep(tmp_path / "denied", "++experiment.grid.method=[full_context,flowstate]", "runner.cache=false")
        assert q.returncode == 3
    multirun = (
        tmp_path / "multirun" / "exp" / ".multirun" / "multirun.yaml"
    )  # Hydra's sweep dir sits inside the experiment folder
    assert multirun.exists() and not (tmp_path / "multirun" / ".multirun").exists()
    assert_clean(tmp_path, p.stdout, p.stderr, m.stdout, m.stderr, q.stdout, q.stderr)
    assert "***@127.0.0.1" in multirun.read_text()


def test_401_body_echoing_a_bearer_key_is_redacted_in_errors(tmp_path):
    with FakeOpenAI(responder=react_responder) as srv:
        srv.mode = 401
        p = run_sweep(
            tmp_path,
            *SMALL,
            *ENDPOINT,
            "runner.cache=false",
            "runner.check_access=false",  # a key revoked mid-run: the episodes' errors hold the echoed body
            env={"OPENAI_COMPAT_BASE_URL": srv.base_url, "OPENAI_COMPAT_API_KEY": KEY},
        )
    assert p.returncode == 3
    errs = [json.loads(line) for f in tmp_path.rglob("errors.jsonl") for line in f.read_text().splitlines()]
    assert errs and all("Bearer ***" in e["error"] or "***" in e["error"] for e in errs)
    assert_clean(tmp_path, p.stdout, p.stderr)


def test_url_credentials_with_an_api_key_is_an_explicit_error():
    from runners.backbones.openai import OpenAIBackbone

    with pytest.raises(ValueError, match="api_key_env: null") as ei:
        OpenAIBackbone(name="x", model="m", base_url=f"http://bob:{PW}@127.0.0.1:9/v1", api_key=KEY)
    assert PW not in str(ei.value)
    b = OpenAIBackbone(name="x", model="m", base_url=f"http://bob:{PW}@127.0.0.1:9/v1", api_key=None)
    assert b.base_url == "http://127.0.0.1:9/v1" and b.auth_headers()["Authorization"].startswith("Basic ")
