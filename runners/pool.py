"""The sweep's backbones: one object per distinct backbone config for the whole sweep
(`BackbonePool`: shared in-flight bounds and response cache), the wrappers an episode's backbone
gets (`Resampled`, `InFlight`, runners.cache.CachedBackbone) and the endpoints' preflight check."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from runners.api import Backbone
from runners.backbones.forwarding import Forwarding
from runners.config import BackboneCfg, CellConfig, ConfigError, FatalRunError

if TYPE_CHECKING:
    from runners.cache import ResponseCache


class BackbonePool:
    """One backbone object per distinct config for the whole sweep, so per-endpoint in-flight
    bounds and the response cache are shared across cells."""

    def __init__(self, cache_path: Path | None) -> None:
        self._by_key: dict[str, Backbone] = {}
        self.cache: ResponseCache | None = None
        self.cache_path = cache_path

    def get(self, cfg: BackboneCfg) -> Backbone:
        """The shared backbone of `cfg`; a missing key variable or a bad option is a ConfigError."""
        key = cfg.model_dump_json()
        if key not in self._by_key:
            try:
                if cfg.kind == "scripted":
                    from runners.backbones.scripted import ScriptedBackbone

                    self._by_key[key] = ScriptedBackbone(name=cfg.name, model=cfg.model, **cfg.scripted)
                elif (
                    cfg.kind == "managed"
                ):  # a local server the harness starts and stops (runners/backbones/managed.py)
                    from runners.backbones.managed import ManagedBackbone

                    self._by_key[key] = ManagedBackbone(cfg.model_dump())
                else:
                    from runners.backbones.openai import build_openai_backbone

                    self._by_key[key] = build_openai_backbone(cfg.model_dump())
            except (ValueError, TypeError) as e:
                raise ConfigError(f"backbone '{cfg.name}' cannot be built: {e}") from None
        return self._by_key[key]

    def prepare(self, cells: list[CellConfig]) -> None:
        """Build every backbone the cells use (agent and role backbones) before any episode runs,
        so a missing API key variable fails the sweep up front, not in the middle of a cell."""
        for c in cells:
            self.get(c.backbone)
            for role, b in c.roles.items():
                if b is None:
                    continue
                try:
                    self.get(b)
                except ConfigError as e:
                    users = [r for r, o in c.roles.items() if o is not None and o.name == b.name]
                    where = "; ".join(f"{r}: {c.roles.origin.get(r, '')}" for r in users)
                    fix = " ".join(f"roles.{r}=agent" for r in users)
                    raise ConfigError(
                        f"{e} — it serves role(s) {', '.join(users)} of cell {c.cell_name} ({where}); "
                        f"set the variable, or run them on the agent's backbone with {fix}"
                    ) from None
        if self.cache_path is not None and any(
            b.kind != "scripted" for c in cells for b in (c.backbone, *(r for _, r in c.roles.items())) if b
        ):
            self.open_cache()

    def open_cache(self) -> None:
        """Open the response cache before any episode runs: an unreadable file is an error with the fix."""
        if self.cache is not None or self.cache_path is None:
            return
        from runners.cache import ResponseCache

        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache = ResponseCache(self.cache_path)
        except Exception as e:  # sqlite3 / OS errors, or the cache's own RuntimeError naming the fix
            raise FatalRunError(
                f"the response cache {self.cache_path} cannot be used ({type(e).__name__}: {e}). Fix: move the file "
                "away to start an empty cache, point runner.cache_path at another file, or set runner.cache=false"
            ) from None

    def for_episode(
        self, cfg: BackboneCfg, trial: int, seed: int = 0, fresh: bool = False, guard: Any = None
    ) -> Backbone:
        """The backbone one episode uses: cached per (trial, run seed `runner.seed`) for endpoints;
        `fresh` (runner.fresh=true) turns cache reads off (every call re-sampled, answers still written).
        `guard`: the budget's ledger (the Scheduler: runners.budget.BudgetGuard), under the cache: hits stay free."""
        inner = self.get(cfg)
        if guard is not None:
            from runners.budget import BudgetGuard

            inner = BudgetGuard(inner, guard)
        if cfg.kind == "scripted" or self.cache_path is None:
            return inner
        from runners.cache import CachedBackbone

        if self.cache is None:
            self.open_cache()
        assert self.cache is not None  # open_cache raised otherwise
        return CachedBackbone(inner, self.cache, trial, seed, read=not fresh)

    def built(self) -> list[tuple[str, Backbone]]:
        """(config JSON, backbone) of every backbone built so far."""
        return list(self._by_key.items())

    def endpoints(self) -> dict[str, list[str]]:
        """base_url (as the client sees it, no credentials) → names of the backbones that call it."""
        out: dict[str, list[str]] = {}
        for b in self._by_key.values():
            if getattr(b, "base_url", None) and not getattr(
                b, "managed", False
            ):  # a managed server starts later, itself
                out.setdefault(getattr(b, "base_url"), []).append(b.name)
        return out

    def secrets(self) -> tuple[str, ...]:
        """Every configured secret value of the sweep's backbones (keys, URL passwords), for redaction."""
        return tuple(
            x
            for b in self._by_key.values()
            for x in (getattr(b, "_secrets", None) or getattr(getattr(b, "inner", None), "_secrets", ()) or ())
        )

    def set_on_retry(self, callback: Callable[..., Any]) -> None:
        """Report every backbone retry to `callback(url, error, wait_s, name)` (the live display)."""
        for b in self._by_key.values():
            if hasattr(b, "on_retry"):
                b.on_retry = callback

    async def aclose(self) -> None:
        for b in self._by_key.values():
            await b.aclose()
        if self.cache is not None:
            await asyncio.to_thread(self.cache.close)  # commits the last batch (bounded) off the loop
            self.cache = None


