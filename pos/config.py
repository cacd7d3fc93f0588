"""PoS configuration (docs/pos.md §11). Method YAMLs pass these as params; `kind_overrides`
adjusts them per kind of task (TaskView.kind), since one method config serves
every benchmark here while upstream had one config per benchmark."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kit.overrides import KindOverrides

from pos.health import HealthConfig
from pos.recovery import RecoveryConfig
from pos.sentinel import SentinelConfig


class PosConfig(KindOverrides):
    model_config = {"extra": "forbid"}

    task_mode: Literal["execution", "diagnostic"] = Field("execution", description="§6: how progress labels are made")
    diagnostic_progress_threshold: float = 0.3
    max_json_retries: int = Field(1, description="belief-model re-asks of an unparsable reply (capped at 1, §2.5)")
    policy_max_json_retries: int = Field(1, description="policy re-samples of an unusable reply (PoS 1, §11)")
    max_actions_per_turn: int | None = Field(
        1, description="§11 actions per turn (RCA-100: 3); extra tool calls are dropped and logged; null = no limit"
    )
    carry_world_across_requests: bool = Field(
        True,
        description="[harness choice] multi-request tasks: the next request's initialisation starts from the last "
        "committed world",
    )
    belief_text_enabled: bool = Field(
        True, description="False = the policy reads the semantic view as JSON instead of an LLM-written Belief Text"
    )
    sampling: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="§11 per-call sampling of the agent (policy), state (belief model, Belief Text) and sentinel "
        "(audit, progress) calls, e.g. {agent: {temperature: 0, max_completion_tokens: 512}}; a role left out uses "
        "the backbone config",
    )
    request_settings: Literal["release", "project"] = Field(
        "release",
        description="§11: on the PoS benchmarks each role's temperature, max_tokens and response_format come from "
        "the release's run config (configs/<benchmark>/<release_run_config>.yaml, read at run time; "
        "pos/release_config.py) and no top_p is sent, as the release; 'project' = `sampling` above (also the "
        "fallback when the release file is unavailable, recorded as paraphrased)",
    )
    release_run_config: Literal["pos", "pos_no_consistency", "pos_no_trapping"] = Field(
        "pos", description="which of the release's PoS run configs gives the request settings (its ablations)"
    )
    context_failure: Literal["case_error", "keep_belief"] = Field(
        "case_error",
        description="§2.5 [harness choice]: a belief-model call that yields no buildable belief on a non-terminal step "
        "raises (the case is recorded as an error), or keeps the last committed belief as a rejected update",
    )
    policy_format_example: bool = Field(
        True,
        description="§4: put upstream's format example of the task kind (ALFWorld, LOCA, ClinDiag; "
        "prompts/react_prompt.py, read at run time) first in the policy prompt, as upstream does",
    )
    policy_prompt: Literal["release", "project"] = Field(
        "release",
        description="§4: on the PoS benchmarks (ALFWorld, LOCA, RCA-100, ClinDiag) the policy prompt is the release's "
        "(prompts/react_prompt.py react_system_prompt + build_belief_prompt, read at run time; "
        "pos/release_prompt.py); 'project' = the project's tagged-block layout (always used on other benchmarks, "
        "and when the release files are unavailable)",
    )
    belief_prompts: Literal["release", "project"] = Field(
        "release",
        description="§3, §5, §6, §9: the belief model, Belief Text, Sentinel (audit, progress) and composed-recovery "
        "texts are the release's (prompts/prompt_generation.py, prompts/beliefSentinel_prompt.py, "
        "belief/recoveryPlanning.py, read at run time; pos/release_texts.py); 'project' = the project's wording "
        "(also used when the release files are unavailable)",
    )
    forced_submission: bool = Field(
        False,
        description="§4: append a forced-submission directive to the policy prompt on the last turn of the request "
        "(TaskView.step_budget)",
    )
    sentinel: SentinelConfig = Field(default_factory=SentinelConfig)
    trapping: HealthConfig = Field(default_factory=HealthConfig)
    recovery: RecoveryConfig = Field(default_factory=RecoveryConfig)

    def model_post_init(self, _ctx: Any) -> None:
        bad = set(self.sampling) - {"agent", "state", "sentinel"}
        if bad:
            raise ValueError(f"sampling: only the roles 'agent', 'state' and 'sentinel' can be set, got {sorted(bad)}")
