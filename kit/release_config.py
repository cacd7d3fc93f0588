"""The PoS release's run configs (`configs/<benchmark>/<variant>.yaml`), read at run time from the
pinned release (runners/upstream.py), and the request settings they give each role.

The release sends every model call through `ModelCaller` (`main.py`): `temperature`, `max_tokens`
and `extra_body` of that role's config block, nothing else (no `top_p`). The roles and where their
block sits in a run config:

| role       | block                                                              | who sends it here             |
|------------|--------------------------------------------------------------------|-------------------------------|
| `agent`    | the top level (`raw.yaml` for Raw, `pos*.yaml` for PoS)            | every method's policy         |
| `state`    | `context.model`                                                    | PoS belief model, Belief Text |
| `audit`    | `context.sentinel.consistency_model`, else `context.sentinel.model` | PoS consistency audits        |
| `progress` | `context.sentinel.progress_model`, else `context.sentinel.model`    | PoS progress labels           |
| `provider` | `clindiag_provider_model`                                          | ClinDiag information provider |
| `judge`    | `clindiag_judge_model`                                             | ClinDiag judge                |

(the lane lookup is `sentinel_model_config` of `main.py`). Of `extra_body` only `response_format`
is taken: it is an OpenAI request field and the release's client puts `extra_body` into the
request body, so `response_format: {type: json_object}` reaches the endpoint exactly as there;
`enable_thinking: false` is the backbone's (conf/backbone/*.yaml `extra_body`), since it is an
endpoint-specific field. Every returned setting carries `top_p: None`, which removes the backbone
config's `top_p` from the request (the release sends none). The token limit is sent under the
backbone's own name for it (runners/backbones/openai.py).

When the pinned file is unavailable the caller's own settings (the project's values, conf/method)
are used, with `top_p` likewise removed, and the manifest lists the role as paraphrased."""

from __future__ import annotations

from typing import Any

import yaml

from runners.upstream import TextSources, UpstreamFile, file_text

CONFIG_DIRS = {"alfworld": "alfworld", "loca": "loca", "rca": "rca100", "clindiag": "clindiag"}
"""Task kind → the release's `configs/` folder."""
VARIANTS = ("raw", "pos", "pos_no_consistency", "pos_no_trapping")
"""The release's run configs per benchmark: Raw (every baseline's policy) and PoS with its two ablations."""
ROLES = ("agent", "state", "audit", "progress", "provider", "judge")
_BLOCKS: dict[str, tuple[tuple[str, ...], ...]] = {
    "agent": ((),),
    "state": (("context", "model"),),
    "audit": (("context", "sentinel", "consistency_model"), ("context", "sentinel", "model")),
    "progress": (("context", "sentinel", "progress_model"), ("context", "sentinel", "model")),
    "provider": (("clindiag_provider_model",),),
    "judge": (("clindiag_judge_model",),),
}
NOT_SENT = {"top_p": None}
"""Per-call settings that remove a backbone-config field from the request (a null is not sent)."""


def config_file(kind: str, variant: str) -> UpstreamFile:
    if kind not in CONFIG_DIRS:
        raise KeyError(f"no PoS release run config for task kind {kind!r}; kinds: {', '.join(CONFIG_DIRS)}")
    if variant not in VARIANTS:
        raise KeyError(f"unknown PoS release run config {variant!r}; use one of {', '.join(VARIANTS)}")
    return UpstreamFile("PoS", f"configs/{CONFIG_DIRS[kind]}/{variant}.yaml")


def run_config(kind: str, variant: str) -> dict[str, Any] | None:
    """The parsed run config, or None when the pinned file is unavailable."""
    text = file_text(config_file(kind, variant))
    return None if text is None else yaml.safe_load(text)


def block(config: dict[str, Any], role: str) -> tuple[dict[str, Any] | None, str]:
    """(the role's config block, its dotted path in the file) — (None, first path tried) when absent."""
    for path in _BLOCKS[role]:
        node: Any = config
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and "temperature" in node and "max_tokens" in node:
            return node, ".".join(path) or "<top level>"
    return None, ".".join(_BLOCKS[role][0]) or "<top level>"


def settings_of(node: dict[str, Any]) -> dict[str, Any]:
    """What the release's `ModelCaller` sends for a block, as per-call settings."""
    out: dict[str, Any] = {"temperature": node["temperature"], "max_tokens": node["max_tokens"]}
    response_format = (node.get("extra_body") or {}).get("response_format")
    if response_format is not None:
        out["response_format"] = response_format
    return {**out, **NOT_SENT}


def request_settings(
    kind: str, variant: str, role: str, sources: TextSources, fallback: dict[str, Any]
) -> dict[str, Any]:
    """The role's request settings from the release's run config, recorded in `sources` under
    `pos.release.run_config.<kind>.<variant>.<role>` (with the values); `fallback` (top_p removed)
    when the file or the block is unavailable."""
    f = config_file(kind, variant)
    config = run_config(kind, variant)
    node, where = block(config if config is not None else {}, role)
    value = None if node is None else settings_of(node)
    key = f"pos.release.run_config.{kind}.{variant}.{role}"
    chosen = sources.use(key, f, value, {**fallback, **NOT_SENT}, symbol=str(where))
    sources.annotate(
        key,
        settings={k: v for k, v in chosen.items() if v is not None},
        not_sent=sorted(k for k, v in chosen.items() if v is None),
    )
    return chosen


def raw_sampling(kind: str, sources: TextSources, fallback: dict[str, Any] | None = None) -> dict[str, Any]:
    """The policy's request settings of Raw (`raw.yaml`, role `agent`) on a PoS benchmark, which
    PoS's baselines share (docs/pos-baselines.md §0); `{}` on other benchmarks (the backbone's)."""
    if kind not in CONFIG_DIRS:
        return {}
    return request_settings(kind, "raw", "agent", sources, dict(fallback or {}))


def record_raw(sources: TextSources, kinds: tuple[str, ...] | None) -> None:
    """Record (manifest) Raw's policy settings for each PoS benchmark kind of the cell."""
    for kind in CONFIG_DIRS:
        if kinds is None or kind in kinds:
            raw_sampling(kind, sources)
