"""The watchdog between the harness and a managed server (runners/backbones/managed.py):
`python -P _guard.py <grace_s> <server command ...>`.

ManagedServer starts this file (by path, standard library only) in a new session; the guard
starts the server in its own process group and stops that whole group — SIGTERM, then SIGKILL
after `grace_s` — as soon as any of these happens:

- its stdin reaches end of file: the harness holds the only write end of that pipe, so EOF means
  the harness closed it (ManagedServer.stop) or the harness process is gone, however it ended
  (SIGKILL included: the kernel closes a dead process's files);
- its parent process changes (the harness died and the guard was adopted);
- it receives SIGTERM, SIGHUP or SIGINT (ManagedServer.stop signals the group; the guard then makes
  sure the server also goes when it ignores SIGTERM or first finishes an in-flight request, as
  uvicorn's graceful shutdown does).

When the server exits by itself the guard exits with the server's status (a signal death as
128 + the signal number), so the harness sees the server's exit code."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

POLL_S = 0.2


def stop_group(proc: subprocess.Popen | None, grace_s: float) -> None:
    """SIGTERM to the group (the guard's own handler only records it), SIGKILL after `grace_s`."""
    group = os.getpgrp()
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        pass
    if proc is not None:
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    os.killpg(group, signal.SIGKILL)  # whatever is left of the server's group, the guard included


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: _guard.py <grace_s> <server command ...>", file=sys.stderr)
        return 2
    grace_s, cmd = float(argv[0]), argv[1:]
    parent = os.getppid()
    asked: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # caught, so the server starts with the defaults
        signal.signal(sig, lambda signum, _frame: asked.append(signum))
    proc = None
    try:
        if not asked:  # in the guard's group; stdout/stderr (the server log) inherited
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    except OSError as e:
        print(f"managed server: cannot start {cmd[0]!r}: {e}", file=sys.stderr, flush=True)
        return 127
    while proc is not None and not asked and os.getppid() == parent:
        code = proc.poll()
        if code is not None:
            try:
                os.killpg(os.getpgrp(), signal.SIGTERM)  # the server's own children, if it left any
            except ProcessLookupError:
                pass
            return code if code >= 0 else 128 - code
        try:
            ready, _, _ = select.select([sys.stdin], [], [], POLL_S)
        except (OSError, ValueError):  # no usable stdin: rely on the parent check
            ready = []
            time.sleep(POLL_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break  # EOF: the harness is gone or asked the server to stop
    stop_group(proc, grace_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
