"""runners.secrets: every configured secret is found in every encoding an echoing endpoint or
proxy may use (raw, URL-encoded, hex, JSON-escaped, base64/base64url at all three alignments),
with no false alarm on ordinary text."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.secrets import (
    MIN_ENCODED_CHARS,
    credential_secrets,
    redact_known,
    redact_secrets,
    redact_value,
    secret_pattern,
)

KEY_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E)  # what keys and URL passwords are made of
KEYS = st.text(KEY_CHARS, min_size=8, max_size=60)
PREFIXES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=9)


def _pct(data: bytes, upper: bool) -> str:
    return "".join(("%%%02X" if upper else "%%%02x") % b for b in data)


def _json_u(text: str, upper: bool) -> str:
    return "".join(("\\u%04X" if upper else "\\u%04x") % ord(c) for c in text)


def _core(data: bytes, k: int) -> str:
    """The part of the base64 of `data` (after k bytes) that depends on `data` alone."""
    enc = base64.b64encode(bytes(k) + data).decode()
    return enc[(8 * k + 5) // 6 : (8 * (k + len(data))) // 6]


def encodings(prefix: str, key: str) -> dict[str, tuple[str, str]]:
    """name -> (the text an endpoint might echo, the part of it that must not survive)."""
    whole = (prefix + key).encode()
    k = len(prefix.encode()) % 3
    core = _core(key.encode(), k)
    out = {
        "raw": (prefix + key, key),
        "url-upper": (prefix + urllib.parse.quote(key, safe=""), urllib.parse.quote(key, safe="")),
        "url-lower": (
            prefix + re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), urllib.parse.quote(key, safe="")),
            None,
        ),
        "url-every-char": (prefix + _pct(key.encode(), upper=False), _pct(key.encode(), upper=False)),
        "hex-lower": (prefix + key.encode().hex(), key.encode().hex()),
        "hex-upper": (prefix + key.encode().hex().upper(), key.encode().hex().upper()),
        "json-u-lower": (prefix + _json_u(key, upper=False), _json_u(key, upper=False)),
        "json-u-upper": (prefix + _json_u(key, upper=True), _json_u(key, upper=True)),
        "json-dumps": (json.dumps(prefix + key), key),
        "base64": (base64.b64encode(whole).decode(), core),
        "base64url": (base64.urlsafe_b64encode(whole).decode(), core.translate(str.maketrans("+/", "-_"))),
        "base64-url-encoded": (urllib.parse.quote(base64.b64encode(whole).decode(), safe=""), None),
    }
    return {n: (text, must_go if must_go is not None else text) for n, (text, must_go) in out.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=KEYS, prefix=PREFIXES, suffix=PREFIXES)
def test_every_encoding_of_a_random_key_after_any_prefix_is_redacted(key, prefix, suffix):
    pattern = secret_pattern([key])
    for name, (echoed, must_go) in encodings(prefix, key).items():
        text = f"you sent: {echoed}{suffix} ok"
        clean, n = redact_known(text, pattern)
        assert n >= 1 and "***" in clean, name
        if name.startswith("base64"):
            assert len(must_go) < MIN_ENCODED_CHARS or must_go not in clean, name
        else:
            assert must_go not in clean, name
        assert key not in clean, name
        if name.startswith("url"):
            assert key not in urllib.parse.unquote(clean), name
        if name.startswith("json-u"):
            assert key not in clean.encode().decode("unicode_escape", "replace"), name


def test_key_inside_base64_of_bearer_or_assignment_at_every_alignment():
    """The reported cases: base64 of `Bearer <key>` and of `k=<key>` (another alignment than the
    key alone), standard and URL-safe alphabets."""
    key = "sk-proj-0123456789abcdefGHIJ"
    pattern = secret_pattern([key])
    for prefix in ("", "k=", "Bearer ", "x", "xy", "xyz"):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc((prefix + key + "\n").encode()).decode()
            clean, n = redact_known(text, pattern)
            assert n == 1, (prefix, enc)
            assert _core(key.encode(), len(prefix) % 3).translate(str.maketrans("+/", "-_")) not in clean
            assert _core(key.encode(), len(prefix) % 3) not in clean
            assert len(clean.replace("***", "")) <= len(enc(prefix.encode()).decode()) + 4  # only the edges stay


def test_url_password_and_basic_credentials_in_a_decoded_json_value():
    password, user = "pw-s3cret/+=value", "bob"
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    value = {
        "echo": f"Authorization: Basic {basic}",
        "nested": [{"q": urllib.parse.quote(password).lower()}, json.dumps({"p": password}, ensure_ascii=True)],
        password: "as a key too",
    }
    clean, n = redact_value(value, secret_pattern([password, f"{user}:{password}"]))
    dumped = json.dumps(clean)
    assert n == 4 and password not in dumped and basic.rstrip("=") not in dumped
    assert "pw-s3cret" not in urllib.parse.unquote(dumped)


@settings(max_examples=100, deadline=None)
@given(key=KEYS, text=st.text(max_size=200))
def test_text_without_the_key_is_untouched(key, text):
    clean, n = redact_known(text, secret_pattern([key]))
    if key not in text and n:  # a match must really be an encoding of the key
        assert False, (text, clean)
    assert n or clean == text


def test_short_values_and_no_secrets_match_nothing():
    assert secret_pattern([]) is None and secret_pattern(["", "abc"]) is None
    assert redact_secrets("plain words, nothing secret", ["abc"]) == "plain words, nothing secret"


def test_one_pattern_per_set_of_secrets_and_fast_on_long_text():
    import time

    keys = ["sk-" + "Ab9" * 15, "pw-" + "z/+" * 6]
    assert secret_pattern(keys) is secret_pattern(list(reversed(keys)))  # compiled once
    text = "an ordinary reply of a model, with 0123 abcdef %2F and \\u0041 in it. " * 2000  # ~140 kB
    pattern = secret_pattern(keys)
    plain = "an ordinary reply of a model, with some words and numbers 0123 in it. " * 2000
    for t, bound in ((text, 0.1), (plain, 0.02)):  # escapes everywhere, and the usual reply (~1 ms on 2 cores)
        t0 = time.perf_counter()
        for _ in range(5):
            redact_known(t, pattern)
        assert (time.perf_counter() - t0) / 5 < bound


def test_credential_secrets_are_the_key_password_and_userinfo_not_the_user_name():
    assert credential_secrets("sk-abcdef12", ("bob", "pw-9")) == ("sk-abcdef12", "pw-9", "bob:pw-9")
    assert credential_secrets("EMPTY", None) == ()
    assert credential_secrets(None, ("alice", "")) == ("alice:",)
