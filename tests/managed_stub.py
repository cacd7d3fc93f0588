"""A stand-in model server for the managed-backbone tests: `python -m tests.managed_stub <port>
[--ignore-sigterm]` serves /v1/models and /v1/chat/completions (echo, each reply after
$MANAGED_STUB_DELAY_S seconds, default 0) on 127.0.0.1:<port> until terminated; with
--ignore-sigterm only SIGKILL ends it (a server whose graceful shutdown never finishes); with
$MANAGED_STUB_CRASH_AFTER=N it dies of SIGSEGV on completion request N+1 (a server that crashes)."""

import json
import os
import signal
import sys
import time
from http.server import HTTPServer

from scripts.chaos.server import LoopbackHandler

DELAY_S = float(os.environ.get("MANAGED_STUB_DELAY_S") or 0)
CRASH_AFTER = int(os.environ.get("MANAGED_STUB_CRASH_AFTER") or -1)
served = [0]


class H(LoopbackHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: the server below is single-threaded

    def do_GET(self):  # noqa: N802 - http.server naming
        self.send(200, json.dumps({"data": [{"id": "stub"}]}).encode())

    def post(self, body):
        if served[0] == CRASH_AFTER:
            os.kill(os.getpid(), signal.SIGSEGV)
        served[0] += 1
        text = "echo: " + str(body["messages"][-1]["content"])
        time.sleep(DELAY_S)
        self.send(
            200,
            json.dumps(
                {
                    "model": body["model"],
                    "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                }
            ).encode(),
        )


def tagged_processes(tag: str) -> list[int]:
    """Live (not zombie) processes whose environment holds `tag`: a managed server and its guard
    started with the tag in their environment (the tests' way to find them from outside)."""
    from pathlib import Path

    pids = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if (
                tag.encode() in env.read_bytes()
                and (env.parent / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                pids.append(int(env.parent.name))
        except (OSError, IndexError):
            continue
    return pids


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--ignore-sigterm" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    HTTPServer(("127.0.0.1", int(args[0])), H).serve_forever()
