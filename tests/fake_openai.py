"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API, for tests and perf.

    with FakeOpenAI(responder=lambda body: "hi", fault_rate=0.2, seed=0) as srv:
        backbone = OpenAIBackbone(base_url=srv.base_url, ...)

- Replies are a deterministic function of the request: `responder(body) -> str`, or a dict
  message (`{"content": ..., "tool_calls": [...]}`, OpenAI format) for native function calls.
- Faults are deterministic per (seed, request content, how often that content arrived): the
  n-th arrival of a given body draws `sha256(seed|body|n)`, so a retry of the same request gets
  a fresh but reproducible draw, independent of the order in which other requests arrive.
  Kinds: "429" (with Retry-After), "500", "hang" (no reply for `hang_s`, longer than the client
  timeout), "reset" (socket closed without a response), "malformed" (200 with a non-JSON body),
  "nochoices" (200 JSON without `choices`), "quota" (429 insufficient_quota), "context" (400
  context length exceeded), or an int status (its body echoes the Authorization header, the
  worst case for key leaks).
- `enqueue(*kinds)` forces the outcomes of the next requests (in arrival order), before any
  random draw; `mode` answers every request with one fault (e.g. 401) until reset to None.
- `latency_s`: fixed server-side delay before every normal reply.
- `GET /models` lists `models` (default: `model`), or answers `mode` when it is 401/403 (the harness
  checks the key and the model with it before any work, runners/access.py); `strict_models=True`
  answers a chat request for a model not listed with 404 model_not_found.
- Counters: `requests`, `outcomes` (kind -> count), `max_concurrent`, `bodies`, `auth_headers`
  (`connections`: only `serve_asyncio` counts them).

