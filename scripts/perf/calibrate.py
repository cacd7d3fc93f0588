"""A yardstick for this machine's speed at this hour: `python -m scripts.perf.calibrate [--repeats 5] [--json]`.

The same tree reads a different CPU per call at different hours on a shared virtual machine (0.51,
0.60 and 0.64–0.76 ms in three passes: scripts/perf/README.md). So that figures from different
hours can be compared, `scripts/perf/tail.py` runs this beside every round and prints it with the
CPU per call. Two fixed workloads, each timed in this process's own CPU (`time.process_time`),
medians of `--repeats`:

- `loop_ms`: a pure-Python loop (function calls, dict look-ups and writes, f-strings, splits,
  `isinstance`; 60,000 iterations), what the interpreter's ~60 % of a sweep's CPU is made of;
- `loopback_us`: one round trip over a loopback TCP connection to a child process that sleeps in
  `recv` between messages (a 4 KB request, a 256-byte reply, 1,000 of them): the system calls and
  the wake-up of a sleeping process that every request to a local endpoint pays (on a virtual
  machine, an interrupt that exits to the hypervisor). The child's own CPU is not counted, as a
  sweep's CPU per call does not count its endpoint's.

`cpu_per_loop` in `tail`'s summary is the CPU per call divided by `loop_ms`: a number meant to
stay put when only the machine's speed changes.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LOOP_ITERATIONS = 60_000
ROUND_TRIPS = 1_000
REQUEST_BYTES = 4096
REPLY_BYTES = 256

# The child: accept one connection, answer every full request with a reply, exit at end of stream.
_ECHO = f"""
import socket, sys
srv = socket.create_server(("127.0.0.1", 0))
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
reply = b"r" * {REPLY_BYTES}
buf = 0
n = 0
while True:
    data = conn.recv(65536)
    if not data:
        break
    buf += len(data)
    while buf >= {REQUEST_BYTES}:
        buf -= {REQUEST_BYTES}
        conn.sendall(reply)
        n += 1
print(n, flush=True)
"""


class _Item:
    __slots__ = ("name", "n")

    def __init__(self, name: str, n: int) -> None:
        self.name, self.n = name, n

    def grow(self, k: int) -> int:
        self.n += k
        return self.n


def _unit(i: int, d: dict[str, Any], item: _Item) -> int:
    k = f"k{i % 64}"
    d[k] = d.get(k, 0) + 1
    parts = (k + ":" + "x" * (i % 16)).split(":")
    if isinstance(parts[0], str) and k in d:
        return item.grow(len(parts[1]))
    return 0


def loop_ms(iterations: int = LOOP_ITERATIONS) -> float:
    """CPU milliseconds of the fixed pure-Python loop."""
    d: dict[str, Any] = {}
    item = _Item("a", 0)
    t = time.process_time()
    total = 0
    for i in range(iterations):
        total += _unit(i, d, item)
    spent = time.process_time() - t
    if total <= 0:  # keeps the loop's work observable
        raise AssertionError("calibration loop did no work")
    return spent * 1000


def loopback_us(round_trips: int = ROUND_TRIPS) -> float:
    """This process's CPU microseconds per round trip to a sleeping child over loopback TCP."""
    child = subprocess.Popen([sys.executable, "-c", _ECHO], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            request = b"q" * REQUEST_BYTES
            t = time.process_time()
            for _ in range(round_trips):
                s.sendall(request)
                got = 0
                while got < REPLY_BYTES:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise RuntimeError("calibration endpoint closed early")
                    got += len(chunk)
            spent = time.process_time() - t
        answered = int(child.stdout.readline())
    finally:
        child.wait(timeout=30)
    if answered != round_trips:
        raise RuntimeError(f"calibration endpoint answered {answered} of {round_trips} requests")
    return spent / round_trips * 1e6


def calibrate(repeats: int = 5) -> dict[str, float]:
    """Medians of `repeats` runs of each yardstick (the loop's first run warms the interpreter's caches too)."""
    loops = [loop_ms() for _ in range(repeats)]
    trips = [loopback_us() for _ in range(max(1, repeats // 2))]
    return {"loop_ms": statistics.median(loops), "loopback_us": statistics.median(trips)}


def measure_in_child(repeats: int = 5) -> dict[str, float]:
    """`calibrate` in a fresh interpreter (what a caller that holds threads or sockets of its own uses)."""
    p = subprocess.run(
        [sys.executable, "-m", "scripts.perf.calibrate", "--repeats", str(repeats), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    return dict(json.loads(p.stdout))


def describe(c: dict[str, float]) -> str:
    return f"python loop {c['loop_ms']:.1f} ms, loopback round trip {c['loopback_us']:.1f} µs"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    a = ap.parse_args(argv)
    c = calibrate(a.repeats)
    print(json.dumps(c) if a.json else f"this machine now: {describe(c)}")


if __name__ == "__main__":
    main()
