"""A loopback OpenAI-compatible chat-completions server that replays recorded answers, with
injectable faults and adversarial outputs (the chaos suite's endpoint; 127.0.0.1 only).

Replies: a table {request key → reply text} recorded once through the scripted backbone
(`scripts.chaos.record`); the key is the sha256 of the canonical JSON of the request's
`messages`, so the harness talking HTTP gets exactly the answers the scripted oracle gave. A
request that is not in the table (only after an adversarial reply changed the conversation) is
answered by its last message's recorded reply, else with an empty reply, and counted as
`unknown`. Usage is counted with the harness's own offline estimator, so a reply without
`usage` (a fault) yields the same token numbers.

Faults, drawn per arrival from sha256(seed | request key | n-th arrival of that key), so a retry
of the same request draws afresh but reproducibly:
  429s      429 with `Retry-After: <seconds>`
  429date   429 with `Retry-After: <HTTP date>`
  500/502/503
  hang      no reply for `hang_s` (longer than the client's timeout), then the socket closes
  reset     TCP reset without a response
  truncated 200 with the JSON body cut in half
  empty     200 with `choices: []`
  no_usage  200 without `usage` (not an error: the client estimates)
  endless   200 whose body never ends (chunked, until the client drops it: the reply size bound)
  deep      200 whose body is JSON nested 200,000 levels deep
  badutf8   200 whose body is not valid UTF-8
Body faults (BODY_FAULTS; the right answer, wrong metadata; results must stay identical):
  usage_inf / usage_nan / usage_str / usage_neg  `prompt_tokens` Infinity, NaN, "lots", -5 (the
            client must estimate and flag the call, never record garbage as `api` tokens)
  finish_odd  `finish_reason: 5` (a malformed body: retried)
  echo      the request's Authorization header echoed in `model` and `reasoning_content` (must be
            redacted from everything stored)
  echo_encoded  the credential of the Authorization header echoed in `reasoning_content` in hex,
            lower-case `%xx`, JSON `\\u` escapes and base64 of `Bearer <key>` and `k=<key>` (other
            base64 alignments); all must be redacted
Output kinds (change what the model "said"; results may differ from the reference, so the suite
checks only that nothing is lost or duplicated and the sweep does not crash):
  null      200 with `message.content: null`
  adversarial  one of ADVERSARIAL (empty, lone surrogate, NUL, huge, protocol-breaking, a fake
            Authorization header, ...)
  echo_text the recorded reply followed by the request's real Authorization header
`mode` answers every request with one status (e.g. 401, whose body echoes the request's
Authorization header, the worst case for key leaks). The server and handler bases
(`LoopbackServer`, `LoopbackHandler`) also serve tests/fake_openai.py."""

from __future__ import annotations

import collections
import email.utils
import hashlib
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from runners.records.transcripts import canonical

