"""A lean HTTP/1.1 client for the backbone's one request shape (`transport: h1`, the default).

What a chat-completions call needs and nothing more: POST a ready body to a URL and read the
reply, over keep-alive connections (and `get`, for the run's one access check: `runners/access.py`).
Built on asyncio's own Protocol/Transport; the request head is written here, the response is
parsed by `httptools` (the C HTTP parser, llhttp, that uvicorn uses), so the Python work per
request is a few callbacks instead of a general client's layers (scripts/perf/transport.py
measures it against aiohttp).

- Connections: per (scheme, host, port) a pool of idle keep-alive connections; at most `limit`
  requests hold a connection at once (the backbone's in-flight bound), and at most `limit` idle
  connections are kept. A connection goes back to the pool only after a complete reply that
  allows keep-alive (`Connection: close` and HTTP/1.0 replies close it); a pooled connection
  the server has closed meanwhile is dropped, never reused.
- http and https (asyncio's ssl with `ssl.create_default_context()`: certificate and hostname
  checked, SNI sent), host names, IPv4 and IPv6 literals (`http://[::1]:8000/v1`).
- Reply bodies: Content-Length, chunked, or (HTTP/1.0 style) until the server closes;
  `Content-Encoding: gzip`/`deflate` decoded as it arrives, the decoded size bounded by
  `max_bytes` (a compressed bomb costs one bounded read; a Content-Length over the bound is
  refused before any body is read).
- Redirects are returned as they are (the backbone decides which to follow).
- Errors: nothing accepts the connection (refused, DNS failure, unreachable, TLS handshake
  refused) → `TransportFailure(refused=True)`; the connection dies before a complete reply,
  or the reply is not HTTP → `TransportFailure`. A request cancelled mid-way (the backbone's
  deadline, `openai.Deadlines`) aborts its connection instead of pooling it.
- No proxy support: `HTTP(S)_PROXY` and `NO_PROXY` are not read (the aiohttp transport does not
  trust the environment either). No HTTP/2, no pipelining, no request compression.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import urllib.parse
import zlib
from typing import Any, Iterator, Mapping

import httptools

from runners.backbones.openai import MAX_REPLY_BYTES, Reply, TransportFailure, too_long


class Headers(Mapping[str, str]):
    """A reply's headers, looked up case-insensitively (repeated fields joined by ", "). Decoded on
    first use: the backbone reads headers only of redirects and retried statuses."""

    __slots__ = ("_pairs", "_map")

    def __init__(self, pairs: list[tuple[bytes, bytes]]) -> None:
        self._pairs = pairs
        self._map: dict[str, str] | None = None

    @property
    def _d(self) -> dict[str, str]:
        if self._map is None:
            d: dict[str, str] = {}
            for name, value in self._pairs:
                k = name.decode("latin-1").lower()
                v = value.decode("latin-1").strip()
                d[k] = f"{d[k]}, {v}" if k in d else v
            self._map = d
        return self._map

    def __getitem__(self, key: str) -> str:
        return self._d[key.lower()]

    def get(self, key: str, default: Any = None) -> Any:
        return self._d.get(key.lower(), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        return f"Headers({self._d!r})"


class _Reply:
    """What a connection hands back: status, raw header pairs and the (decoded) body."""

    __slots__ = ("status", "pairs", "body")

    def __init__(self, status: int, pairs: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status, self.pairs, self.body = status, pairs, body


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its reply parsed by httptools."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.transport: asyncio.Transport | None = None
        self.closed = False  # the peer closed it, or we did: never reused
        self.waiter: asyncio.Future[_Reply] | None = None
        self.keep_alive = False
        self.got_bytes = False

    # ------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.parser = httptools.HttpResponseParser(self)  # one per connection: replies follow one another
        self.loop = asyncio.get_running_loop()

    def data_received(self, data: bytes) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():  # bytes on an idle connection: out of step, never reuse it
            self.abort()
            return
        self.got_bytes = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            failure = self.failure or TransportFailure(f"malformed HTTP reply: {e}")
            self.abort()
            if not waiter.done():
                waiter.set_exception(failure)
            return
        if self.failure is not None:  # set by a callback that could not raise through the parser
            self.abort()
            if not waiter.done():
                waiter.set_exception(self.failure)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        if self.headers_done and self.until_close and exc is None:  # HTTP/1.0 style: the body ends with the connection
            self.keep_alive = False
            try:
                waiter.set_result(_Reply(self.status, self.pairs, self._body()))
            except TransportFailure as e:
                waiter.set_exception(e)
            return
        why = f": {type(exc).__name__}: {exc}" if exc else ""
        said = "before any reply byte" if not self.got_bytes else "in the middle of its reply"
        waiter.set_exception(TransportFailure(f"server closed the connection {said}{why}"))

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # ------------------------------------------------------------ one request
    def send(self, data: bytes) -> asyncio.Future[_Reply]:
        """Write one request and return the future of its reply."""
        self.pairs: list[tuple[bytes, bytes]] = []
        self.parts: list[bytes] = []
        self.size = 0
        self.status = 0
        self.headers_done = False
        self.until_close = False
        self.decoder: Any = None
        self.failure: TransportFailure | None = None
        self.got_bytes = False
        self.waiter = self.loop.create_future()
        assert self.transport is not None
        self.transport.write(data)
        return self.waiter

    # ------------------------------------------------------------ httptools callbacks
    def on_message_begin(self) -> None:
        if self.waiter is None or self.waiter.done():  # a reply nobody asked for: the connection is out of step
            self.closed = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self.pairs.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        length = chunked = None
        for name, value in self.pairs:
            low = name.lower()
            if low == b"content-length":
                length = value
            elif low == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif low == b"content-encoding":
                enc = value.strip().lower()
                if enc in (b"gzip", b"x-gzip", b"deflate"):
                    self.decoder = zlib.decompressobj(47)  # zlib or gzip header, detected
                    self.deflate = enc == b"deflate"
                elif enc not in (b"", b"identity"):
                    self.failure = TransportFailure(
                        f"reply in an unsupported Content-Encoding {enc.decode('latin-1')!r}"
                    )
                    raise self.failure
        if length is not None:
            try:
                announced = int(length)
            except ValueError:
                announced = -1
            if announced > self.max_bytes:
                self.failure = TransportFailure(too_long(self.max_bytes, announced))
                raise self.failure
        self.until_close = length is None and not chunked
        self.headers_done = True

    def on_body(self, chunk: bytes) -> None:
        if self.decoder is not None:
            chunk = self._decode(chunk)
        self.size += len(chunk)
        if self.size > self.max_bytes:
            self.failure = TransportFailure(too_long(self.max_bytes))
            raise self.failure
        self.parts.append(chunk)

    def _decode(self, chunk: bytes) -> bytes:
        room = self.max_bytes - self.size + 1  # one byte over the bound is enough to know
        try:
            return self.decoder.decompress(chunk, room)
        except zlib.error:
            if self.deflate and not self.size and not self.decoder.unused_data:  # raw deflate, no zlib header
                self.decoder, self.deflate = zlib.decompressobj(-zlib.MAX_WBITS), False
                return self._decode(chunk)
            self.failure = TransportFailure("reply body is not valid gzip/deflate data")
            raise self.failure from None

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim reply (100 Continue, 103 Early Hints): the real one follows
            self.pairs, self.headers_done = [], False
            return
        self.keep_alive = self.parser.should_keep_alive()
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            reply = _Reply(status, self.pairs, self._body())
            self.pairs, self.parts = [], []  # whatever follows (nothing should) cannot touch this reply
            waiter.set_result(reply)

    def _body(self) -> bytes:
        if self.decoder is not None:
            tail = self.decoder.flush()
            if self.decoder.unconsumed_tail or self.size + len(tail) > self.max_bytes:
                self.failure = TransportFailure(too_long(self.max_bytes))
                raise self.failure
            self.parts.append(tail)
        parts = self.parts
        return parts[0] if len(parts) == 1 else b"".join(parts)


class _Origin:
    """What a URL's origin needs once: where to connect, its TLS context and the Host header."""

    __slots__ = ("host", "port", "ssl", "server_hostname", "host_header", "idle")

    def __init__(self, scheme: str, host: str, port: int, ssl_ctx: ssl.SSLContext | None) -> None:
        self.host, self.port, self.ssl = host, port, ssl_ctx
        self.server_hostname = host if ssl_ctx is not None else None
        name = f"[{host}]" if ":" in host else host.encode("idna").decode("ascii")
        default = 443 if scheme == "https" else 80
        self.host_header = name if port == default else f"{name}:{port}"
        self.idle: collections.deque[_Connection] = collections.deque()


