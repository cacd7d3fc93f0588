"""A stand-in model server for the managed-backbone tests: `python -m tests.managed_stub <port>
[--ignore-sigterm]` serves /v1/models and /v1/chat/completions (echo, each reply after
$MANAGED_STUB_DELAY_S seconds, default 0) on 127.0.0.1:<port> until terminated; with
--ignore-sigterm only SIGKILL ends it (a server whose graceful shutdown never finishes)."""
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

DELAY_S = float(os.environ.get("MANAGED_STUB_DELAY_S") or 0)


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _send(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self._send({"data": [{"id": "stub"}]})

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = "echo: " + str(req["messages"][-1]["content"])
        time.sleep(DELAY_S)
        self._send({"model": req["model"], "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 2}})


def tagged_processes(tag: str) -> list[int]:
    """Live (not zombie) processes whose environment holds `tag`: a managed server and its guard
    started with the tag in their environment (the tests' way to find them from outside)."""
    from pathlib import Path

    pids = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag.encode() in env.read_bytes() and (env.parent / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                pids.append(int(env.parent.name))
        except (OSError, IndexError):
            continue
    return pids


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--ignore-sigterm" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    HTTPServer(("127.0.0.1", int(args[0])), H).serve_forever()

