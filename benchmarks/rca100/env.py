"""One RCA-100 case as a harness Environment (docs/pos-benchmarks.md §2.5–§2.7).

- One request: the task JSON plus the fixed notice. Turns: `max_steps` (50) policy turns of at
  most `max_actions_per_turn` (3) tool calls; extras are dropped with a note; every executed
  action counts in `tool_use_counter`.
- Invalid actions never end the case: unknown tool → list of tools, bad arguments → error text,
  `answer_key` in an argument → rejection, invalid submission (empty entity, type outside the
  catalog) → rejection. A valid `submit_root_cause` ends the case (later calls of that turn are
  not executed); none → failure `no_submission`.
- Observations are capped at `observation_max_chars` (20,000) with a narrow-the-query note; the
  turn before the last carries the forced-submission directive (`forced_submission`).
- `reference("agent")` (scripted runs): overview, the gold entity's metrics, then the gold answer.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.rca100.catalog import FAULT_TYPES, norm_type
from benchmarks.rca100.data import CaseData, RcaDataError
from benchmarks import release_adapter
from benchmarks.rca100.prompts import NOTICE, policy, request_text
from runners.upstream import TextSources
from benchmarks.rca100.schema import SUBMIT, tool_specs, validate
from benchmarks.rca100.score import score_submission
from benchmarks.rca100.tools import RcaTools
from benchmarks.diagnostic import DiagnosticEnv
from runners.api import Decision, EpisodeContext, Message, RequestOutcome, TaskSpec, TaskView, ToolCall, ToolSpec

DEFAULTS: dict[str, Any] = {
    "max_steps": 50,  # PoS §11: 50 policy turns
    "max_actions_per_turn": 3,  # PoS §11: max_actions_per_turn 3 (null = no cap)
    "observation_max_chars": 20000,  # PoS §11: observation cap + truncation note
    "forced_submission": True,  # shared adapter contract: directive before the last turn
    "tool_texts": "release",  # the release's tool schemas (benchmarks/RCA100/tools.py) | project
    "adapter": "release",  # the release adapter's bare task JSON and first sentence | project: labelled task + notice
}
TRUNCATION_NOTE = "[output truncated at {n} characters: narrow the query (filters, smaller limit)]"


class RcaEnv(DiagnosticEnv):
    submit_tool = SUBMIT
    cap_note = TRUNCATION_NOTE

    def __init__(
        self, task: TaskSpec, ctx: EpisodeContext, params: dict[str, Any], tools: list[ToolSpec] | None = None
    ) -> None:
        self.task, self.ctx = task, ctx
        self.params = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
        self.tool_list = tools if tools is not None else tool_specs(texts=self.params["tool_texts"])
        self.benchmark = str(params.get("name", "rca100"))
        self.gold = task.payload["gold"]
        self.tools = RcaTools(CaseData(task.payload["case_dir"]))
        self._init_turns()

    def view(self) -> TaskView:
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.benchmark,
            tools=self.tool_list,
            kind="rca",
            policy=policy(
                self.params["max_steps"], self.params["max_actions_per_turn"], self.params["observation_max_chars"]
            ),
        )

    def request_text(self) -> str:
        if self.params["adapter"] == "release":
            return release_adapter.task_json(self.task.payload["task"])
        return request_text(self.task.payload["task"])

    def first_observation(self) -> str | None:
        if self.params["adapter"] == "release":
            return release_adapter.first_observation("rca", TextSources(), NOTICE)
        return None

    async def execute(self, call: ToolCall) -> tuple[str, bool]:
        kwargs, err = validate(call.name, call.arguments)
        if err:
            self.issues["invalid_submission" if call.name == SUBMIT else "bad_action"] += 1
            return json.dumps({"error": err}), True
        if call.name == SUBMIT:
            return self._submit(kwargs)
        try:
            out = self.tools.call(call.name, kwargs)
        except RcaDataError:
            raise  # broken data is a harness problem, not the agent's
        except Exception as e:  # a tool must never crash the episode on odd input
            self.issues["tool_failure"] += 1
            return json.dumps({"error": f"{call.name} failed: {type(e).__name__}: {e}"}), True
        return json.dumps(out, ensure_ascii=False, default=str), "error" in out

    def _submit(self, kwargs: dict[str, Any]) -> tuple[str, bool]:
        entity, ftype = kwargs["root_cause_entity"].strip(), norm_type(kwargs["fault_type"])
        if ftype is None:
            self.issues["invalid_submission"] += 1
            return json.dumps(
                {
                    "error": f"rejected: fault_type '{kwargs['fault_type']}' is not in the catalog",
                    "catalog": list(FAULT_TYPES),
                }
            ), True
        self.submission = {
            "root_cause_entity": entity,
            "fault_type": ftype,
            "submitted_fault_type": kwargs["fault_type"],
            "analysis": kwargs.get("analysis") or "",
            "turn": self.turn,
        }
        return json.dumps({"status": "submitted", "root_cause_entity": entity, "fault_type": ftype}), False

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        assert self.request is not None
        sub = self.submission
        final = json.dumps({k: sub[k] for k in ("root_cause_entity", "fault_type")}) if sub else None
        memory = f"{self.request.text}\nSubmitted: {final or 'nothing'} after {self.turn} turns."
        return RequestOutcome(
            request=self.request, final_response=final, steps=steps, truncated=truncated, memory_text=memory
        )

    async def score_task(self) -> dict[str, Any]:
        s = score_submission(self.submission, self.gold)
        return {
            "success": int(s["success"]),
            "entity_correct": s["entity_correct"],
            "type_correct": s["type_correct"],
            "reason": s["reason"],
            "submitted": self.submission is not None,
            "submission": self.submission,
            "turns": self.turn,
            "tool_use_counter": self.tool_use_counter,
            "issues": dict(self.issues),
        }

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        """Scripted agent: overview, then the gold entity's metrics, then the gold submission."""
        if role != "agent" or self.request is None:
            return None
        entity, ftype = self.gold["root_cause_entities"][0], self.gold["root_cause_types"][0]
        n = self.turn + 1
        if self.turn == 0:
            call = ToolCall(name="get_data_overview", arguments={}, id=f"get_data_overview-{n}")
        elif self.turn == 1:
            call = ToolCall(name="query_metrics", arguments={"entity_name": entity}, id=f"query_metrics-{n}")
        else:
            call = ToolCall(
                name=SUBMIT,
                id=f"{SUBMIT}-{n}",
                arguments={"root_cause_entity": entity, "fault_type": ftype, "analysis": "(scripted reference answer)"},
            )
        return Decision(tool_calls=[call])
