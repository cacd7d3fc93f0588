"""A stand-in model server for the managed-backbone tests: `python -m tests.managed_stub <port>`
serves /v1/models and /v1/chat/completions (echo) on 127.0.0.1:<port> until terminated."""
import json
import sys
from http.server import HTTPServer

from scripts.chaos.server import LoopbackHandler


class H(LoopbackHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: the server below is single-threaded

    def do_GET(self):  # noqa: N802 - http.server naming
        self.send(200, json.dumps({"data": [{"id": "stub"}]}).encode())

    def post(self, body):
        text = "echo: " + str(body["messages"][-1]["content"])
        self.send(200, json.dumps({"model": body["model"], "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode())


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
