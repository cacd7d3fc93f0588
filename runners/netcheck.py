"""Fail fast when a data host cannot be reached, instead of a client library's retry cycle.

`huggingface_hub` retries an unreachable Hub five times with backoff (about 25–60 s per file)
before it says it is offline; a loader calls `require_host(url, fix)` first, which tries one TCP
connection with a short timeout and raises `Unreachable` naming the fix at once. The answer is
kept per host for the process, so a sweep of many cells pays for the check once.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from functools import lru_cache

TIMEOUT_S = 3.0


class Unreachable(OSError):
    """The host cannot be reached; the message says what to do instead."""


@lru_cache(maxsize=16)
def _probe(host: str, port: int, timeout: float) -> str | None:
    """None when a TCP connection to host:port opens within `timeout`, else the reason."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return f"{type(e).__name__}: {e}"


def require_host(url: str, fix: str, timeout: float = TIMEOUT_S) -> None:
    """Raise `Unreachable` (with `fix`) unless `url`'s host accepts a connection."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    why = _probe(host, port, timeout)
    if why is not None:
        raise Unreachable(f"{host}:{port} is unreachable from this machine ({why}). {fix}")


def hf_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or "https://huggingface.co"


def hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
