"""One ClinDiag case as a harness Environment (docs/pos-benchmarks.md §3.5, §3.6).

- One request: task JSON {case_id, subset, initial_presentation} + the fixed notice. `max_steps`
  (30) turns of one action (`max_actions_per_turn`); extras are dropped with a note.
- Query tools take one non-empty `question`; the provider answers from that section only
  (`provider: llm` → role `user_sim`; `keyword` → offline fake). A missing section is sent to the
  provider as the release does: its no-record text stands as the record in the provider prompt
  (`no_record_provider_call: false` = the former reading: that text is the reply, no model call).
  Replies are capped at 8,000 chars + note.
- `submit_diagnosis` with an empty `final_diagnosis` is rejected (the turn is used); a valid one
  ends the case. `answer_key` in any argument is rejected. The turn before the last carries the
  forced-submission directive.
- Scoring at the end of the request: the judge (role `judge`; `judge: scripted` = offline match)
  → diagnosis_correct, differential_hit. No submission = incorrect, no judge call.
- Scripted runs: `reference` asks two questions, then submits the gold diagnosis; as provider it
  gives the keyword answer, as judge the scripted verdict (labelled scripted).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from benchmarks.clindiag import judge
from benchmarks.clindiag import provider
from benchmarks.clindiag.texts import clindiag_texts
from benchmarks.clindiag.prompts import NOTICE, QUERY_TOOLS, SUBMIT, as_field, policy, request_text, tool_specs
from benchmarks import release_adapter
from benchmarks.diagnostic import DiagnosticEnv, cap_text
from runners.upstream import TextSources
from runners.api import Decision, EpisodeContext, Message, RequestOutcome, TaskSpec, TaskView, ToolCall

DEFAULTS: dict[str, Any] = {
    "max_steps": 30,  # PoS §11: 30 policy turns
    "max_actions_per_turn": 1,  # PoS §11: one action per turn
    "observation_max_chars": 8000,  # PoS §11 / §3.5: provider reply cap + truncation note
    "forced_submission": True,  # shared adapter contract: directive before the last turn
    "provider": "llm",  # llm (role user_sim) | keyword (offline fake, §3.7 harness choice)
    "provider_attempts": 2,  # harness choice: re-asks of an empty provider reply
    "adapter": "release",  # release adapter: bare task JSON ("<subset>/<id>") + its first sentence | project
    "request_settings": "release",  # release = provider/judge settings from the release's configs/clindiag/raw.yaml
    "provider_sampling": {"temperature": 0.0, "max_completion_tokens": 1024},
    "judge": "llm",  # llm (role judge) | scripted (offline normalised/synonym match, §3.7)
    "judge_attempts": 3,  # §3.6: ≤ 2 re-asks, then an error
    "judge_sampling": {"temperature": 0.0, "max_completion_tokens": 512, "response_format": {"type": "json_object"}},
    "verbatim_records": True,  # release: history / physical exam reach the provider as the file's text, verbatim
    "no_record_provider_call": True,  # release: a missing section's no-record text goes to the provider as the record
    "pos_section_match": False,  # §3.3: true = PoS's 12-character diagnostic_test key rule
}
CHOICES = {
    "provider": ("llm", "keyword"),
    "judge": ("llm", "scripted"),
    "request_settings": ("release", "project"),
    "adapter": ("release", "project"),
}


def check_settings(settings: dict[str, Any]) -> None:
    """Raise a clear error for a switch set to an unknown value."""
    for key, allowed in CHOICES.items():
        if settings.get(key, DEFAULTS[key]) not in allowed:
            raise ValueError(f"clindiag {key} must be one of {allowed}, got {settings[key]!r}")


HISTORY_QUESTION = "What is the chief complaint and the history of the present illness?"
MISSING_QUESTION = "Which results are recorded for this category?"


class ClinDiagEnv(DiagnosticEnv):
    submit_tool = SUBMIT  # provider replies are capped inside `provider.ask` (cap_note stays None)

    def __init__(
        self, task: TaskSpec, ctx: EpisodeContext, params: dict[str, Any], texts: dict[str, Any] | None = None
    ) -> None:
        self.task, self.ctx = task, ctx
        self.texts = (
            texts if texts is not None else clindiag_texts()
        )  # provider and judge texts (benchmarks/clindiag/texts.py)
        self.params = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
        check_settings(self.params)
        self.benchmark = str(params.get("name", "clindiag"))
        self.case = task.payload
        self._init_turns()
        self.verdict: dict[str, Any] | None = None
        self.judge_replies: list[str] = []
        self.queries: Counter[str] = Counter()
        self._providing: tuple[Any, str, bool] | None = None  # (record, question, record missing)
        self._judging = False

    def view(self) -> TaskView:
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.benchmark,
            policy=policy(self.params["max_steps"]),
            tools=tool_specs(self.texts),
            kind="clindiag",
        )

    def request_text(self) -> str:
        c = self.case
        if self.params["adapter"] == "release":  # the release's case_ref is "<subset>/<id>", its text unstripped
            initial = c.get("initial_raw", c["initial_information"])
            return release_adapter.task_json(
                {"case_id": f"{c['subset']}/{c['case_id']}", "subset": c["subset"], "initial_presentation": initial}
            )
        return request_text(c["case_id"], c["subset"], c["initial_information"])

    def first_observation(self) -> str | None:
        if self.params["adapter"] == "release":
            return release_adapter.first_observation("clindiag", TextSources(), NOTICE)
        return None

    async def execute(self, call: ToolCall) -> tuple[str, bool]:
        args = call.arguments if isinstance(call.arguments, dict) else None
        if args is None:
            self.issues["bad_action"] += 1
            return f"arguments of {call.name} must be a JSON object", True
        if call.name == SUBMIT:
            return self._submit(args)
        if call.name not in QUERY_TOOLS:
            self.issues["unknown_tool"] += 1
            return f"Unknown tool '{call.name}'. Available tools: {', '.join([*QUERY_TOOLS, SUBMIT])}.", True
        extra = sorted(set(args) - {"question"})
        question = args.get("question")
        if extra or not isinstance(question, str) or not question.strip():
            self.issues["bad_action"] += 1
            return f"{call.name} takes exactly one argument `question`: one specific, non-empty question string.", True
        self.queries[call.name] += 1
        section = QUERY_TOOLS[call.name][0]
        missing = not self.case["present"][section]
        if missing and not self.params["no_record_provider_call"]:
            return self.texts["no_record"], False  # former reading: the no-record text is the reply, no call
        # The release (`ask_provider`) fills the provider prompt with `record_text`, which is the
        # no-record sentence when the section is missing, and asks the provider in both cases.
        record = self.texts["no_record"] if missing else self.case["sections"][section]
        limit = int(self.params["observation_max_chars"])
        if self.params["provider"] == "keyword":
            return cap_text(
                self._fake_answer(record, question, missing), limit, provider.TRUNCATION_NOTE.format(n=limit)
            ), False
        if not missing and self.params["verbatim_records"]:  # the release sends a whole-file section's file as is
            record = self.case.get("files", {}).get(section, record)
        self._providing = (record, question, missing)
        try:
            answer = await provider.ask(
                self.ctx.backbone("user_sim"),
                section,
                record,
                question,
                max_chars=limit,
                attempts=int(self.params["provider_attempts"]),
                texts=self.texts,
                **self.params["provider_sampling"],
            )
        finally:
            self._providing = None
        return answer, False

    @staticmethod
    def _fake_answer(record: Any, question: str, missing: bool) -> str:
        """The offline provider's answer: the no-record text itself for a missing section, else
        the keyword answer."""
        return record if missing else provider.keyword_answer(record, question)

    def _submit(self, args: dict[str, Any]) -> tuple[str, bool]:
        final = args.get("final_diagnosis")
        if not isinstance(final, str) or not final.strip():
            self.issues["invalid_submission"] += 1
            return "Rejected: `final_diagnosis` must be a non-empty string. The case is still open.", True
        self.submission = {
            "final_diagnosis": final.strip(),
            "differential_diagnosis": as_field(args.get("differential_diagnosis")),
            "diagnostic_reasoning": as_field(args.get("diagnostic_reasoning")),
        }
        return "Diagnosis submitted. The case is closed.", False

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        assert self.request is not None
        if self.submission is not None:
            gold = self.case["gold"]
            if self.params["judge"] == "scripted":
                self.verdict = judge.scripted_verdict(gold, self.submission)
            else:
                self._judging = True
                try:
                    self.verdict, self.judge_replies = await judge.judge(
                        self.ctx.backbone("judge"),
                        gold,
                        self.submission,
                        attempts=int(self.params["judge_attempts"]),
                        texts=self.texts,
                        **self.params["judge_sampling"],
                    )
                finally:
                    self._judging = False
        final = self.submission["final_diagnosis"] if self.submission else None
        memory = f"{self.request.text}\nSubmitted diagnosis: {final or 'none'} after {self.turn} turns."
        return RequestOutcome(
            request=self.request, final_response=final, steps=steps, truncated=truncated, memory_text=memory
        )

    async def score_task(self) -> dict[str, Any]:
        v = self.verdict or {"diagnosis_correct": False, "differential_hit": False, "reason": "no_submission"}
        return {
            "success": int(v["diagnosis_correct"]),
            "diagnosis_correct": v["diagnosis_correct"],
            "differential_hit": v["differential_hit"],
            "judge_reason": v["reason"],
            "judge": self.params["judge"],
            "judge_replies": self.judge_replies,
            "submitted": self.submission is not None,
            "submission": self.submission,
            "subset": self.case["subset"],
            "turns": self.turn,
            "queries": dict(self.queries),
            "issues": dict(self.issues),
        }

    def _lab_question(self) -> str:
        """The scripted doctor's lab question: the first recorded procedure, else a general one."""
        lab = self.case["sections"]["lab"]
        first = lab[0] if isinstance(lab, list) and lab and isinstance(lab[0], dict) else {}
        name = first.get("procedure_name")
        return (
            f"What did the {name} show?"
            if isinstance(name, str) and name.strip()
            else "Which laboratory tests were done?"
        )

    def _second_question(self) -> tuple[str, str]:
        """The scripted doctor's second query: a section the patient has no record of, if any
        (so scripted runs exercise the no-record path), else the lab question."""
        for tool, (section, _) in QUERY_TOOLS.items():
            if section != "history" and not self.case["present"][section]:
                return tool, MISSING_QUESTION
        return "order_lab_test", self._lab_question()

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        if role == "user_sim" and self._providing is not None:
            return Decision(message=self._fake_answer(*self._providing))
        if role == "judge" and self._judging and self.submission is not None:
            return Decision(message=json.dumps(judge.scripted_verdict(self.case["gold"], self.submission)))
        if role != "agent" or self.request is None:
            return None
        n = self.turn + 1
        if self.turn < 2:
            name, q = ("ask_history", HISTORY_QUESTION) if self.turn == 0 else self._second_question()
            return Decision(tool_calls=[ToolCall(name=name, arguments={"question": q}, id=f"{name}-{n}")])
        gold = self.case["gold"]
        diff = (
            ""
            if gold["differential_diagnosis"].strip().lower().rstrip(".") == "not specified"
            else gold["differential_diagnosis"]
        )
        return Decision(
            tool_calls=[
                ToolCall(
                    name=SUBMIT,
                    id=f"{SUBMIT}-{n}",
                    arguments={
                        "final_diagnosis": gold["final_diagnosis"],
                        "differential_diagnosis": diff,
                        "diagnostic_reasoning": "(scripted reference answer)",
                    },
                )
            ]
        )
