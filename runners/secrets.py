"""Redaction of credentials: every configured secret value (API keys, URL passwords and their
Basic/Bearer/URL encodings) and every credential-shaped string is replaced by `***` before it
reaches a file, the console or an error message. Used by the backbones, the engine and the CLI."""

from __future__ import annotations

import base64
import bisect
import functools
import heapq
import re
import urllib.parse
from typing import Any, Iterator


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


def credential_secrets(key: str | None, creds: tuple[str, str] | None) -> tuple[str, ...]:
    """The secrets of a configured key and of a URL's (user, password) (`split_url_credentials`):
    the key (not the placeholder `EMPTY`), the password and `user:password`. The user name alone is
    no secret and may be an ordinary word of a reply."""
    found = (key if key and key != "EMPTY" else "", *((creds[1], f"{creds[0]}:{creds[1]}") if creds else ()))
    return tuple(x for x in found if x)


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
    """One character of a secret as it may appear in text: itself, URL-encoded (`%xx` per UTF-8
    byte, any case) or JSON-escaped (`\\uXXXX` in any case, the short escapes)."""
    alts = [re.escape(ch), "".join("%" + _hex_ci(f"{b:02x}") for b in ch.encode("utf-8", "surrogatepass"))]
    alts.append(r"\\u" + _hex_ci(f"{ord(ch):04x}"))
    if ch in '/"\\':
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
# The escapes that text may carry a secret's characters in: URL `%xx`, and JSON `\uXXXX` (hex digits
# in any case) and JSON's short escapes of `/`, `"` and the backslash (a backslash before a `\u`
# escape is read as text, so `\\u0073` finds the `s` too). Each starts with a literal character,
# which the regular expression engine scans for quickly.
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_JSON = re.compile(r'\\(?:u([0-9A-Fa-f]{4})|([/"])|(\\)(?!u[0-9A-Fa-f]{4}))')


def _decoded(text: str) -> tuple[str, list[int], list[int], list[int]] | None:
    """`text` with its escapes decoded (a `%xx` as the character of that byte value), and the map
    back: the decoded text's segments as (decoded start, original start, original length of an
    escape or 0 for a run of plain text). None when `text` holds no escape."""
    pct, js = "%" in text, "\\" in text
    if not (pct or js):
        return None
    parts: list[str] = []
    dec: list[int] = []
    orig: list[int] = []
    esc: list[int] = []
    pos = npos = 0
    found = heapq.merge(
        _PCT.finditer(text) if pct else (), _JSON.finditer(text) if js else (), key=lambda m: m.start()
    )  # never overlapping: a `%xx` holds no backslash, a JSON escape no `%`
    for m in found:
        start, end = m.span()
        if start > pos:
            parts.append(text[pos:start])
            dec.append(npos)
            orig.append(pos)
            esc.append(0)
            npos += start - pos
        code, short = m.group(1), m.group(m.lastindex or 1)
        parts.append(chr(int(code, 16)) if code else short)
        dec.append(npos)
        orig.append(start)
        esc.append(end - start)
        npos += 1
        pos = end
    if not dec:
        return None
    if pos < len(text):
        parts.append(text[pos:])
        dec.append(npos)
        orig.append(pos)
        esc.append(0)
    return "".join(parts), dec, orig, esc


def _finds(hay: str, needle: str) -> Iterator[int]:
    i = hay.find(needle)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1)


