"""The PoS release's Raw ReAct interface (`prompts/react_prompt.py`: `react_system_prompt` and
`build_prompt`), shared by PoS's baselines on the PoS benchmarks (Raw Trajectory = `full_context`,
ACON, PACE, HiAgent, LongHorizon-Harness; docs/pos-baselines.md §0). Every sentence is read at run
time from the pinned release (runners/upstream.py), never written here:

- system: the release's system prompt of the benchmark (`pos.release_prompt.system_prompt`);
- user: `build_prompt`'s own template: the benchmark's example (`react_example`: ALFWorld, LOCA,
  ClinDiag format examples, RCA-100's reasoning example), `Task:`, `Current observation:`,
  `Available actions:` (JSON), `Previous steps:` and the closing instruction, its fields filled;
- the reply: one JSON object `{"thought", "action"}` (`"actions"` when a turn may hold several),
  read by `pos.protocols.PolicyProtocol`.

Raw fills `Previous steps:` with `json.dumps(trajectory, indent=2)` of its `{thought, action,
observation}` transitions, as the release does; the other baselines fill it with their own
context (summaries, chunks, subgoals, rounds: their memory mechanisms, in the project's words).
When any piece is unavailable the project's tagged-block layout is used and the missing pieces
are listed as paraphrased. LOCA's action view is the release's role-grouped catalog
(`build_loca_tool_catalog`, pos/release_catalog.py; a baseline's lookup tool is grouped with the
benchmark's tools); without it, the list of tool schemas."""

from __future__ import annotations

import json
from typing import Any

from pos import release_catalog
from pos.protocols import PolicyProtocol
from pos.repair_text import missing_action, policy_repair
from pos.release_prompt import REACT_PROMPT, RELEASE_KINDS, system_prompt
from runners.api import Decision, Message, Observation, TaskView, ToolCall, ToolSpec
from runners.upstream import TextSources, fill_parts, py_fstring_parts

__all__ = [
    "RELEASE_KINDS",
    "RawInterface",
    "raw_texts",
    "raw_messages",
    "record_all",
    "observation_text",
    "split_observation",
    "transition_action",
]

EXAMPLES = {
    "alfworld": "ALFWORLD_EXAMPLE",
    "loca": "LOCA_BENCH_EXAMPLE",
    "rca": "RCA100_REASONING_EXAMPLE",
    "clindiag": "CLINDIAG_EXAMPLE",
}
"""`react_example(config)` per task kind (build_prompt keeps RCA-100's reasoning example)."""


def raw_texts(kind: str, max_actions: int | None, sources: TextSources) -> dict[str, Any] | None:
    """The release texts `build_prompt` needs for `kind`, or None (then the project's layout)."""
    if kind not in RELEASE_KINDS:
        return None
    system = system_prompt(kind, max_actions, sources)
    user = sources.use(
        "pos.release.build_prompt",
        REACT_PROMPT,
        py_fstring_parts(REACT_PROMPT, "build_prompt", "user_prompt"),
        None,
        symbol="build_prompt.user_prompt",
    )
    example = sources.string(f"pos.release.{EXAMPLES[kind]}", REACT_PROMPT, EXAMPLES[kind], None)  # type: ignore[arg-type]
    if None in (system, user, example):
        return None
    catalog = release_catalog.record_catalog(sources, REACT_PROMPT) if kind == "loca" else None
    return {"system": system, "user": user, "example": example, "catalog": catalog}


def record_all(params_for_kind: Any, sources: TextSources, kinds: tuple[str, ...] | None = None) -> None:
    """Record (manifest) every release text the interface may send, for each PoS benchmark kind
    (those of `kinds` only, when the cell's benchmark declares them);
    `params_for_kind(kind)` gives that kind's `max_actions_per_turn`."""
    for kind in RELEASE_KINDS:
        if kinds is not None and kind not in kinds:
            continue
        raw_texts(kind, params_for_kind(kind), sources)


def record_repairs(sources: TextSources) -> None:
    """Record the release's repair texts (pos/repair_text.py) in `sources`."""
    from pos import repair_text

    policy_repair(), missing_action()
    sources.entries.update(
        {k: v for k, v in repair_text.SOURCES.entries.items() if k in ("pos.policy_repair", "pos.missing_action")}
    )


def raw_messages(
    texts: dict[str, Any],
    *,
    task_text: str,
    observation: str,
    actions: list[Any],
    history: str,
    system_extra: str | None = None,
) -> list[Message]:
    """`build_prompt`'s two messages, filled: `history` is what `Previous steps:` shows;
    `system_extra` (a baseline's own reply-key rule, the project's words) follows the system prompt."""
    values = {
        "example": texts["example"],
        "state['task']": task_text,
        "state['observation']": observation,
        "json.dumps(actions, ensure_ascii=False)": json.dumps(
            release_catalog.view(texts.get("catalog"), actions), ensure_ascii=False
        ),
        "history": history,
    }
    system = texts["system"]
    if system_extra:  # after the release's text, on a line of its own
        system = f"{system}{'' if system.endswith(chr(10)) else chr(10)}{system_extra}\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": fill_parts(texts["user"], values)}]


