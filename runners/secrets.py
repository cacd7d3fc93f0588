"""Redaction of credentials: every configured secret value (API keys, URL passwords and their
Basic/Bearer/URL encodings) and every credential-shaped string is replaced by `***` before it
reaches a file, the console or an error message. Used by the backbones, the engine and the CLI."""

from __future__ import annotations

import base64
import re
import urllib.parse


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


def secret_forms(secrets: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Every form in which a configured secret can appear in text: the value itself, URL-encoded,
    and base64-encoded (as in a `Basic` Authorization value; padding dropped), longest first so
    that a longer form is replaced before a shorter one inside it. Values under 4 characters are
    not secrets worth the false positives."""
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= 4:
            forms |= {
                secret,
                urllib.parse.quote(secret, safe=""),
                base64.b64encode(secret.encode()).decode().rstrip("="),
            }
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


def redact_secrets(text: str, secrets: tuple[str, ...] | list[str] = ()) -> str:
    """`text` with every credential form replaced by `***`: the given secret values (and their
    base64 and URL-encoded forms), Authorization/api-key header values (Bearer, Basic, token),
    `user:password@` in URLs and `sk-...` keys."""
    if not text:
        return text
    for form in secret_forms(secrets):
        text = text.replace(form, "***")
    text = _AUTH_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}{(m.group(3) + ' ') if m.group(3) else ''}***", text)
    text = _SCHEME_VALUE.sub(lambda m: f"{m.group(1)} ***", text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}***@", text)
    return _OPENAI_KEY.sub("sk-***", text)