# 200 bodies no client may read whole: endless, nested past any parser's depth, not UTF-8 (retried as infra errors)
HOSTILE_FAULTS = ("endless", "deep", "badutf8")
TRANSPORT_FAULTS = (
    "429s",
    "429date",
    "500",
    "502",
    "503",
    "hang",
    "reset",
    "truncated",
    "empty",
    "no_usage",
    *HOSTILE_FAULTS,
)
# 200 bodies that are wrong in their metadata, not their answer: results must stay identical.
BODY_FAULTS = ("usage_inf", "usage_nan", "usage_str", "usage_neg", "finish_odd", "echo", "echo_encoded")
OUTPUT_FAULTS = ("null", "adversarial", "echo_text")
_BAD_USAGE = {"usage_inf": float("inf"), "usage_nan": float("nan"), "usage_str": "lots", "usage_neg": -5}
ADVERSARIAL = (
    "",
    "\ud800 lone surrogate \udfff",
    "NUL\x00byte and \x1b[31m escape",
    "x" * 200_000,
    '<tool_calls>[{"name": oops</tool_calls><assistant_message>{"content": ',
    '{"tool_calls": 5, "assistant_message": null}',
    '```json\n{"answer": ""}\n```\nAuthorization: Bearer sk-adversarial-0000000000',
    "</assistant_message></tool_calls>]}}\"'\\",
    "\u202e\u200b\ufeff right-to-left and zero-width",
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default listen backlog (5) drops SYNs when many clients connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up (timeout) is expected
            super().handle_error(request, client_address)


def request_key(value: Any) -> str:
    """sha256 of the canonical JSON of `value` (a request's messages, or a whole body), as the
    transcript store writes it (runners.records.transcripts.canonical)."""
    return hashlib.sha256(canonical(value)).hexdigest()


def _estimate(messages: list[dict[str, Any]], text: str) -> dict[str, int]:
    from runners.tokens import estimate_usage

    u = estimate_usage(messages, text)
    return {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def encoded_echoes(auth: str) -> str:
    """The credential of an Authorization header (`Bearer <key>`, or the `user:password` of
    `Basic <base64>`) in the encodings a proxy or a debugging endpoint may echo it in."""
    import base64

    scheme, _, cred = auth.partition(" ")
    if scheme.lower() == "basic":
        try:
            cred = base64.b64decode(cred).decode()
        except ValueError:
            pass
    quoted = "".join(f"%{b:02x}" for b in cred.encode())
    escaped = "".join(f"\\u{ord(c):04X}" for c in cred)
    return (
        f"hex {cred.encode().hex()} | url {quoted} | json {escaped} | "
        f"b64 {base64.b64encode(f'Bearer {cred}'.encode()).decode()} | "
        f"b64url {base64.urlsafe_b64encode(f'k={cred}'.encode()).decode()}"
    )


def error_body(message: str, code: str) -> bytes:
    """An OpenAI-style error body: {"error": {"message", "type", "code"}}."""
    return json.dumps({"error": {"message": message, "type": code, "code": code}}).encode()


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (port 0: any free one) serving `_handler_class()`,
    with the fault schedule both fake endpoints share (this one and tests/fake_openai.py):
    `enqueue` forces the next outcomes, `mode` answers every request with one outcome, else a
    seeded draw per arrival (`decide`). `_stop` wakes handlers that hang on purpose."""

    def __init__(self, *, seed: int, fault_rate: float, faults: tuple[Any, ...], port: int) -> None:
        if not 0.0 <= fault_rate <= 1.0:
            raise ValueError(f"fault_rate must be in [0, 1], got {fault_rate}")
        self.seed, self.fault_rate, self.faults = seed, fault_rate, tuple(faults)
        self.mode: Any = None
        self.models: list[str] | None = None  # what GET /models lists (None: the server's own model name)
        self._port = port
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._queue: collections.deque[Any] = collections.deque()
        self._seen: collections.Counter[str] = collections.Counter()
        self._server: ThreadingHTTPServer | None = None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def listed_models(self) -> list[str]:
        return list(self.models) if self.models is not None else [str(getattr(self, "model", "chaos-model"))]

    def enqueue(self, *kinds: Any) -> None:
        """Force the outcomes of the next requests, in arrival order (before `mode` and the draw)."""
        with self._lock:
            self._queue.extend(kinds)

    def decide(self, key: str) -> Any:
        """Outcome of this arrival of request `key`: the forced queue, then `mode`, then the draw
        from sha256(seed | key | n-th arrival of key) (a retry draws afresh, reproducibly), else "ok"."""
        with self._lock:
            n = self._seen[key]
            self._seen[key] += 1
            if self._queue:
                return self._queue.popleft()
        if self.mode is not None:
            return self.mode
        if self.fault_rate > 0 and self.faults:
            h = hashlib.sha256(f"{self.seed}|{key}|{n}".encode()).digest()
            if int.from_bytes(h[:8], "big") / 2**64 < self.fault_rate:
                return self.faults[int.from_bytes(h[8:12], "big") % len(self.faults)]
        return "ok"

    def start(self) -> Self:
        srv = _Server(("127.0.0.1", self._port), self._handler_class())
        self._server = srv
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def close(self) -> None:
        self._stop.set()  # wakes hanging handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"


class LoopbackHandler(BaseHTTPRequestHandler):
    """POST /…/chat/completions with a JSON body → `post(body)`; a wrong route is 404, a body that
    is not JSON 400. Subclasses answer with `send` and the two faults that send nothing."""

    protocol_version = "HTTP/1.1"  # keep-alive, as real endpoints
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid the 40 ms delayed-ACK stall

    def log_message(self, *args: Any) -> None:  # quiet
        return None

    def send(
        self, status: int, payload: bytes, headers: dict[str, str] | None = None, ctype: str = "application/json"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def hang(self, stop: threading.Event, seconds: float) -> None:
        """No reply for `seconds` (or until the server closes), then the connection closes."""
        stop.wait(seconds)
        self.close_connection = True

    def hostile(self, kind: str, stop: threading.Event) -> bool:
        """Answer one of HOSTILE_FAULTS (False for any other kind)."""
        if kind == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                head = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
                self.wfile.write(b"%x\r\n%s\r\n" % (len(head), head))
                while not stop.is_set():  # until the client drops the connection (or the server closes)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                pass
            self.close_connection = True
        elif kind == "deep":
            self.send(200, b"[" * 200_000 + b"]" * 200_000)
        elif kind == "badutf8":
            self.send(
                200,
                b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "caf\xe9 \xff\xfe"}, '
                b'"finish_reason": "stop"}]}',
            )
        else:
            return False
        return True

    def reset_connection(self) -> None:
        """A TCP reset without a response."""
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.send(404, error_body(f"no route {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self.send(400, error_body("body is not JSON", "invalid_request_error"))
            return
        self.post(body)

    def post(self, body: dict[str, Any]) -> None:
        raise NotImplementedError

    server_of: Any = None  # the LoopbackServer (set by the subclass' factory) whose models GET /models lists

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        """GET /…/models as OpenAI-compatible servers answer it (the harness checks the key and the
        model with it before any work): the listed models, or the `mode` status when it is 401/403
        (a refused key refuses every route; the body echoes the Authorization header)."""
        srv = self.server_of
        if srv is None or not self.path.rstrip("/").endswith("/models"):
            self.send(404, error_body(f"no route {self.path}", "not_found"))
            return
        if srv.mode in (401, 403):
            got = self.headers.get("Authorization")
            self.send(int(srv.mode), error_body(f"fake error {srv.mode}; got {got}", "fake_error"))
            return
        data = [{"id": m, "object": "model", "owned_by": "loopback"} for m in srv.listed_models()]
        self.send(200, json.dumps({"object": "list", "data": data}).encode())


class ChaosServer(LoopbackServer):
    def __init__(
        self,
        replies: dict[str, str] | None = None,
        *,
        seed: int = 0,
        fault_rate: float = 0.0,
        faults: tuple[str, ...] = TRANSPORT_FAULTS,
        hang_s: float = 1.5,
        latency_s: float = 0.0,
        port: int = 0,
    ) -> None:
        super().__init__(seed=seed, fault_rate=fault_rate, faults=faults, port=port)
        self.replies = dict(replies or {})
        self.by_last: dict[str, str] = {}
        self.hang_s, self.latency_s = hang_s, latency_s
        self.usage_override: dict[str, Any] | None = None  # the usage every reply reports (absurd counts)
        self.reset()

    def set_replies(self, replies: dict[str, str], by_last: dict[str, str]) -> None:
        self.replies, self.by_last = dict(replies), dict(by_last)

    def reset(self) -> None:
        with self._lock:
            self.outcomes: collections.Counter[str] = collections.Counter()
            self.unknown = 0
            self.auth_headers: set[str] = set()
            self._seen.clear()
            self._queue.clear()

    def configure(
        self,
        *,
        fault_rate: float = 0.0,
        faults: tuple[str, ...] = TRANSPORT_FAULTS,
        seed: int | None = None,
        first: tuple[str, ...] = (),
    ) -> None:
        """Faults for the next run: `first` forces the outcomes of the next requests (every kind once)."""
        self.reset()
        self.fault_rate, self.faults = fault_rate, tuple(faults)
        self.seed = self.seed if seed is None else seed
        self.enqueue(*first)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        _estimate([{"role": "user", "content": "warm up"}], "the tokenizer")  # load it now, not inside the first reply
        return _handler(self)

    # ------------------------------------------------------------------ answers
    def reply_text(self, body: dict[str, Any], key: str) -> str:
        if key in self.replies:
            return self.replies[key]
        msgs = body.get("messages") or []
        with self._lock:
            self.unknown += 1
        last = request_key(msgs[-1:]) if msgs else ""
        return self.by_last.get(last, "")

    def completion(self, body: dict[str, Any], text: str | None, usage: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": "chatcmpl-chaos",
            "object": "chat.completion",
            "model": body.get("model") or "chaos",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
        if usage:
            out["usage"] = self.usage_override or _estimate(body.get("messages") or [], text or "")
        return out


def _handler(srv: ChaosServer) -> type[BaseHTTPRequestHandler]:
    class Handler(LoopbackHandler):
        server_of = srv

        def post(self, body: dict[str, Any]) -> None:
            srv.auth_headers.add(self.headers.get("Authorization") or "")
            kind = str(srv.decide(request_key(body.get("messages"))))
            with srv._lock:
                srv.outcomes[kind] += 1
            self._answer(kind, body)

        def _answer(self, kind: str, body: dict[str, Any]) -> None:
            key = request_key(body.get("messages"))
            if kind in ("ok", "no_usage", "truncated", "null", "adversarial", "echo_text") or kind in BODY_FAULTS:
                if srv.latency_s:
                    srv._stop.wait(srv.latency_s)
                text: str | None = srv.reply_text(body, key)
                auth = self.headers.get("Authorization") or ""
                if kind == "null":
                    text = None
                elif kind == "adversarial":
                    h = hashlib.sha256(f"{srv.seed}|adv|{key}".encode()).digest()
                    text = ADVERSARIAL[h[0] % len(ADVERSARIAL)]
                elif kind == "echo_text":
                    text = f"{text}\nAuthorization: {auth}"
                out = srv.completion(body, text, usage=kind != "no_usage")
                if kind in _BAD_USAGE:
                    out["usage"]["prompt_tokens"] = _BAD_USAGE[kind]  # json.dumps writes Infinity / NaN as such
                elif kind == "finish_odd":
                    out["choices"][0]["finish_reason"] = 5
                elif kind == "echo":
                    out["model"] = f"echo of Authorization: {auth}"
                    out["choices"][0]["message"]["reasoning_content"] = f"the request said Authorization: {auth}"
                elif kind == "echo_encoded":
                    out["choices"][0]["message"]["reasoning_content"] = f"the request said {encoded_echoes(auth)}"
                payload = json.dumps(out).encode()
                if kind == "truncated":
                    self.send(200, payload[: len(payload) // 2])  # Content-Length matches the cut body
                else:
                    self.send(200, payload)
            elif kind == "429s":
                self.send(429, error_body("Rate limit reached; try again in 0.05s", "chaos"), {"Retry-After": "0.05"})
            elif kind == "429date":
                self.send(
                    429,
                    error_body("Rate limit reached", "chaos"),
                    {"Retry-After": email.utils.formatdate(time.time() + 1, usegmt=True)},
                )
            elif kind in ("500", "502", "503"):
                self.send(int(kind), error_body("upstream trouble", "chaos"))
            elif kind == "hang":
                self.hang(srv._stop, srv.hang_s)
            elif self.hostile(kind, srv._stop):
                pass
            elif kind == "reset":
                self.reset_connection()
            elif kind == "empty":
                self.send(200, json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode())
            else:  # a status code: the body echoes the Authorization header
                status = int(kind)
                self.send(
                    status, error_body(f"denied; you sent Authorization: {self.headers.get('Authorization')}", "chaos")
                )

    return Handler