def action_view(actions: list[str] | None, tools: list[ToolSpec], extra: list[ToolSpec] = ()) -> list[Any]:  # type: ignore[assignment]
    """What `Available actions:` lists: the valid commands where the benchmark gives them (ALFWorld),
    else the tools' schemas; a baseline's lookup tool (`extra`) is appended as a schema."""
    base: list[Any] = list(actions) if actions is not None else [t.openai_schema() for t in tools]
    return base + [t.openai_schema() for t in extra]


def transition_action(call: ToolCall) -> Any:
    """One action as the release's trajectory holds it: the command string of a text command
    (ALFWorld: a call whose only argument is the string `command`), else `{"name", "arguments"}`."""
    if set(call.arguments) == {"command"} and isinstance(call.arguments["command"], str):
        return call.arguments["command"]
    return {"name": call.name, "arguments": call.arguments}


def transitions(decision: Decision, observations: list[str]) -> list[dict[str, Any]]:
    """The release's `{thought, action, observation}` transitions of one decision (one per action)."""
    thought = str(decision.extras.get("thought", ""))
    return [
        {"thought": thought, "action": transition_action(c), "observation": o}
        for c, o in zip(decision.tool_calls, observations)
    ]


NO_SEPARATE_RESULT = "(no separate result for this action; see the next action's observation)"


def observation_text(obs: Observation, bare: bool = False) -> str:
    """An observation as one text. `bare` (the release adapter's form, on the PoS benchmarks): each
    tool result is its content alone, as `benchmarks/adapter.py` returns a tool's output; otherwise
    `Observation.as_text` (`[<call id>] <tool> -> <result>`). The valid actions are never included."""
    if not bare:
        return obs.as_text(actions=False)
    parts = [r.content for r in obs.tool_results]
    if obs.note:
        parts.append(obs.note)
    if obs.user_message is not None:
        parts.append(f"User: {obs.user_message}")
    return "\n".join(parts)


def split_observation(obs: Observation, n: int, bare: bool = False) -> list[str]:
    """Per-action observation texts of a turn of n actions. With one tool result per action each
    gets its own result, the note and user message going with the last; otherwise the last action
    gets the whole observation. `bare`: see `observation_text`."""
    if n > 1 and len(obs.tool_results) == n:
        texts = [observation_text(Observation(tool_results=[r]), bare) for r in obs.tool_results]
        rest = observation_text(Observation(note=obs.note, user_message=obs.user_message), bare)
        texts[-1] = f"{texts[-1]}\n{rest}" if rest else texts[-1]
        return texts
    return [NO_SEPARATE_RESULT] * (n - 1) + [observation_text(obs, bare)]


def correction(parsed: Any, text: str) -> str:
    """The release's repair turns (`baselines/react.py`): a reply that is not one JSON object gets
    `REPAIR_PROMPT`; a JSON decision without an executable action gets `MISSING_ACTION_DIRECTIVE`
    (both read at run time, pos/repair_text.py). [harness choice] The release re-asks a missing
    action once from the original messages; here it is one more repair turn of the same loop."""
    return missing_action() if "json" in getattr(parsed, "blocks", {}) else policy_repair()


class RawInterface:
    """One task's release ReAct interface: the texts, the JSON policy protocol, the action cap
    (`max_actions_per_turn`; extra actions are dropped, as the release's `_decision_actions`) and
    Raw's `{thought, action, observation}` trajectory."""

    def __init__(self, texts: dict[str, Any], task: TaskView, max_actions: int | None) -> None:
        self.texts, self.task = texts, task
        self.max_actions = max_actions
        self.protocol = PolicyProtocol()
        self.protocol.configure(task, max_actions)
        self.trajectory: list[dict[str, Any]] = []
        self.pending: Decision | None = None
        self.actions: list[str] | None = None

    def observe(self, observation: Observation) -> str:
        """Complete the last decision's transitions with this observation; the current observation's
        text: the last action's (the release steps its environment once per action, so `Current
        observation:` is the last one's; the earlier ones are in the trajectory), tool results bare."""
        self.actions = observation.actions
        current = observation_text(observation, bare=True)
        if self.pending is not None and self.pending.tool_calls:
            texts = split_observation(observation, len(self.pending.tool_calls), bare=True)
            self.trajectory += transitions(self.pending, texts)
            current = texts[-1]
        self.pending = None
        return current

    def cap(self, decision: Decision) -> tuple[Decision, list[dict[str, Any]]]:
        """(the decision with at most `max_actions` calls, the dropped calls)."""
        k = self.max_actions
        if k is None or len(decision.tool_calls) <= k:
            return decision, []
        return decision.model_copy(update={"tool_calls": decision.tool_calls[:k]}), [
            c.model_dump() for c in decision.tool_calls[k:]
        ]

    def act(self, decision: Decision) -> None:
        self.pending = decision

    def history(self) -> str:
        """Raw's `Previous steps:` (`json.dumps(trajectory, ensure_ascii=False, indent=2)`)."""
        return json.dumps(self.trajectory, ensure_ascii=False, indent=2)

    def messages(
        self,
        *,
        task_text: str,
        observation: str,
        history: str,
        extra_tools: list[ToolSpec] = (),  # type: ignore[assignment]
        system_extra: str | None = None,
    ) -> list[Message]:
        return raw_messages(
            self.texts,
            task_text=task_text,
            observation=observation,
            history=history,
            actions=action_view(self.actions, self.task.tools, list(extra_tools)),
            system_extra=system_extra,
        )
