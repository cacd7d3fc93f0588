"""Settings every PoS-comparison baseline shares (docs/pos-baselines.md §0), with per-kind
overrides: one method YAML serves every benchmark, `kind_overrides` patches it for the task's
`TaskView.kind` — the same convention as conf/method/pos.yaml."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from kit.overrides import KindOverrides


class BaselineConfig(KindOverrides):
    model_config = {"extra": "forbid"}

    max_resamples: int = Field(
        2, ge=0, description="policy re-samples of an unusable reply (Raw max_json_retries 2, §1)"
    )
    aux_max_json_retries: int = Field(
        1, ge=0, description="[harness choice] re-asks of an auxiliary call whose JSON is unusable"
    )
    aux_sampling: dict[str, Any] = Field(
        default_factory=dict,
        description="sampling overrides of auxiliary calls (§0.2: the policy's settings by default)",
    )
    carry_across_requests: bool = Field(
        True, description="[harness choice] multi-request tasks keep earlier requests' history, as Full Context does"
    )
    context_window_tokens: int | None = Field(
        None, ge=1, description="§0.4: a policy prompt above this is a context_overflow (no call); null = no check"
    )
    max_lookups_per_step: int = Field(
        1, ge=0, description="[harness choice] glimpse/retrieval-only replies re-asked within one step"
    )
    policy_prompt: Literal["release", "project"] = Field(
        "release",
        description="§0.1: on the PoS benchmarks the policy speaks the PoS release's ReAct interface "
        "(react_system_prompt, build_prompt with the baseline's context as `Previous steps:`, the JSON action "
        "reply, the release's repair turns; pos/release_react.py); 'project' = the project's tagged blocks (also "
        "when the release files are unavailable)",
    )
    request_settings: Literal["release", "project"] = Field(
        "release",
        description="§0.1: on the PoS benchmarks the policy's (and, §0.2, the auxiliary calls') temperature, "
        "max_tokens and JSON mode are Raw's, read from the release's configs/<benchmark>/raw.yaml at run time, no "
        "top_p sent (pos/release_config.py); 'project' = the backbone config's sampling",
    )
    max_actions_per_turn: int = Field(
        1,
        ge=1,
        description="actions one policy turn may hold (the release's Raw: 3 on RCA-100, 1 elsewhere); extras are "
        "dropped and logged",
    )


def load_config(cls: type[BaselineConfig], name: str, params: dict[str, Any]) -> BaselineConfig:
    """Validate method params, naming the YAML to fix on error."""
    try:
        return cls(**params)
    except ValidationError as e:
        raise ValueError(
            f"{name} params are invalid (see conf/method/{name}.yaml for the accepted keys): {e}"
        ) from None