class SecretMatcher:
    """Finds every configured secret in text, in every form `secret_pattern` lists. Literal
    searches (`str.find`), not one large regular expression: the text's escapes are decoded once
    (mapped back to the original positions), hex is searched in the lower-cased text, base64
    parts as they are; a 100 kB reply without secrets costs well under a millisecond."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        plain: set[str] = set()
        hexes: set[str] = set()
        cores: set[str] = set()
        for secret in secrets:
            data = secret.encode("utf-8", "surrogatepass")
            plain |= {secret, data.decode("latin-1")}  # `%xx` escapes decode byte by byte
            hexes.add(data.hex())
            cores |= _base64_cores(data)
        self.plain, self.hexes, self.cores = sorted(plain), sorted(hexes), sorted(cores)
        # A secret holding `%` or a backslash is ambiguous once decoded (its own `%00` reads as an
        # escape): those few are also matched character by character, in every reading.
        odd = [x for x in secrets if "%" in x or "\\" in x]
        self.slow = re.compile("|".join("".join(_char_pattern(c) for c in x) for x in odd)) if odd else None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every form of a secret in `text`, overlapping ones merged."""
        found: list[tuple[int, int]] = []
        for needle in self.plain + self.cores:
            found += [(i, i + len(needle)) for i in _finds(text, needle)]
        if self.hexes:
            low = text.lower() if text.isascii() else text.translate(_HEX_LOWER)  # same length, hex in one case
            for needle in self.hexes:
                found += [(i, i + len(needle)) for i in _finds(low, needle)]
        decoded = _decoded(text)
        if decoded is not None:  # URL-encoded, JSON-escaped, or a mix with plain characters
            found += self._decoded_spans(text, decoded)
            if self.slow is not None:
                found += [m.span() for m in self.slow.finditer(text)]
        if not found:
            return []
        found.sort()
        merged = [found[0]]
        for a, b in found[1:]:
            if a < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        return merged

    def _decoded_spans(self, text: str, decoded: tuple[str, list[int], list[int], list[int]]) -> list[tuple[int, int]]:
        norm, dec, orig, esc = decoded
        needles = self.plain + self.cores
        out = [
            (self._back(i, dec, orig, esc, False), self._back(i + len(needle) - 1, dec, orig, esc, True))
            for needle in needles
            for i in _finds(norm, needle)
        ]
        # An escape's first characters may be text: `%` + a key beginning `00…` reads as the escape
        # `%00` followed by the rest. Where a character inside an escape could begin a form, the text
        # from there is decoded again on its own.
        first = {n[0] for n in needles} | {"%", "\\"}
        width = 6 * max(len(n) for n in needles) + 6  # a character's longest escape is `\\uXXXX`
        for k, p in enumerate(orig):
            for q in range(p + 1, p + esc[k]):  # a form may begin anywhere inside the escape
                if text[q] not in first:
                    continue
                window = text[q : q + width]
                again = _decoded(window)
                for needle in needles:
                    if again is None:
                        if window.startswith(needle):
                            out.append((q, q + len(needle)))
                    elif again[0].startswith(needle):
                        out.append((q, q + self._back(len(needle) - 1, again[1], again[2], again[3], True)))
        return out

    @staticmethod
    def _back(i: int, dec: list[int], orig: list[int], esc: list[int], end: bool) -> int:
        """Decoded position `i` in the original text (its start, or with `end` just after it)."""
        k = bisect.bisect_right(dec, i) - 1
        if esc[k]:
            return orig[k] + (esc[k] if end else 0)
        return orig[k] + (i - dec[k]) + (1 if end else 0)

    def subn(self, repl: str, text: str) -> tuple[str, int]:
        """`text` with every form of a secret replaced by `repl`, and how many were."""
        spans = self.spans(text)
        if not spans:
            return text, 0
        out, pos = [], 0
        for a, b in spans:
            out += [text[pos:a], repl]
            pos = b
        out.append(text[pos:])
        return "".join(out), len(spans)


_HEX_LOWER = str.maketrans("ABCDEF", "abcdef")


@functools.lru_cache(maxsize=256)
def _secret_pattern(secrets: tuple[str, ...]) -> SecretMatcher | None:
    kept = tuple(x for x in secrets if len(x) >= MIN_SECRET_CHARS)
    return SecretMatcher(kept) if kept else None


def secret_pattern(secrets: tuple[str, ...] | list[str]) -> SecretMatcher | None:
    """The matcher (built once per set of secrets) of every form in which a configured secret
    (an API key, a URL password, Basic `user:password`) can appear in text: the value itself;
    URL-encoded (`%xx` in any case, also partly encoded); JSON-escaped (`\\u` escapes in any case,
    and the short escapes); hex (any case); base64 and base64url at all three alignments (the
    stable inner part of the encoding: one character at either end may also carry bits of the
    neighbouring text and stays), also URL-encoded. None when there is nothing to match. Values
    under `MIN_SECRET_CHARS` characters are not matched."""
    return _secret_pattern(tuple(sorted({s for s in secrets if s})))


def redact_known(text: str, pattern: SecretMatcher | None) -> tuple[str, int]:
    """`text` with every form of a secret (`secret_pattern`) replaced by `***`, and the count."""
    if pattern is None or not text:
        return text, 0
    return pattern.subn("***", text)


def redact_value(value: Any, pattern: SecretMatcher | None) -> tuple[Any, int]:
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