RESAMPLE_STRIDE = 1_000_000
"""Attempt offset per fresh-sample generation: far above any re-ask count within one episode."""


class Resampled(Forwarding):
    """`inner` with every call's sample index moved to generation `n`: the response cache and the
    scripted backbone then draw afresh, so a rerun of a case that ended in a CaseError does not
    replay the replies that caused it (upstream PoS reruns such a case from scratch)."""

    def __init__(self, inner: Backbone, n: int) -> None:
        super().__init__(inner)
        self.n = n

    def sample_index(self, attempt: int) -> int:
        return attempt + self.n * RESAMPLE_STRIDE

    def bind(
        self, scope: Any
    ) -> Backbone:  # the scripted backbone answers from the episode's oracle: keep that, resampled
        return Resampled(self.inner.bind(scope), self.n)


class _Counting:
    """`InFlight`'s context around each call: the display's count of calls in flight, up while the call
    runs. A class, not a generator context manager (`contextlib.contextmanager`): ~6 Python calls less
    on every model call's path. It holds no state of a call, so one serves every call at once."""

    __slots__ = ("progress",)

    def __init__(self, progress: Any) -> None:
        self.progress = progress

    def __enter__(self) -> None:
        self.progress.calls_in_flight += 1

    def __exit__(self, *exc: object) -> None:
        self.progress.calls_in_flight -= 1


class InFlight(Forwarding):
    """`inner` counting its calls in flight on `progress.calls_in_flight` (the plain display's
    heartbeat shows it: a slow model is visibly working before any call finishes)."""

    def __init__(self, inner: Backbone, progress: Any) -> None:
        super().__init__(inner)
        self.progress = progress
        self._counting = _Counting(progress)

    def around_call(self) -> "_Counting":
        return self._counting

    def bind(self, scope: Any) -> Backbone:
        return InFlight(self.inner.bind(scope), self.progress)


async def preflight(pool: BackbonePool, window_s: float) -> None:
    """Before any episode: every endpoint must accept a TCP connection within `window_s` seconds
    (retried every 0.25 s, all endpoints at once); otherwise a FatalRunError names each dead URL
    and the fix. `window_s=0` skips the check."""
    import time
    import urllib.parse

    from runners.secrets import redact_url

    if window_s <= 0:
        return

    async def check(url: str) -> str | None:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or (443 if parts.scheme == "https" else 80)
        deadline = time.monotonic() + window_s
        last = "no attempt"
        while True:
            try:
                async with asyncio.timeout(max(0.1, min(2.0, deadline - time.monotonic()))):
                    _, writer = await asyncio.open_connection(host, port)
                writer.close()
                return None
            except ConnectionRefusedError:
                last = "connection refused"
            except (OSError, TimeoutError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            if time.monotonic() + 0.25 > deadline:
                return last
            await asyncio.sleep(0.25)

    urls = pool.endpoints()
    results = await asyncio.gather(*(check(u) for u in urls))
    dead = [(u, why) for u, why in zip(urls, results) if why]
    if dead:
        lines = "; ".join(
            f"{redact_url(u)} (backbone {', '.join(urls[u])}): {why} for {window_s:g}s" for u, why in dead
        )
        raise FatalRunError(
            f"endpoint not reachable before the sweep started: {lines}. Nothing was run. Fix: start the server "
            "or correct `base_url` (or the variable named by `base_url_env`); runner.preflight_s sets the wait"
        )