class H1Transport:
    """The default client (see the module docstring): `post(url, body)` → `Reply`."""

    def __init__(
        self, *, headers: dict[str, str], limit: int, timeout_s: float, max_bytes: int = MAX_REPLY_BYTES
    ) -> None:
        self.max_bytes = max_bytes  # `timeout_s` is not used: the backbone's deadline bounds each request
        self.limit = limit
        for k, v in headers.items():
            if any(c in f"{k}{v}" for c in "\r\n\0") or ":" in k:
                raise ValueError(f"HTTP header {k!r} holds a line break, NUL or colon; fix the value it came from")
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items() if k.lower() not in ("host", "content-length"))
        self._fixed = fixed + "Accept: */*\r\nAccept-Encoding: gzip, deflate\r\n"
        self._slots = asyncio.Semaphore(limit)
        self._origins: dict[tuple[str, str, int], _Origin] = {}
        self._targets: dict[str, tuple[_Origin, bytes]] = {}
        self._open: set[_Connection] = set()
        self._ssl: ssl.SSLContext | None = None

    def _target(self, url: str, method: str = "POST") -> tuple[_Origin, bytes]:
        """(origin, the request head up to Content-Length) of `url`, cached; of a GET, the whole head."""
        hit = self._targets.get(url) if method == "POST" else None
        if hit is not None:
            return hit
        parts = urllib.parse.urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise TransportFailure(f"not an http(s) URL: {scheme}://{parts.hostname or ''}", refused=True)
        port = parts.port or (443 if scheme == "https" else 80)
        key = (scheme, parts.hostname, port)
        origin = self._origins.get(key)
        if origin is None:
            if scheme == "https" and self._ssl is None:
                self._ssl = ssl.create_default_context()
            origin = self._origins[key] = _Origin(
                scheme, parts.hostname, port, self._ssl if scheme == "https" else None
            )
        path = urllib.parse.quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")  # as given, non-ASCII escaped
        if parts.query:
            path += "?" + urllib.parse.quote(parts.query, safe="/%:@!$&'()*+,;=-._~?")
        head = f"{method} {path} HTTP/1.1\r\nHost: {origin.host_header}\r\n{self._fixed}"
        if method != "POST":
            return origin, (head + "\r\n").encode("utf-8")
        hit = self._targets[url] = (origin, (head + "Content-Length: ").encode("utf-8"))
        if len(self._targets) > 64:  # redirect targets: keep the cache small
            self._targets.pop(next(iter(self._targets)))
        return hit

    async def _connect(self, origin: _Origin) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(
                lambda: _Connection(self.max_bytes),
                origin.host,
                origin.port,
                ssl=origin.ssl,
                server_hostname=origin.server_hostname,
            )
        except (OSError, ssl.SSLError) as e:  # refused, DNS failure, unreachable, certificate refused
            where = f"{origin.host_header}"
            raise TransportFailure(f"cannot connect to {where}: {type(e).__name__}: {e}", refused=True) from None
        return conn

    async def get(self, url: str) -> Reply:
        """One GET of `url` (no body), over the same pool."""
        origin, head = self._target(url, "GET")
        return await self._send(origin, head)

    async def post(self, url: str, body: bytes) -> Reply:
        """POST `body` to `url`."""
        origin, head = self._target(url)
        return await self._send(origin, b"%b%d\r\n\r\n%b" % (head, len(body), body))

    async def _send(self, origin: _Origin, request: bytes) -> Reply:
        """Write one whole `request` to `origin` over an idle connection of its pool (or a new one)
        and read its reply."""
        async with self._slots:
            conn = None
            idle = origin.idle
            while idle:
                c = idle.pop()  # the most recently used: the least likely to have been closed by the server
                if not c.closed and c.transport is not None and not c.transport.is_closing():
                    conn = c
                    break
                self._open.discard(c)
            if conn is None:
                conn = await self._connect(origin)
                self._open.add(conn)
            try:
                reply = await conn.send(request)
            except BaseException:  # failure, timeout, cancellation: the connection is in an unknown state
                conn.abort()
                self._open.discard(conn)
                raise
            if conn.keep_alive and not conn.closed and len(idle) < self.limit:
                idle.append(conn)
            else:
                conn.abort()
                self._open.discard(conn)
        return Reply(reply.status, Headers(reply.pairs), reply.body)

    async def aclose(self) -> None:
        for conn in list(self._open):
            conn.abort()
        self._open.clear()
        for origin in self._origins.values():
            origin.idle.clear()
        await asyncio.sleep(0)  # let the transports' connection_lost run
