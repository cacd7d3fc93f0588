"""Redaction of credentials: every configured secret value (API keys, URL passwords and their
Basic/Bearer/URL encodings) and every credential-shaped string is replaced by `***` before it
reaches a file, the console or an error message. Used by the backbones, the engine and the CLI."""

from __future__ import annotations

import base64
import functools
import re
import urllib.parse
from typing import Any


def redact_url(url: str) -> str:
    """`url` with any `user:password@` credentials replaced by `***@` (for messages and manifests)."""
    try:
        parts = urllib.parse.urlsplit(url)
        if "@" not in parts.netloc:
            return url
        return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))
    except ValueError:
        return "***"


def split_url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """(`url` without `user:password@`, (user, password) URL-decoded or None)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url, None
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), (
        urllib.parse.unquote(user),
        urllib.parse.unquote(password),
    )


_AUTH_VALUE = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api[-_]key)(\\?[\"']?\s*[:=]\s*\\?[\"']?)(?:(bearer|basic|token)\s+)?[^\s\"'\\,}\]]+"
)
_SCHEME_VALUE = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}")
_URL_USERINFO = re.compile(
    r"(?i)\b([a-z][a-z0-9+.-]*(?:\\)?:(?:\\)?//)[^/@\s\"'<>]+@"
)  # also Hydra's escaped `http\://`
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


MIN_SECRET_CHARS = 4  # shorter values are not secrets worth the false positives
MIN_ENCODED_CHARS = 6  # a base64 core shorter than this would match ordinary text


def _hex_ci(digits: str) -> str:
    """Hex digits as a pattern that matches them in any case."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in digits)


def _char_pattern(ch: str) -> str:
    """One character of a textual secret form as it may appear in text: itself, URL-encoded
    (`%xx` per UTF-8 byte, hex digits in any case; `+` for a space), or JSON-escaped (`\\uXXXX`,
    a surrogate pair above U+FFFF, any case; the short escapes of `/`, `"` and the backslash)."""
    alts = [re.escape(ch), "".join("%" + _hex_ci(f"{b:02x}") for b in ch.encode("utf-8", "surrogatepass"))]
    code = ord(ch)
    units = [code] if code < 0x10000 else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    alts.append("".join(r"\\u" + _hex_ci(f"{u:04x}") for u in units))
    if ch == " ":
        alts.append(r"\+")
    elif ch in '/"\\':  # JSON's short escapes
        alts.append(re.escape("\\" + ch))
    return "(?:" + "|".join(alts) + ")"


def _base64_cores(data: bytes) -> set[str]:
    """The parts of the base64 (and base64url) encoding of `data` that do not depend on what
    surrounds it, at each of the three alignments (`data` preceded by 0, 1 or 2 bytes modulo 3:
    the key inside `Bearer <key>` or `k=<key>` is encoded at another alignment than the key
    alone). Character i of an encoding covers bits [6i, 6i+6); a character is stable when all
    its bits are bits of `data`."""
    cores: set[str] = set()
    for k in range(3):
        enc = base64.b64encode(bytes(k) + data).decode()
        core = enc[(8 * k + 5) // 6 : (8 * (k + len(data))) // 6]
        if len(core) >= MIN_ENCODED_CHARS:
            cores |= {core, core.translate(_URLSAFE)}
    return cores


_URLSAFE = str.maketrans("+/", "-_")


@functools.lru_cache(maxsize=256)
def _secret_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    alts: set[str] = set()
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET_CHARS:
            continue
        data = secret.encode("utf-8", "surrogatepass")
        alts.add("".join(_char_pattern(c) for c in secret))  # raw, URL-encoded, JSON-escaped, or any mix
        alts.add(_hex_ci(data.hex()))
        alts |= {"".join(_char_pattern(c) for c in core) for core in _base64_cores(data)}  # also URL-encoded
    if not alts:
        return None
    return re.compile("|".join(sorted(alts, key=lambda a: (-len(a), a))))


def secret_pattern(secrets: tuple[str, ...] | list[str]) -> re.Pattern[str] | None:
    """One compiled pattern (built once per set of secrets) that matches every form in which a
    configured secret (an API key, a URL password, Basic `user:password`) can appear in text:
    the value itself; URL-encoded (`%xx` in any case, also partly encoded); JSON-escaped
    (`\\u` escapes in any case); hex (any case); base64 and base64url at all three alignments
    (the stable inner part of the encoding: one character at either end may also carry bits of
    the neighbouring text and stays). None when there is nothing to match. Values under
    `MIN_SECRET_CHARS` characters are not matched."""
    return _secret_pattern(tuple(sorted({s for s in secrets if s})))


def redact_known(text: str, pattern: re.Pattern[str] | None) -> tuple[str, int]:
    """`text` with every match of `pattern` (`secret_pattern`) replaced by `***`, and the count."""
    if pattern is None or not text:
        return text, 0
    return pattern.subn("***", text)


def redact_value(value: Any, pattern: re.Pattern[str] | None) -> tuple[Any, int]:
    """`value` (a decoded JSON body, or a dumped Completion) with every configured secret form
    (`runners.secrets.secret_pattern`) replaced by `***` in every string (keys included), and how
    many strings changed."""
    if pattern is None:
        return value, 0
    if isinstance(value, str):
        out, n = redact_known(value, pattern)
        return out, int(n > 0)
    if isinstance(value, dict):
        total, out_d = 0, {}
        for k, v in value.items():
            k2, a = redact_value(k, pattern)
            v2, b = redact_value(v, pattern)
            out_d[k2] = v2
            total += a + b
        return (out_d, total) if total else (value, 0)
    if isinstance(value, list):
        items = [redact_value(v, pattern) for v in value]
        total = sum(n for _, n in items)
        return ([v for v, _ in items], total) if total else (value, 0)
    return value, 0


def redact_secrets(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """`text` with every credential form replaced by `***`: the given secret values (and their
    base64 and URL-encoded forms), Authorization/api-key header values (Bearer, Basic, token),
    `user:password@` in URLs and `sk-...` keys."""
    if not text:
        return text
    text, _ = redact_known(text, secret_pattern(secrets))
    text = _AUTH_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{(m.group(3) + ' ') if m.group(3) else ''}***", text)
    text = _SCHEME_VALUE.sub(lambda m: f"{m.group(1)} ***", text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}***@", text)
    return _OPENAI_KEY.sub("sk-***", text)