Run as a separate process (keeps the server off the client's GIL, for perf); it prints the base URL
and serves until stdin closes:
    python -m tests.fake_openai --latency 0.1 [--react] [--server asyncio]

`--server asyncio` (`serve_asyncio`) answers the same replies from one asyncio event loop instead
of a thread per connection: no faults, only the `requests` and `connections` counters, HTTP/1.1
keep-alive with Content-Length bodies (what aiohttp and httpx send; no pipelining). The perf
scripts use it so that the endpoint, which shares the machine's cores with the harness it
measures, costs as little CPU as it can.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

import orjson

from scripts.chaos.server import LoopbackHandler, LoopbackServer, error_body, request_key

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
UsageFn = Callable[[dict[str, Any], str], "dict[str, Any] | None"]
# Worded like OpenAI's: an ordinary rate limit that mentions billing must still be retried.
RATE_LIMIT_MESSAGE = (
    "Rate limit reached for requests per min (RPM). Please try again in 1s. You can increase your "
    "rate limit by adding a payment method at https://platform.openai.com/account/billing."
)
FAULT_KINDS = ("429", "500", "hang", "reset", "malformed")


def default_responder(body: dict[str, Any]) -> str:
    """'reply <8 hex of the messages>': distinct prompts get distinct, stable replies."""
    return "reply " + request_key({"m": body.get("messages")})[:8]


def word_usage(body: dict[str, Any], text: str) -> dict[str, Any]:
    """Usage counted in whitespace words (a stand-in for tokens; deterministic)."""
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
    completion = len(text.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def react_responder(body: dict[str, Any]) -> str:
    """A ReAct final answer for agent calls, 'yes' for judge prompts (perf and sweep tests)."""
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if "equivalent" in system.lower() and "yes or no" in system.lower():
        return "yes"
    return '<tool_calls>[]</tool_calls><assistant_message>{"content": "x"}</assistant_message>'


class FakeOpenAI(LoopbackServer):  # start/close/base_url, enqueue/mode/decide: scripts/chaos/server.py
    def __init__(
        self,
        responder: Responder | None = None,
        *,
        fault_rate: float = 0.0,
        faults: tuple[str | int, ...] = FAULT_KINDS,
        latency_s: float = 0.0,
        seed: int = 0,
        retry_after: str | None = "0.05",
        hang_s: float = 5.0,
        usage: UsageFn | None = word_usage,
        model: str = "fake-model",
        port: int = 0,
        reasoning: Responder | None = None,
        models: list[str] | None = None,
        strict_models: bool = False,
    ) -> None:
        super().__init__(seed=seed, fault_rate=fault_rate, faults=faults, port=port)
        self.models = models  # GET /models lists these (default: `model`)
        self.strict_models = strict_models  # a request for a model not in `models` gets 404 model_not_found
        self.responder = responder or default_responder
        self.latency_s, self.retry_after, self.hang_s, self.usage, self.model = (
            latency_s,
            retry_after,
            hang_s,
            usage,
            model,
        )
        self.reasoning = reasoning  # reasoning(body) -> reasoning_content sent beside the reply (DeepSeek/Qwen style)
        # serve_asyncio only: the delay of each reply drawn by this function instead of latency_s
        # (scripts/perf/processes.py: a loaded server's log-normal latencies); on_reply(arrived, delay)
        self.latency_fn: Callable[[], float] | None = None
        self.on_reply: Callable[[float, float], None] | None = None
        self.reset_counters()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    # ------------------------------------------------------------------ control
    def reset_counters(self) -> None:
        with self._lock:
            self.requests = 0
            self.connections = 0  # accepted by serve_asyncio
            self.outcomes: collections.Counter[str] = collections.Counter()
            self.max_concurrent = 0
            self.inflight = 0
            self.bodies: list[dict[str, Any]] = []
            self.auth_headers: list[str | None] = []
            self._seen.clear()

    def reply_json(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.responder(body)
        message = {"role": "assistant", **reply} if isinstance(reply, dict) else {"role": "assistant", "content": reply}
        text = message.get("content") or ""
        out: dict[str, Any] = {
            "id": "chatcmpl-" + request_key(body)[:12],
            "object": "chat.completion",
            "model": body.get("model") or self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
        }
        if self.reasoning is not None:
            out["choices"][0]["message"]["reasoning_content"] = self.reasoning(body)
        usage = self.usage(body, text) if self.usage else None
        if usage is not None:
            out["usage"] = usage
        return out


def _handler_for(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(LoopbackHandler):
        answering = False
        server_of = fake

        def post(self, body: dict[str, Any]) -> None:
            with fake._lock:
                fake.requests += 1
                fake.bodies.append(body)
                fake.auth_headers.append(self.headers.get("Authorization"))
                fake.inflight += 1
                fake.max_concurrent = max(fake.max_concurrent, fake.inflight)
            self.answering = True
            if fake.strict_models and body.get("model") not in fake.listed_models():
                try:
                    msg = f"The model `{body.get('model')}` does not exist or you do not have access to it."
                    self.send(404, error_body(msg, "model_not_found"))
                finally:
                    self._answered()
                    with fake._lock:
                        fake.outcomes["404"] += 1
                return
            kind = fake.decide(request_key(body))
            try:
                self._answer(kind, body)
            finally:
                self._answered()
                with fake._lock:
                    fake.outcomes[str(kind)] += 1

        def _answered(self) -> None:
            """Out of `inflight` before the reply leaves: a client holding an in-flight bound can only
            send its next request after reading this reply, so `max_concurrent` never counts a
            request whose reply is already on its way (a race under load otherwise)."""
            if self.answering:
                self.answering = False
                with fake._lock:
                    fake.inflight -= 1

        def send(
            self, status: int, payload: bytes, headers: dict[str, str] | None = None, ctype: str = "application/json"
        ) -> None:
            self._answered()
            super().send(status, payload, headers, ctype)

        def _answer(self, kind: str | int, body: dict[str, Any]) -> None:
            if kind == "ok":
                if fake.latency_s:
                    fake._stop.wait(fake.latency_s)
                self.send(200, json.dumps(fake.reply_json(body)).encode())
            elif kind == "429":
                hdr = {"Retry-After": fake.retry_after} if fake.retry_after is not None else {}
                self.send(429, error_body(RATE_LIMIT_MESSAGE, "rate_limit_exceeded"), hdr)
            elif kind == "quota":
                self.send(
                    429,
                    error_body(
                        "You exceeded your current quota, please check your plan and billing details.",
                        "insufficient_quota",
                    ),
                )
            elif kind == "hang":
                self.hang(fake._stop, fake.hang_s)
            elif self.hostile(str(kind), fake._stop):  # endless, deep, badutf8 (scripts/chaos/server.py)
                self._answered()
            elif kind == "reset":
                self.reset_connection()
            elif kind == "malformed":
                self.send(200, b"<html>502 Bad Gateway</html>", ctype="text/html")
            elif kind == "context":
                self.send(
                    400, error_body("This model's maximum context length is 8192 tokens.", "context_length_exceeded")
                )
            elif kind == "nochoices":
                self.send(200, json.dumps({"object": "chat.completion", "model": fake.model}).encode())
            else:
                status = int(kind)  # echoes the Authorization header: the worst case for key leaks
                self.send(
                    status, error_body(f"fake error {status}; got {self.headers.get('Authorization')}", "fake_error")
                )

    return Handler


class _AsyncHTTP(asyncio.Protocol):
    """One keep-alive connection of `serve_asyncio`: requests parsed from the byte stream, each
    answered `fake.latency_s` later by a timer (no thread sleeps)."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.fake.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        arrived = self.loop.time()  # the latency runs from arrival, not from when this request's parse finished
        self.buf += data
        while (end := self.buf.find(b"\r\n\r\n")) >= 0:
            lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._reply(411, error_body("send a Content-Length body", "invalid_request_error"), close=True)
                return
            n = int(headers.get("content-length") or 0)
            if len(self.buf) < end + 4 + n:
                return  # the body is still arriving
            raw = bytes(self.buf[end + 4 : end + 4 + n])
            del self.buf[: end + 4 + n]
            parts = lines[0].split(" ")
            close = headers.get("connection", "").lower() == "close"
            if len(parts) < 2 or parts[0] != "POST" or not parts[1].rstrip("/").endswith("/chat/completions"):
                self._reply(404, error_body(f"no route {parts[1] if len(parts) > 1 else lines[0]}", "not_found"), close)
                continue
            try:
                body = orjson.loads(raw)
            except ValueError:
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._reply(400, error_body("body is not JSON", "invalid_request_error"), close)
                    continue
            self.fake.requests += 1
            payload = json.dumps(self.fake.reply_json(body)).encode()
            delay = self.fake.latency_fn() if self.fake.latency_fn is not None else self.fake.latency_s
            if self.fake.on_reply is not None:
                self.fake.on_reply(arrived, delay)
            if delay:
                self.loop.call_at(arrived + delay, self._reply, 200, payload, close)
            else:
                self._reply(200, payload, close)

    def _reply(self, status: int, payload: bytes, close: bool = False) -> None:
        if self.transport is None or self.transport.is_closing():
            return  # the client went away meanwhile
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 411: "Length Required"}[status]
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s"
            % (status, reason.encode(), len(payload), b"Connection: close\r\n" if close else b"", payload)
        )
        if close:
            self.transport.close()


async def serve_asyncio(
    fake: FakeOpenAI,
    port: int = 0,
    ready: Callable[[str], None] | None = None,
    stop: "asyncio.Future[None] | None" = None,
) -> None:
    """Serve `fake`'s replies (responder, usage, latency; faults are not supported) on 127.0.0.1
    from this event loop until `stop` resolves; `ready(base_url)` is called once listening."""
    if fake.fault_rate or fake.mode is not None:
        raise ValueError("serve_asyncio answers every request normally; use the threaded FakeOpenAI for faults")
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _AsyncHTTP(fake), "127.0.0.1", port, backlog=256)
    try:
        if ready is not None:
            ready(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
        await (stop if stop is not None else loop.create_future())
    finally:
        server.close()


class RawHTTP:
    """A scripted HTTP server in the test's own event loop, for what the fake endpoints above never
    do (HTTP/1.0 replies, chunked + gzip bodies, idle connections closed, replies that stall):
    `handler(srv, reader, writer)` serves one accepted connection, reading requests with
    `read_request` and writing whatever bytes the test needs.

        async with RawHTTP(handler) as srv:   # srv.base_url, srv.connections, srv.requests, srv.eofs
            ...

    `host` "::1" listens on IPv6; `ssl` an `ssl.SSLContext` serves https. Counters: `connections`
    accepted, `requests` (head, body) pairs as they arrived, `eofs` connections the client closed."""

    def __init__(self, handler: Callable[..., Any], host: str = "127.0.0.1", ssl: Any = None) -> None:
        self.handler, self.host, self.ssl = handler, host, ssl
        self.connections = 0
        self.eofs = 0
        self.requests: list[tuple[bytes, bytes]] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.base_url = ""

    async def __aenter__(self) -> "RawHTTP":
        self.server = await asyncio.start_server(self._serve, self.host, 0, ssl=self.ssl)
        port = self.server.sockets[0].getsockname()[1]
        name = f"[{self.host}]" if ":" in self.host else self.host
        self.base_url = f"{'https' if self.ssl else 'http'}://{name}:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for w in self.writers:
            w.transport.abort()
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            await self.handler(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.transport.abort()

    async def read_request(self, reader: asyncio.StreamReader) -> tuple[bytes, bytes] | None:
        """The next request on this connection (head, body), or None when the client closed it."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.eofs += 1
            return None
        length = next(
            (int(v) for k, _, v in (x.partition(b":") for x in head.split(b"\r\n")) if k.lower() == b"content-length"),
            0,
        )
        req = (head, await reader.readexactly(length))
        self.requests.append(req)
        return req


def completion_bytes(text: str, model: str = "fake-model") -> bytes:
    """A minimal chat-completions reply body whose answer is `text`."""
    return json.dumps(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    ).encode()


async def _serve_until_stdin_closes(fake: FakeOpenAI, port: int) -> None:
    loop = asyncio.get_running_loop()
    stop = loop.create_future()

    def wait_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(lambda: None if stop.done() else stop.set_result(None))

    threading.Thread(target=wait_stdin, daemon=True).start()
    await serve_asyncio(fake, port, ready=lambda url: print(url, flush=True), stop=stop)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve a fake OpenAI endpoint on 127.0.0.1 until stdin closes.")
    ap.add_argument("--latency", type=float, default=0.0, help="server-side delay per reply, seconds")
    ap.add_argument("--fault-rate", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument(
        "--react", action="store_true", help="answer with react_responder (ReAct final answer / judge 'yes')"
    )
    ap.add_argument(
        "--server",
        choices=("threads", "asyncio"),
        default="threads",
        help="threads: a thread per connection, faults supported; asyncio: one event loop, no faults (perf)",
    )
    a = ap.parse_args(argv)
    if a.server == "asyncio":
        if a.fault_rate:
            ap.error("--server asyncio injects no faults; use --server threads with --fault-rate")
        fake = FakeOpenAI(react_responder if a.react else None, latency_s=a.latency, seed=a.seed)
        asyncio.run(_serve_until_stdin_closes(fake, a.port))
        return
    with FakeOpenAI(
        react_responder if a.react else None, latency_s=a.latency, fault_rate=a.fault_rate, seed=a.seed, port=a.port
    ) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin


if __name__ == "__main__":
    main()
