"""Turn rules the PoS adapters share for RCA-100 and ClinDiag (docs/pos-benchmarks.md §2.6, §3.5 and
the shared adapter contract): the cap on actions per turn, the `answer_key` guard, the
observation cap with its truncation note, the forced-submission directive before the last turn,
and the turn loop built on them (`DiagnosticEnv`): one implementation for both benchmarks."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchmarks.one_request import OneRequestEnv
from runners.api import Decision, Observation, Reply, Request, TaskSpec, ToolCall, ToolResult


def mentions_answer_key(value: Any) -> bool:
    """Shared adapter contract: any string argument containing `answer_key` is rejected."""
    if isinstance(value, str):
        return "answer_key" in value.lower()
    if isinstance(value, dict):
        return any(mentions_answer_key(k) or mentions_answer_key(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(mentions_answer_key(v) for v in value)
    return False


def cap_text(text: str, limit: int, note: str) -> str:
    """`text` cut to `limit` characters plus `note` when longer (the observation caps of §11)."""
    return text if len(text) <= limit else f"{text[:limit]}\n{note}"


def actions_of(decision: Decision, max_actions: int | None) -> tuple[list[ToolCall], int]:
    """The tool calls executed this turn and how many were dropped (extras beyond the cap)."""
    calls = list(decision.tool_calls)
    if max_actions is None or len(calls) <= max_actions:
        return calls, 0
    return calls[:max_actions], len(calls) - max_actions


FINAL_TURN_SYMBOL = {
    "submit_root_cause": "RCA100_FINAL_TURN_DIRECTIVE",
    "submit_diagnosis": "CLINDIAG_FINAL_TURN_DIRECTIVE",
}
"""Upstream PoS `prompts/react_prompt.py` directive per submission tool (appended on the last turn)."""


def final_turn_directive(submit_tool: str) -> str:
    """Upstream's final-turn directive for this benchmark, read at run time from the pinned file;
    our wording when it is unavailable."""
    from runners.upstream import UpstreamFile, py_string

    symbol = FINAL_TURN_SYMBOL.get(submit_tool)
    text = py_string(UpstreamFile("PoS", "prompts/react_prompt.py"), symbol) if symbol else None
    return text or (
        f"FINAL TURN: the turn budget is almost spent. Your next action must be `{submit_tool}` with your best "
        "answer from the evidence gathered so far; no further investigation is possible."
    )


def forced_submission_note(submit_tool: str, turn: int, budget: int) -> str | None:
    """The directive shown before the last turn: upstream's ReAct loop appends it to the last
    turn's prompt; here it is the observation of the turn before, which that prompt shows."""
    if turn == budget - 1:
        return final_turn_directive(submit_tool)
    return None


class DiagnosticEnv(OneRequestEnv):
    """One-request environment with the PoS diagnostic turn loop (RCA-100, ClinDiag): each `act`
    is one turn of at most `max_actions_per_turn` actions run in order until a valid submission;
    every executed action counts in `tool_use_counter`; a decision without tool calls spends the
    turn. Subclasses set `submit_tool`, `params` (settings), `task`, and implement `request_text`
    and `execute` (which sets `self.submission` on a valid submission)."""

    submit_tool = "submit"
    task: TaskSpec  # set by the subclass
    cap_note: str | None = None  # set → results longer than observation_max_chars are cut + this note ({n} = limit)

    def _init_turns(self) -> None:
        self.turn = 0
        self.tool_use_counter = 0
        self.submission: dict[str, Any] | None = None
        self.issues: Counter[str] = Counter()

    def request_text(self) -> str:
        raise NotImplementedError

    async def execute(self, call: ToolCall) -> tuple[str, bool]:
        """(observation text, is_error) of one action; never raises on agent input."""
        raise NotImplementedError

    def first_observation(self) -> str | None:
        """The case's first observation where the benchmark's adapter has one (None: empty)."""
        return None

    async def open_request(self) -> Request:
        return Request(
            index=0,
            request_id=f"{self.task.task_id}/q1",
            text=self.request_text(),
            observation=self.first_observation(),
        )

    async def act(self, decision: Decision) -> Reply:
        if self.submission is not None:
            return Reply(request_done=True)
        self.turn += 1
        calls, dropped = actions_of(decision, self.params["max_actions_per_turn"])
        notes: list[str] = []
        if dropped:
            self.issues["dropped_actions"] += dropped
            notes.append(
                f"At most {self.params['max_actions_per_turn']} action(s) per turn: {dropped} further call(s) were not "
                "executed."
            )
        if not calls:
            self.issues["no_action"] += 1
            notes.append(
                f"No tool was called, so this turn was spent. Use the tools, and finish with `{self.submit_tool}`."
            )
        results: list[ToolResult] = []
        for i, call in enumerate(calls):
            self.tool_use_counter += 1
            if mentions_answer_key(call.arguments):
                self.issues["answer_key_rejected"] += 1
                content, error = "Rejected: arguments must not reference answer_key.", True
            else:
                content, error = await self.execute(call)
            if self.cap_note is not None:
                limit = int(self.params["observation_max_chars"])
                content = cap_text(content, limit, self.cap_note.format(n=limit))
            results.append(
                ToolResult(
                    call_id=call.id or f"{call.name}-{self.tool_use_counter}",
                    name=call.name,
                    content=content,
                    error=error,
                )
            )
            if self.submission is not None:
                if calls[i + 1 :]:
                    notes.append(
                        f"The submission ended the case; {len(calls) - i - 1} later call(s) were not executed."
                    )
                break
        if self.submission is None and self.params["forced_submission"]:
            note = forced_submission_note(self.submit_tool, self.turn, self.step_budget())
            if note:
                notes.append(note)
        return Reply(
            observation=Observation(tool_results=results, note="\n".join(notes) or None),
            request_done=self.submission is not None,
        )
