"""Backbone for any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, DeepSeek, OpenAI,
DashScope, ...), spoken over the harness's own HTTP/1.1 client (`runners/backbones/h1.py`:
asyncio + httptools, one keep-alive pool per event loop, connections limited to the in-flight
bound; `transport: aiohttp` or `httpx` switch to those libraries) so that retries, in-flight
bounds and usage mapping are ours and visible in the episode record. The request body is encoded
once (`runners.records.wire`): the prompt's JSON bytes that the episode recorder and the response
cache already made are spliced into the body.

- In-flight bound: one `asyncio.Semaphore` per (event loop, base_url), shared by every
  `OpenAIBackbone` of that endpoint (agent, judge and user_sim backbones of one provider share
  one budget). The first backbone created for an endpoint sets its size.
- Retries: 408/409/429/5xx, connection errors and resets, timeouts, malformed bodies. Wait =
  the server's `Retry-After` (seconds or HTTP date) when given, else full-jitter exponential
  backoff `uniform(0, min(cap, base * 2**n))`; every wait is capped at `backoff_cap_s` (harness
  choice: per-minute rate limits never ask for more than 60 s). Each retry is a `RetryEvent`.
- Connection refused (nothing listens at `base_url`) is retried like other transport errors, but
  once every connection has been refused for `refused_window_s` (default 10 s, no success in
  between) the error is fatal and names the URL: a dead endpoint stops the sweep in seconds,
  not after the full retry cycle of every episode. Each retry is reported to `on_retry` (the
  live progress display).
- Fail fast (`BackboneError(fatal=True)`) on 400/401/403/404/422 (and any other 4xx) and on
  quota exhaustion, with a message that names the fix. Exception: a 400 that says the prompt
  exceeds the context window is an episode-level failure (`fatal=False`, not retried), so one
  over-long Full Context episode does not stop a sweep (harness choice).
- The API key is sent only in the Authorization header and is scrubbed from every message.
- Credentials in `base_url` (`https://user:password@host/v1`, some proxies and gateways) are cut
  out of the URL the client sees and handled explicitly: with no API key they are sent as HTTP
  Basic auth (`auth: basic from URL` in the manifest's endpoints); together with an API key they
  are a configuration error, because both would need the one Authorization header (the HTTP
  library would otherwise send Basic auth instead of the Bearer key, silently).
  `redact_secrets` removes every credential form (Bearer/Basic/token values, URL userinfo, the
  key and password themselves, also base64- or URL-encoded) from error text before it is stored
  or printed.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import email.utils
import math
import os
import random
import time
import typing
import urllib.parse
import weakref
from typing import Any, AsyncIterator, Callable, Mapping

import json

import orjson

from runners.api import Backbone, BackboneError, Completion, Message, Protocol, RetryEvent, ToolCall, Usage
from runners.inputs import sanitize
from runners.secrets import (
    credential_secrets,
    redact_secrets,
    redact_url,
    redact_value,
    secret_pattern,
    split_url_credentials,
)
from runners.tokens import estimate_usage
from runners.records.wire import dumps_with, encoded

RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
TOKEN_LIMIT_KEYS = ("max_tokens", "max_completion_tokens")  # request-body names of the completion token limit
# Not "billing": OpenAI's ordinary rate-limit 429 links to the billing page.
_QUOTA_MARKERS = (
    "insufficient_quota",
    "quota exceeded",
    "quota_exceeded",
    "exceeded your current quota",
    "insufficient balance",
)
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "too many tokens",
    "prompt is too long",
)
_FIX = {
    400: (
        "the request was rejected as invalid; check `sampling`/`extra_body` in the backbone config and that the model "
        "accepts them"
    ),
    401: "the API key was refused; check the variable named by `api_key_env` in the backbone config",
    403: "the key may not use this model or endpoint; check the key's permissions and `model`",
    404: "unknown model or wrong URL; check `model` and `base_url` (it usually ends in /v1)",
    422: "the endpoint could not process the request body; check `sampling`/`extra_body` for unsupported fields",
}

# (event loop) -> {base_url: Semaphore}; weak so finished loops free their semaphores.
_SEMAPHORES: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]]" = (
    weakref.WeakKeyDictionary()
)


def endpoint_semaphore(base_url: str, size: int, loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Semaphore:
    """The in-flight bound of `base_url` in the running loop (created with `size` on first use).
    `loop`: the running loop, when the caller has it (Python 3.11's `get_running_loop` is a
    `getpid` system call each time, to notice a fork)."""
    per_loop = _SEMAPHORES.setdefault(loop or asyncio.get_running_loop(), {})
    if base_url not in per_loop:
        per_loop[base_url] = asyncio.Semaphore(size)
    return per_loop[base_url]


_RUNNING, _EXPIRING, _DONE = 0, 1, 2
T = typing.TypeVar("T")


class _Deadline:
    """One request's deadline (`Deadlines`): when, its task, the task's cancel requests when it
    started, and whether it is running, expiring (its task cancelled by it) or done."""

    __slots__ = ("when", "task", "cancelling", "state")

    def __init__(self, when: float, task: "asyncio.Task[Any]") -> None:
        self.when, self.task, self.cancelling, self.state = when, task, task.cancelling(), _RUNNING


class Deadlines:
    """The total deadline of every request in flight of one backbone in one loop, `timeout_s`
    after it starts, with one timer on the loop at a time instead of `asyncio.timeout`'s timer per
    request (a handle made, pushed on the loop's heap and cancelled each call). Deadlines of one
    `timeout_s` come due in the order their requests started, so the timer is set for the first
    request still running (or earlier: it then looks again). At a deadline it does what
    `asyncio.timeout` does (Python 3.11's `Timeout`): the request's task is cancelled, and when
    the request ends, a CancelledError it raises is a TimeoutError unless the task was also
    cancelled from elsewhere (`Task.uncancel`). `await deadlines.run(request)` in the request's task."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s  # the loop is not kept: the backbone holds its `Deadlines` weakly by loop
        self._due: collections.deque[_Deadline] = collections.deque()  # in order of `when`
        self._done = 0  # entries of `_due` done, not yet dropped (one running before them)
        self._armed = False  # a timer is set (its handle is not kept: it holds the loop)

    async def run(self, request: typing.Awaitable[T], loop: asyncio.AbstractEventLoop | None = None) -> T:
        """`await request`, ended by the deadline as `async with asyncio.timeout(timeout_s)` ends it
        (`loop`: the running loop, when the caller has it)."""
        d = self.enter(loop)
        try:
            out = await request
        except asyncio.CancelledError as e:
            if self.exit(d):
                raise TimeoutError from e
            raise
        except BaseException:
            self.exit(d)
            raise
        self.exit(d)
        return out

    def enter(self, loop: asyncio.AbstractEventLoop | None = None) -> _Deadline:
        loop = loop or asyncio.get_running_loop()
        task = asyncio.current_task(loop)
        if task is None:
            raise RuntimeError("a request's deadline needs a task")
        d = _Deadline(loop.time() + self.timeout_s, task)
        self._due.append(d)
        if not self._armed:
            self._arm(loop)
        return d

    def exit(self, d: _Deadline) -> bool:
        """The request is over: whether the deadline ended it (its CancelledError is then a
        TimeoutError; as `Timeout.__aexit__`, the deadline's cancel request is withdrawn)."""
        if d.state == _EXPIRING:  # dropped from `_due` when it expired
            d.state = _DONE
            return d.task.uncancel() <= d.cancelling
        d.state = _DONE
        due = self._due
        self._done += 1
        while due and due[0].state == _DONE:
            due.popleft()
            self._done -= 1
        if self._done > 64 and 2 * self._done > len(due):  # done ones held behind a slow request
            self._due = collections.deque(x for x in due if x.state != _DONE)
            self._done = 0
        return False

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        at = self._due[0].when
        loop.call_at(at, self._fire, at)
        self._armed = True

    def _fire(self, at: float) -> None:
        self._armed = False
        loop = asyncio.get_running_loop()
        now = max(at, loop.time())  # `at`: the loop found the timer due
        due = self._due
        while due and (due[0].state == _DONE or due[0].when <= now):
            d = due.popleft()
            if d.state == _DONE:
                self._done -= 1
                continue
            d.task.cancel()
            d.state = _EXPIRING
        if due:
            self._arm(loop)


def retry_after_s(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: `retry-after-ms`, `Retry-After: <seconds>` or
    `Retry-After: <HTTP date>`; None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_USAGE_FIELDS = ("prompt_tokens", "completion_tokens")
_USAGE_DETAILS = (
    ("prompt_tokens_details", "cached_tokens"),
    (None, "prompt_cache_hit_tokens"),
    ("completion_tokens_details", "reasoning_tokens"),
)


def _count(v: Any) -> int | None:
    """A token count as the endpoint sent it → int; None when it is no count at all: not a number
    (a string such as "lots", a bool, null), negative, NaN or infinite (`Infinity` is read by the
    standard library's JSON parser), or a fraction."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        return None
    return int(v) if v >= 0 else None


MAX_CALL_TOKENS = 10_000_000
"""No count of one call above this is believed (above every model's context window as of 2026)."""
PROMPT_SLACK_TOKENS = 4096
"""Tokens a server may add to a prompt beyond the request's bytes (chat template, a hidden system prompt)."""
COMPLETION_SLACK_TOKENS = 1024
"""Tokens a completion may report beyond the request's max_tokens (a server that counts stop tokens)."""


def usage_bounds(request_bytes: int | None, max_completion: int | None) -> dict[str, int]:
    """The largest counts one call can truly have: a prompt has at most one token per byte of the
    request body (+ `PROMPT_SLACK_TOKENS`), a completion at most the request's token limit
    (+ `COMPLETION_SLACK_TOKENS`), and no count exceeds `MAX_CALL_TOKENS`."""
    prompt = MAX_CALL_TOKENS if request_bytes is None else min(MAX_CALL_TOKENS, request_bytes + PROMPT_SLACK_TOKENS)
    completion = (
        MAX_CALL_TOKENS if max_completion is None else min(MAX_CALL_TOKENS, max_completion + COMPLETION_SLACK_TOKENS)
    )
    return {"prompt": prompt, "completion": completion}


def usage_problem(raw: Any, bounds: dict[str, int] | None = None) -> str | None:
    """Why the endpoint's usage object cannot be believed (None when it can, or when there is none):
    a token count that is not a non-negative whole number, or one above what the call can truly
    have (`usage_bounds`: e.g. prompt_tokens 2^63-1 for a 2 kB request). Such usage is treated as
    missing: the call's tokens are estimated (`source: estimated`) and the call is counted in a
    warning, so garbage never becomes 0 tokens labelled `api` (which would understate #Tok and
    cost) nor an absurd count (which would overstate them and could not be stored)."""
    if not isinstance(raw, dict) or not (set(_USAGE_FIELDS) & raw.keys()):
        return None
    b = bounds or usage_bounds(None, None)
    limit = {"prompt_tokens": b["prompt"], "completion_tokens": b["completion"]}
    bad = [
        f"{k}={raw[k]!r:.40}" for k in _USAGE_FIELDS if raw.get(k) is not None and _count(raw[k]) is None
    ]  # null: not reported
    bad += [
        f"{k}={raw[k]!r:.40} above the call's bound {limit[k]}"
        for k in _USAGE_FIELDS
        if (n := _count(raw.get(k))) is not None and n > limit[k]
    ]
    for parent, key in _USAGE_DETAILS:
        holder = raw.get(parent) if parent else raw
        if isinstance(holder, dict) and holder.get(key) is not None:
            n = _count(holder[key])
            if n is None or n > MAX_CALL_TOKENS:
                bad.append(f"{parent + '.' if parent else ''}{key}={holder[key]!r:.40}")
    return f"unusable usage from the endpoint ({', '.join(bad)})" if bad else None


def map_usage(raw: Any, bounds: dict[str, int] | None = None, *, checked: bool = False) -> Usage | None:
    """Endpoint usage → `Usage(source="api")`; None when the endpoint sent none we can read (absent,
    or `usage_problem`: garbage or out-of-bound counts are treated as missing, never as 0).
    Cached prompt tokens: OpenAI `prompt_tokens_details.cached_tokens`, else DeepSeek
    `prompt_cache_hit_tokens`; reasoning: `completion_tokens_details.reasoning_tokens`.
    `checked=True`: the caller found `usage_problem(raw, bounds)` None already (not asked again)."""
    if not isinstance(raw, dict) or not (set(_USAGE_FIELDS) & raw.keys()):
        return None
    if not checked and usage_problem(raw, bounds):
        return None

    def num(v: Any) -> int:
        return _count(v) or 0

    pdet: Any = raw.get("prompt_tokens_details") if isinstance(raw.get("prompt_tokens_details"), dict) else {}
    cdet: Any = raw.get("completion_tokens_details") if isinstance(raw.get("completion_tokens_details"), dict) else {}
    return Usage(
        prompt_tokens=num(raw.get("prompt_tokens")),
        cached_prompt_tokens=num(pdet.get("cached_tokens")) or num(raw.get("prompt_cache_hit_tokens")),
        completion_tokens=num(raw.get("completion_tokens")),
        reasoning_tokens=num(cdet.get("reasoning_tokens")),
        source="api",
    )


def _detail(holder: Any, key: str) -> int | None:
    """`holder[key]` of a usage detail for `plain_usage`: 0 when absent or null, the count when it is
    an exact int in [0, MAX_CALL_TOKENS]; None when anything else (the general path decides)."""
    if holder is None:
        return 0
    if type(holder) is not dict:
        return None
    v = holder.get(key)
    if v is None:
        return 0
    return v if type(v) is int and 0 <= v <= MAX_CALL_TOKENS else None


def plain_usage(raw: Any, bounds: dict[str, int] | None = None) -> Usage | None:
    """`map_usage(raw, bounds)` of the usage object nearly every endpoint sends (exact ints, within
    the bounds, details absent, null or exact ints) without `usage_problem`'s and `map_usage`'s
    per-field checks; None for any other shape, which the caller reads by the general path (the
    same `Usage` either way: tests/test_openai_backbone.py compares them)."""
    if type(raw) is not dict:
        return None
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if type(prompt) is not int or type(completion) is not int or prompt < 0 or completion < 0:
        return None
    b = bounds or usage_bounds(None, None)
    if prompt > b["prompt"] or completion > b["completion"]:
        return None
    cached = _detail(raw.get("prompt_tokens_details"), "cached_tokens")
    hit = _detail(raw, "prompt_cache_hit_tokens")
    reasoning = _detail(raw.get("completion_tokens_details"), "reasoning_tokens")
    if cached is None or hit is None or reasoning is None or (cached or hit) > prompt or reasoning > completion:
        return None  # a part above its whole: the general path clamps it and says so (`usage_parts`)
    return Usage(
        prompt_tokens=prompt,
        cached_prompt_tokens=cached or hit,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
        source="api",
    )


def usage_parts(usage: Usage) -> tuple[Usage, str | None]:
    """`usage` with a part that exceeds its whole (cached prompt tokens above the prompt's, reasoning
    tokens above the completion's: an endpoint's inconsistent count) cut to that whole, and the
    note that says so (None when the counts are consistent). The wholes are kept: they are what the
    call is billed and counted by; the cached part only lowers the cost (`runners.cost.usd`), so
    an impossible one must not pass unsaid."""
    notes = []
    if usage.cached_prompt_tokens > usage.prompt_tokens:
        notes.append(f"cached tokens {usage.cached_prompt_tokens} above prompt_tokens={usage.prompt_tokens}")
    if usage.reasoning_tokens > usage.completion_tokens:
        notes.append(f"reasoning_tokens={usage.reasoning_tokens} above completion_tokens={usage.completion_tokens}")
    if not notes:
        return usage, None
    fixed = usage.model_copy(
        update={
            "cached_prompt_tokens": min(usage.cached_prompt_tokens, usage.prompt_tokens),
            "reasoning_tokens": min(usage.reasoning_tokens, usage.completion_tokens),
        }
    )
    return fixed, f"usage: {'; '.join(notes)} (inconsistent counts from the endpoint): each part cut to its whole"


# ------------------------------------------------------------------------------------ transport
# The client sits behind this small interface: `post(url, body_bytes)` → `Reply`, raising
# `TransportFailure` for anything below HTTP (refused, reset, closed without reply) and
# `TimeoutError` for the deadline. Request-body construction and response parsing stay in
# OpenAIBackbone, so neither depends on the HTTP library.


class Reply:
    """One HTTP response: status, headers (case-insensitive mapping) and the raw body."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


MAX_REPLY_BYTES = 32 * 2**20  # default bound of one reply body: far above any real chat completion
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5


def too_long(limit: int, announced: int | None = None) -> str:
    said = f" (it announced {announced} bytes)" if announced is not None else ""
    return f"reply body over max_reply_bytes={limit}{said}: an endless or oversized reply, dropped"


class TransportFailure(Exception):
    """The request got no HTTP response (connection refused/reset, server closed early).
    `refused`: no connection could be made at all (nothing listens there, host unreachable)."""

    def __init__(self, message: str, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


async def read_capped(chunks: AsyncIterator[bytes], limit: int) -> bytes:
    """A reply body from its `chunks`, or `TransportFailure` (`too_long`) as soon as it passes
    `limit` bytes: an endless stream costs one bounded read, not all memory."""
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TransportFailure(too_long(limit))
        parts.append(chunk)
    return b"".join(parts)


class AiohttpTransport:
    """`transport: aiohttp`, the former default: one `aiohttp.ClientSession` per event loop and
    backbone, its connector limited to the backbone's in-flight bound (`limit`), keep-alive
    connections reused. Harness CPU per call is ~7× lower than httpx's, ~1.4× h1's
    (scripts/perf/transport.py)."""

    def __init__(
        self, *, headers: dict[str, str], limit: int, timeout_s: float, max_bytes: int = MAX_REPLY_BYTES
    ) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self.max_bytes = max_bytes
        self._errors = (aiohttp.ClientError,)
        connector = aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=300)
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=headers,
            # no timer of its own: OpenAIBackbone._attempt's deadline (`Deadlines`) bounds every request
            # (redirects included); a second timer per request only costs event-loop time (a timer-heap push)
            timeout=aiohttp.ClientTimeout(),
            skip_auto_headers=("User-Agent",),
            auto_decompress=True,
        )

    async def post(self, url: str, body: bytes) -> Reply:
        try:  # redirects come back as they are: OpenAIBackbone decides which to follow
            async with self._session.post(url, data=body, allow_redirects=False) as resp:
                if resp.content_length is not None and resp.content_length > self.max_bytes:
                    resp.close()
                    raise TransportFailure(too_long(self.max_bytes, resp.content_length))
                try:  # decompressed chunks: a compressed bomb is bounded too
                    return Reply(resp.status, resp.headers, await read_capped(resp.content.iter_any(), self.max_bytes))
                except TransportFailure:
                    resp.close()  # the connection is dropped, not drained
                    raise
        except TimeoutError:  # aiohttp's own timeouts subclass both TimeoutError and ClientError
            raise
        except self._aiohttp.ClientConnectorError as e:
            raise TransportFailure(f"{type(e).__name__}: {e}", refused=True) from None
        except self._errors as e:
            raise TransportFailure(f"{type(e).__name__}: {e}") from None

    async def aclose(self) -> None:
        await self._session.close()


class HttpxTransport:
    """The former client, kept for comparison (`transport: httpx`): httpx AsyncClients of at most
    16 connections each (httpcore's pool bookkeeping grows with its connection count), the
    least-loaded one taking each request."""

    SHARD = 16

    def __init__(
        self, *, headers: dict[str, str], limit: int, timeout_s: float, max_bytes: int = MAX_REPLY_BYTES
    ) -> None:
        self.max_bytes = max_bytes
        try:  # environments that ship the httpx2 fork (used by `openai`) work too
            import httpx
        except ImportError:  # pragma: no cover - depends on the environment
            import httpx2 as httpx  # type: ignore[no-redef]
        self._httpx = httpx
        n = -(-limit // self.SHARD)
        size = -(-limit // n)
        limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
        self.shards: list[list[Any]] = [
            [httpx.AsyncClient(headers=headers, limits=limits, timeout=httpx.Timeout(timeout_s)), 0] for _ in range(n)
        ]

    async def post(self, url: str, body: bytes) -> Reply:
        shard = min(self.shards, key=lambda s: s[1])
        shard[1] += 1
        try:
            async with shard[0].stream("POST", url, content=body) as resp:  # never follows redirects
                data = await read_capped(resp.aiter_bytes(), self.max_bytes)
        except self._httpx.TimeoutException:
            raise TimeoutError from None
        except self._httpx.ConnectError as e:
            raise TransportFailure(f"{type(e).__name__}: {e}", refused=True) from None
        except self._httpx.TransportError as e:
            raise TransportFailure(f"{type(e).__name__}: {e}") from None
        finally:
            shard[1] -= 1
        return Reply(resp.status_code, resp.headers, data)

    async def aclose(self) -> None:
        for client, _ in self.shards:
            await client.aclose()


class Transport(typing.Protocol):
    """What OpenAIBackbone needs of an HTTP client."""

    async def post(self, url: str, body: bytes) -> Reply: ...

    async def aclose(self) -> None: ...


def h1_transport(**kw: Any) -> Transport:
    """The default client, `runners.backbones.h1.H1Transport` (imported on first use: it imports this module)."""
    from runners.backbones.h1 import H1Transport

    return H1Transport(**kw)


TRANSPORTS: dict[str, Callable[..., Transport]] = {
    "h1": h1_transport,
    "aiohttp": AiohttpTransport,
    "httpx": HttpxTransport,
}


UNPARSED_ARGUMENTS = "_unparsed_arguments"
"""`ToolCall.arguments` key holding a native call's `arguments` string that is not a JSON object."""


def native_tool_calls(raw: Any) -> list[ToolCall]:
    """`choices[0].message.tool_calls` (OpenAI format) → ToolCalls. Arguments that are not a JSON
    object are kept as `{UNPARSED_ARGUMENTS: <text>}` so the environment answers with an error."""
    import json

    out: list[ToolCall] = []
    for i, tc in enumerate(raw if isinstance(raw, list) else []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        args = fn.get("arguments")
        if isinstance(args, str):
            try:
                parsed = json.loads(args) if args.strip() else {}
            except ValueError:
                parsed = None
            args = parsed if isinstance(parsed, dict) else {UNPARSED_ARGUMENTS: args}
        elif not isinstance(args, dict):
            args = {}
        out.append(ToolCall(name=fn["name"], arguments=args, id=str(tc.get("id") or f"call_{i}")))
    return out


def sanitize_unicode(value: Any) -> tuple[Any, int]:
    """`value` (a decoded JSON body) with lone surrogates (invalid Unicode a JSON `\\ud800`
    escape can carry, which UTF-8 cannot encode) replaced by U+FFFD, and how many were replaced
    (the shared helper of runners/inputs.py, which every data loader uses too)."""
    return sanitize(value)


def content_text(content: Any) -> str | None:
    """The message content as text: a string, or the text parts of a content list."""
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return content


def empty_reply(message: dict[str, Any]) -> str | None:
    """Why a choice's message is no answer at all (None when it is one): `content: null` or empty
    / blank text, and no native tool calls."""
    if message.get("tool_calls"):
        return None
    content = content_text(message.get("content"))
    if content is None:
        return "content null"
    if not isinstance(content, str):
        return f"content is {type(content).__name__}, not text"
    return "empty text" if not content.strip() else None


class _Retry(Exception):
    """One failed attempt that may be retried; `wait_s` is the server's Retry-After if any."""

    def __init__(self, error: str, wait_s: float | None = None, refused: bool = False) -> None:
        super().__init__(error)
        self.error = error
        self.wait_s = wait_s
        self.refused = refused  # no connection could be made (connection refused, host unreachable)


class OpenAIBackbone(Backbone):
    """A chat model behind POST {base_url}/chat/completions. Sampling comes from config and can
    be overridden per call (`**sampling`, e.g. a judge's temperature); `extra_body` fields are
    merged into the request body (e.g. thinking disabled, FlowState App. B.5)."""

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str,
        api_key: str | None,
        sampling: dict[str, Any] | None = None,
        extra_body: dict[str, Any] | None = None,
        max_inflight: int = 16,
        timeout_s: float = 600,
        max_retries: int = 8,
        backoff_cap_s: float = 60,
        backoff_base_s: float = 1.0,
        transport: str = "h1",
        refused_window_s: float = 10.0,
        max_completion_chars: int | None = None,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        follow_cross_host_redirects: bool = False,
    ) -> None:
        if not base_url:
            raise ValueError(
                f"backbone '{name}': base_url is empty; set `base_url` (or the variable named by `base_url_env`)"
            )
        if max_inflight < 1 or max_retries < 0 or timeout_s <= 0 or backoff_cap_s < 0 or backoff_base_s < 0:
            raise ValueError(
                f"backbone '{name}': need max_inflight >= 1, max_retries >= 0, timeout_s > 0 and non-negative backoff"
            )
        self.name, self.model = name, model
        self.display_url = redact_url(base_url.rstrip("/"))  # what messages show: no credentials
        url, creds = split_url_credentials(base_url.rstrip("/"))
        self.base_url = url  # what the HTTP client sees: never userinfo (it would turn it into Basic auth silently)
        self._key = api_key or ""
        if creds and self._key and self._key != "EMPTY":
            raise ValueError(
                f"backbone '{name}': base_url {self.display_url} carries user:password credentials and an API key "
                "is set; both would need the Authorization header. Fix: remove the credentials from the URL "
                "(the key goes in the variable named by `api_key_env`), or set `api_key_env: null` to send the "
                "URL's credentials as HTTP Basic auth"
            )
        self._basic = creds
        self.auth = "basic (from base_url)" if creds else ("bearer" if self._key and self._key != "EMPTY" else "none")
        # What is cut out of every reply, a successful one too: the key, the URL password and `user:password`
        # (and their encodings); messages also drop the user name.
        reply_secrets = credential_secrets(self._key, creds)
        self._secrets = (*reply_secrets, creds[0]) if creds and creds[0] else reply_secrets
        self._secret_pattern = secret_pattern(reply_secrets)
        self.key_env: str | None = None  # name of the variable the key came from (for error messages)
        self.sampling = dict(sampling or {})
        self.extra_body = dict(extra_body or {})
        self.max_inflight, self.timeout_s, self.max_retries = max_inflight, timeout_s, max_retries
        self.backoff_cap_s, self.backoff_base_s = backoff_cap_s, backoff_base_s
        if transport not in TRANSPORTS:
            raise ValueError(f"backbone '{name}': unknown transport {transport!r}; use one of {', '.join(TRANSPORTS)}")
        self.transport = transport
        self._url = self.base_url + "/chat/completions"  # base_url never carries credentials (see above)
        if max_completion_chars is not None and max_completion_chars < 1:
            raise ValueError(f"backbone '{name}': max_completion_chars must be >= 1 (or null for no cap)")
        self.max_completion_chars = (
            max_completion_chars  # caps what is stored and parsed (recorded in Completion.hygiene)
        )
        if max_reply_bytes < 1:
            raise ValueError(f"backbone '{name}': max_reply_bytes must be >= 1")
        self.max_reply_bytes = max_reply_bytes  # a longer reply body fails the call (retried), memory stays bounded
        self.follow_cross_host_redirects = follow_cross_host_redirects  # else a redirect to another host is refused
        self.refused_window_s = refused_window_s  # connection refused for this long (no success between) is fatal
        self._refused_since: float | None = None
        self.on_retry = None  # callable(url, error, wait_s, backbone name): the live progress display
        self._rng = random.Random()
        self._transports: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Transport]" = (
            weakref.WeakKeyDictionary()
        )
        self._deadlines: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines]" = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackbone(name={self.name!r}, model={self.model!r}, base_url={self.display_url!r})"

    # -------------------------------------------------------------------- request parts
    def request_body(self, messages: list[Message], sampling: dict[str, Any]) -> dict[str, Any]:
        """The JSON body: model, messages, config sampling ← per-call sampling, then extra_body
        (config ← per-call `extra_body=`). Per-call settings are how a method sends per-role
        request fields (PoS: `response_format: {type: json_object}` for its JSON roles, a role's
        token limit), exactly as upstream PoS sends each role's `max_tokens` and `extra_body`.

        One token limit per request: a per-call `max_tokens` or `max_completion_tokens` replaces
        the config's limit and is sent under the name the backbone config uses (DashScope-style
        endpoints take `max_tokens`, OpenAI's newer models `max_completion_tokens`), so a method
        config need not know which one its backbone's endpoint accepts."""
        base, call = dict(self.sampling), dict(sampling)
        extra = {**self.extra_body, **(call.pop("extra_body", None) or {})}
        call_limits = [k for k in TOKEN_LIMIT_KEYS if k in call]
        if call_limits:
            value = call[call_limits[0]]
            for k in call_limits:
                call.pop(k)
            config_limits = [k for k in TOKEN_LIMIT_KEYS if k in base]
            for k in config_limits:
                base.pop(k)
            call[config_limits[0] if config_limits else call_limits[0]] = value
        body = {"model": self.model, "messages": messages, **base, **call, **extra}
        return {
            k: v for k, v in body.items() if v is not None
        }  # a null (e.g. extra_body.chat_template_kwargs=null) is not sent

    def request_bytes(self, messages: list[Message], sampling: dict[str, Any]) -> bytes:
        """`request_body` as JSON bytes, reusing the messages' bytes when they carry them."""
        msgs = encoded(messages)
        body = self.request_body([], sampling)
        body.pop("messages")
        return dumps_with(body, "messages", msgs.raw)

    def _bounds(self, body: bytes, sampling: dict[str, Any]) -> dict[str, int]:
        """`usage_bounds` of one request: its body's size and its completion token limit (the
        call's, else the config's: `request_body`'s rule)."""
        limits = [v for src in (sampling, self.sampling) for k in TOKEN_LIMIT_KEYS if isinstance(v := src.get(k), int)]
        return usage_bounds(len(body), limits[0] if limits else None)

    def _deadlines_here(self, loop: asyncio.AbstractEventLoop) -> Deadlines:
        """`loop`'s `Deadlines` of this backbone's requests (a new one when `timeout_s` changed)."""
        d = self._deadlines.get(loop)
        if d is None or d.timeout_s != self.timeout_s:
            d = self._deadlines[loop] = Deadlines(self.timeout_s)
        return d

    def _transport(self, loop: asyncio.AbstractEventLoop | None = None) -> "Transport":
        """This loop's HTTP transport (created on first use inside the loop; `loop`: the running
        loop, when the caller has it)."""
        loop = loop or asyncio.get_running_loop()
        t = self._transports.get(loop)
        if t is None:
            headers = {"Content-Type": "application/json", **self.auth_headers()}
            t = TRANSPORTS[self.transport](
                headers=headers, limit=self.max_inflight, timeout_s=self.timeout_s, max_bytes=self.max_reply_bytes
            )
            self._transports[loop] = t
        return t

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header, chosen explicitly: Basic from the URL's credentials, else the
        Bearer key (none for a keyless local endpoint that was given no key)."""
        if self._basic:
            token = base64.b64encode(f"{self._basic[0]}:{self._basic[1]}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}

    def _redact(self, text: str) -> str:
        """`text` without the key, URL credentials or any Authorization value (a transport error
        may quote the URL; an error body may echo the request's headers)."""
        return redact_secrets(text, self._secrets)

    def redact_completion(self, completion: Completion) -> tuple[Completion, int]:
        """`completion` (a response-cache hit, perhaps written before a form of redaction existed)
        with every configured secret form replaced by `***`, and how many strings changed; a note
        in its `hygiene` says so."""
        if self._secret_pattern is None:
            return completion, 0
        data, n = redact_value(completion.model_dump(mode="json"), self._secret_pattern)
        if not n:
            return completion, 0
        data["hygiene"] = [
            *data.get("hygiene", []),
            f"redacted: {n} string(s) of a cached reply held a configured secret, replaced by *** on read",
        ]
        return Completion.model_validate(data), n

    def backoff_s(self, n: int) -> float:
        """Full-jitter exponential backoff before retry n (0-based), capped at backoff_cap_s."""
        return self._rng.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**n))

    # -------------------------------------------------------------------- one attempt
    async def _post(self, body: bytes, loop: asyncio.AbstractEventLoop | None = None) -> Reply:
        """POST `body` to the endpoint, following redirects (the body re-sent as it is) to the same
        host, except a 303 (refused: it says the answer is elsewhere, to be fetched, and the POST may
        already have been processed); a redirect to another host is refused (fatal) unless
        `follow_cross_host_redirects`: it would send the prompts, and the Authorization header,
        somewhere the config never named."""
        url = self._url
        for _ in range(MAX_REDIRECTS + 1):
            resp = await self._transport(loop).post(url, body)
            location = resp.headers.get("location") if resp.status in REDIRECTS else None
            if not location:
                return resp
            target = urllib.parse.urljoin(url, location)
            if resp.status == 303:  # "See Other": the answer is to be fetched elsewhere, not the POST re-sent
                raise BackboneError(
                    f"HTTP 303 at {self.display_url}/chat/completions (backbone '{self.name}') points to "
                    f"{redact_url(target)} to fetch the answer elsewhere: not an OpenAI-compatible reply, and the "
                    "request may already have been processed, so it is not sent again. Fix: set `base_url` to the "
                    "endpoint that answers chat completions itself",
                    fatal=True,
                )
            here, there = urllib.parse.urlsplit(url), urllib.parse.urlsplit(target)
            same = there.hostname == here.hostname and there.scheme in (here.scheme, "https")
            if not same and not self.follow_cross_host_redirects:
                raise BackboneError(
                    f"HTTP {resp.status} at {self.display_url}/chat/completions (backbone '{self.name}') redirects to "
                    f"another host ({redact_url(f'{there.scheme}://{there.netloc}')}); refused, nothing was sent "
                    "there. Fix: set `base_url` to that address if you trust it, or set "
                    "`backbone.follow_cross_host_redirects=true`",
                    fatal=True,
                )
            url = target
        raise _Retry(f"more than {MAX_REDIRECTS} redirects")

    async def _attempt(self, body: bytes) -> tuple[dict[str, Any], float, bool]:
        """(the reply's JSON, latency, whether it may hold lone surrogates: only a body the standard
        library had to read, because orjson refuses `\\ud800`-style escapes of lone surrogates)."""
        loop = asyncio.get_running_loop()  # once: each `get_running_loop` is a system call (`getpid`) in 3.11
        try:
            async with endpoint_semaphore(self.base_url, self.max_inflight, loop):
                t0 = time.perf_counter()  # latency excludes queueing for the in-flight bound
                # total deadline, beside the client's own
                resp = await self._deadlines_here(loop).run(self._post(body, loop), loop)
                latency = time.perf_counter() - t0
        except TimeoutError:
            raise _Retry(f"timeout after {self.timeout_s:g}s") from None
        except TransportFailure as e:  # connection refused/reset, server closed without reply
            if e.refused:  # nothing accepts connections there
                raise _Retry(f"connection refused ({self._redact(str(e))[:200]})", refused=True) from None
            raise _Retry(self._redact(str(e))[:200]) from None
        status = resp.status
        if 200 <= status < 300:
            unchecked = False
            try:
                data = orjson.loads(resp.body)
            except ValueError:
                try:
                    resp.body.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise _Retry(
                        f"malformed body: not valid UTF-8 (byte 0x{resp.body[e.start]:02x} at offset {e.start})"
                    ) from None
                try:  # orjson refuses lone surrogates (`"\ud800"`) that the stdlib reads; the reply is sanitised later
                    data = json.loads(resp.body)
                    unchecked = True
                except RecursionError:  # orjson stops at 1024 levels; the stdlib at its recursion limit
                    raise _Retry("malformed body: JSON nested too deep to read") from None
                except ValueError:
                    raise _Retry("malformed body: not JSON") from None
            choices = data.get("choices") if isinstance(data, dict) else None
            if not (
                isinstance(choices, list)
                and choices
                and isinstance(choices[0], dict)
                and isinstance(choices[0].get("message"), dict)
            ):
                raise _Retry("malformed body: no choices[0].message")
            finish = choices[0].get("finish_reason")
            if finish is not None and not isinstance(finish, str):
                raise _Retry(f"malformed body: finish_reason is {type(finish).__name__}, not text")
            empty = empty_reply(choices[0]["message"])
            if empty:  # never an answer: retried, and (failing) an infra error that is neither cached nor scored
                raise _Retry(f"empty reply: {empty}")
            return data, latency, unchecked
        text = self._redact(resp.body[:8192].decode("utf-8", "replace"))[:500]  # redacted before it is cut: no half key
        where = f"{self.display_url}/chat/completions (backbone '{self.name}', model '{self.model}')"
        low = text.lower()
        if (status == 429 and any(m in low for m in _QUOTA_MARKERS)) or status == 402:
            raise BackboneError(
                f"HTTP {status} quota exhausted at {where}: {text}. "
                "Fix: top up the account or use another key/endpoint.",
                fatal=True,
            )
        if status in RETRY_STATUS or status >= 500:
            raise _Retry(f"HTTP {status}", retry_after_s(resp.headers))
        if status == 400 and any(m in low for m in _CONTEXT_MARKERS):
            raise BackboneError(
                f"HTTP 400 at {where}: the prompt exceeds the model's context window: {text}",
                fatal=False,
                context_overflow=True,
            )
        fix = _FIX.get(status, "the endpoint refused the request; check the backbone config")
        if status in (401, 403) and self.key_env:
            fix += f" (the key came from ${self.key_env})"
        raise BackboneError(f"HTTP {status} at {where}: {text}. Fix: {fix}.", fatal=True)

    # -------------------------------------------------------------------- public
    async def complete(
        self,
        messages: list[Message],
        *,
        role: str,
        protocol: Protocol | None = None,
        attempt: int = 0,
        **sampling: Any,
    ) -> Completion:
        """One chat completion with retries. `protocol` and `attempt` do not reach the endpoint
        (`attempt` only distinguishes re-samples in the response cache)."""
        body = self.request_bytes(messages, sampling)
        retries: list[RetryEvent] = []
        for n in range(self.max_retries + 1):
            try:
                data, latency, unchecked = await self._attempt(body)
                completion = self._completion(
                    data, messages, role, latency, retries, unchecked, self._bounds(body, sampling)
                )
            except BackboneError as e:
                e.retries = retries
                raise
            except _Retry as r:
                now = time.monotonic()
                if r.refused:
                    self._refused_since = self._refused_since or now
                    if now - self._refused_since > self.refused_window_s:
                        raise BackboneError(
                            f"{self.display_url}/chat/completions (backbone '{self.name}') refused every connection "
                            f"for {now - self._refused_since:.0f}s: the endpoint is down. Fix: start the server, "
                            "or correct `base_url` "
                            "(or the variable named by `base_url_env`); then run the same command again to resume",
                            fatal=True,
                            retries=retries,
                        ) from None
                if n == self.max_retries:  # retries holds one event per re-attempt made
                    raise BackboneError(
                        f"{r.error} from {self.display_url}/chat/completions "
                        f"(backbone '{self.name}', model '{self.model}') "
                        f"after {n + 1} attempts; the endpoint is down or overloaded: check it, lower `max_inflight`, "
                        "or resume later (infra errors are retried on resume)",
                        fatal=False,
                        retries=retries,
                    ) from None
                wait = min(self.backoff_cap_s, r.wait_s) if r.wait_s is not None else self.backoff_s(n)
                retries.append(RetryEvent(attempt=n, error=r.error, wait_s=round(wait, 4)))
                if self.on_retry is not None:
                    self.on_retry(self.display_url, r.error, wait, self.name)
                await asyncio.sleep(wait)
                continue
            self._refused_since = None
            return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def _completion(
        self,
        data: dict[str, Any],
        messages: list[Message],
        role: str,
        latency: float,
        retries: list[RetryEvent],
        unchecked: bool = True,
        bounds: dict[str, int] | None = None,
    ) -> Completion:
        """The response body as a Completion: invalid Unicode replaced first (before anything reads
        or serialises it), then text and reasoning capped at `max_completion_chars`; both recorded
        in `Completion.hygiene`. `unchecked=False`: orjson decoded the body, so it holds no lone
        surrogates and the walk is skipped."""
        try:
            return self._parse(data, messages, role, latency, retries, unchecked, bounds)
        except Exception as e:  # any other malformed 200 body is retried like the ones `_attempt` catches
            raise _Retry(f"malformed body: {type(e).__name__}: {self._redact(str(e))[:160]}") from None

    def _parse(
        self,
        data: dict[str, Any],
        messages: list[Message],
        role: str,
        latency: float,
        retries: list[RetryEvent],
        unchecked: bool,
        bounds: dict[str, int] | None = None,
    ) -> Completion:
        hygiene: list[str] = []
        data, bad = sanitize_unicode(data) if unchecked else (data, 0)
        if bad:
            hygiene.append(f"sanitized: {bad} lone surrogate(s) replaced by U+FFFD")
        data, leaked = redact_value(data, self._secret_pattern)
        if leaked:  # an endpoint or proxy echoed the request's credentials: never stored, but said
            hygiene.append(
                f"redacted: {leaked} string(s) of the reply held a configured secret (API key, URL password or "
                "an encoding of them), replaced by ***"
            )
        choice = data["choices"][0]
        content = content_text(choice["message"].get("content"))
        text = content if isinstance(content, str) else ""
        reasoning = choice["message"].get("reasoning_content")
        cap = self.max_completion_chars
        if cap is not None and len(text) > cap:
            hygiene.append(f"truncated: text of {len(text)} chars cut to max_completion_chars={cap}")
            text = text[:cap]
        if cap is not None and isinstance(reasoning, str) and len(reasoning) > cap:
            hygiene.append(f"truncated: reasoning of {len(reasoning)} chars cut to max_completion_chars={cap}")
            reasoning = reasoning[:cap]
        raw = data.get("usage") if isinstance(data.get("usage"), dict) else None
        calls = native_tool_calls(choice["message"].get("tool_calls"))
        usage = plain_usage(raw, bounds)  # the usual usage object, read at once; any other by the checks below
        if usage is None:
            problem = usage_problem(raw, bounds)
            if problem:
                hygiene.append(f"usage: {problem}; tokens estimated")
            usage = (None if problem else map_usage(raw, bounds, checked=True)) or estimate_usage(
                messages, text + "".join(f"{c.name}{c.arguments}" for c in calls)
            )
            usage, note = usage_parts(usage)
            if note:
                hygiene.append(note)
        return Completion(
            text=text,
            role=role,
            model=str(data.get("model") or self.model),
            finish_reason=choice.get("finish_reason"),
            usage=usage,
            raw_usage=raw,
            retries=retries,
            latency_s=latency,
            tool_calls=calls,
            reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
            hygiene=hygiene,
        )

    async def aclose(self) -> None:
        """Close the HTTP transport of the running loop (others close with their loops)."""
        t = self._transports.pop(asyncio.get_running_loop(), None)
        if t is not None:
            await t.aclose()


def build_openai_backbone(cfg: dict[str, Any], env: Mapping[str, str] = os.environ) -> OpenAIBackbone:
    """Backbone from a `conf/backbone/*.yaml` mapping. `base_url_env` (if set in `env`) overrides
    `base_url`; the key is read from the variable named by `api_key_env` (null → no key, or the
    literal `api_key` such as "EMPTY" for a local vLLM)."""
    name = cfg.get("name", "openai")
    base_url = cfg.get("base_url")
    if cfg.get("base_url_env") and env.get(cfg["base_url_env"]):
        base_url = env[cfg["base_url_env"]]
    if not base_url:
        hint = f" or export {cfg['base_url_env']}" if cfg.get("base_url_env") else ""
        raise ValueError(f"backbone '{name}': no endpoint; set `base_url` in conf/backbone/{name}.yaml{hint}")
    key_env = cfg.get("api_key_env")
    if key_env:
        key = env.get(key_env)
        if not key:
            raise ValueError(
                f"backbone '{name}': the API key variable {key_env} is not set; export {key_env}=<your key> "
                f"(or set api_key_env: null for an endpoint without keys, e.g. a local vLLM)"
            )
    else:
        key = cfg.get("api_key") or "EMPTY"
    opts = {
        k: cfg[k]
        for k in (
            "max_inflight",
            "timeout_s",
            "max_retries",
            "backoff_cap_s",
            "backoff_base_s",
            "refused_window_s",
            "max_completion_chars",
            "max_reply_bytes",
            "follow_cross_host_redirects",
            "transport",
        )
        if cfg.get(k) is not None
    }
    backbone = OpenAIBackbone(
        name=name,
        model=cfg["model"],
        base_url=base_url,
        api_key=key,
        sampling=cfg.get("sampling") or {},
        extra_body=cfg.get("extra_body") or {},
        **opts,
    )
    backbone.key_env = key_env
    return backbone
