"""Before any episode: is the key accepted and is the model served? One cheap check per distinct
(endpoint, model, key) of the sweep's endpoint backbones (`check_access`, after the TCP
preflight of runners.run.preflight).

1. `GET <base_url>/models` with the backbone's credentials. 401/403: the key is refused. 200
   listing the model: done (nothing is spent).
2. Otherwise (the route is not offered, or the list does not name the model: some providers list
   other spellings) one chat request of one output token (`max_tokens: 1`, in the backbone's own
   request shape; a fraction of a cent on a paid endpoint, not counted by runner.budget_usd).
   401/403: the key is refused; 404, or a 400 that says the model does not exist: the model is
   not served. Anything else (a 429, a 5xx, a timeout) is left to the run's own retries.

A refusal is a `FatalRunError` naming each failing backbone and its fix (the key's variable, the
model name, the models the endpoint lists), raised before any cell is opened: nothing is
written. `runner.check_access=false` skips the check (e.g. an endpoint that bills each request).
Managed backbones (their server starts on the first call) and the scripted one are not checked.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

MODEL_MISSING = ("does not exist", "not found", "model_not_found", "unknown model", "no such model", "invalid model")
LISTED = 20  # models of the endpoint's list named in a refusal
READ_LIMIT = 16 << 20  # the largest check reply read (a provider's list of models is ~1 MB); a larger one: no reply


async def _request(
    method: str, url: str, headers: dict[str, str], body: bytes | None, timeout_s: float
) -> tuple[int, bytes] | None:
    """(status, body) of one request (`method` GET: `body` None; POST), over the harness's own
    HTTP client (runners/backbones/h1.py: no second client library is loaded for one check);
    None when it could not be made or read (left to the run). Redirects are not followed."""
    from runners.backbones.h1 import H1Transport
    from runners.backbones.openai import TransportFailure

    t = H1Transport(headers=headers, limit=1, timeout_s=timeout_s, max_bytes=READ_LIMIT)
    try:
        async with asyncio.timeout(timeout_s):
            r = await (t.get(url) if method == "GET" else t.post(url, body or b""))
        return r.status, r.body
    except (TransportFailure, TimeoutError, OSError, ValueError):
        return None
    finally:
        await t.aclose()


def _listed(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body)
        items = data.get("data") if isinstance(data, dict) else None
        return (
            [str(m.get("id")) for m in items if isinstance(m, dict) and m.get("id")]
            if isinstance(items, list)
            else None
        )
    except (ValueError, UnicodeDecodeError):
        return None


async def check_backbone(b: Any, key_env: str | None, timeout_s: float = 20.0) -> str | None:
    """Why backbone `b` (an OpenAIBackbone) cannot work, or None."""
    from runners.secrets import redact_secrets

    headers = {"Content-Type": "application/json", **b.auth_headers()}
    where = f"backbone '{b.name}' ({b.display_url}, model '{b.model}')"
    key_fix = (
        f"Fix: export {key_env}=<a valid key for this endpoint>"
        if key_env
        else "Fix: give the endpoint's key (api_key_env names the variable that holds it)"
    )

    def said(body: bytes) -> str:
        return redact_secrets(body[:8192].decode("utf-8", "replace"), b._secrets)[:300].strip()  # redacted, then cut

    listed: list[str] | None = None
    got = await _request("GET", f"{b.base_url}/models", headers, None, timeout_s)
    if got is not None:
        status, body = got
        if status in (401, 403):
            return f"{where}: the endpoint refused the key (HTTP {status} on GET /models: {said(body)}). {key_fix}"
        if status == 200:
            listed = _listed(body)
            if listed is not None and b.model in listed:
                return None
    probe = b.request_body([{"role": "user", "content": "ping"}], {"max_tokens": 1})
    got = await _request("POST", f"{b.base_url}/chat/completions", headers, json.dumps(probe).encode(), timeout_s)
    if got is None:
        return None
    status, body = got
    if status in (401, 403):
        return f"{where}: the endpoint refused the key (HTTP {status}: {said(body)}). {key_fix}"
    text = said(body)
    if status == 404 or (
        status in (400, 422) and "model" in text.lower() and any(m in text.lower() for m in MODEL_MISSING)
    ):
        names = (
            f"; the endpoint lists: {', '.join(listed[:LISTED])}"
            + (f" (+{len(listed) - LISTED} more)" if len(listed) > LISTED else "")
            if listed
            else ""
        )
        return (
            f"{where}: the endpoint does not serve this model (HTTP {status}: {text}). "
            f"Fix: set backbone.model=<a model it serves>{names}"
        )
    return None


async def check_access(pool: Any, enabled: bool = True, timeout_s: float = 20.0) -> None:
    """Check every distinct (endpoint, model, key) of `pool`'s endpoint backbones at once; raise
    `runners.config.FatalRunError` listing every refusal with its fix. `enabled`:
    `runner.check_access` (false: no check)."""
    from runners.config import FatalRunError

    if not enabled:
        return

    seen: dict[tuple[str, str, str], tuple[Any, str | None]] = {}
    for key, b in pool.built():
        if getattr(b, "managed", False) or not hasattr(b, "auth_headers") or not hasattr(b, "request_body"):
            continue
        cfg = json.loads(key)
        ident = (b.base_url, b.model, json.dumps(b.auth_headers(), sort_keys=True))
        seen.setdefault(ident, (b, cfg.get("api_key_env")))
    if not seen:
        return
    found = await asyncio.gather(*(check_backbone(b, env, timeout_s) for b, env in seen.values()))
    problems = [p for p in found if p]
    if problems:
        raise FatalRunError(
            "the endpoint refused before any work: "
            + " | ".join(problems)
            + ". Nothing was run and nothing was written. (runner.check_access=false skips this check.)"
        )
