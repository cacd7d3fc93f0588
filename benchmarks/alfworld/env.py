"""One ALFWorld game as a harness Environment (docs/alfworld.md §3–§5).

- One request per game. With `adapter: release` (the PoS release's `benchmarks/adapter.py`, default) its
  text is the task sentence after `Your task is to:` and the reset text is the first observation
  (`Request.observation`); with `adapter: project` its text is the reset text (room, then the task).
- The agent acts with the `act` tool (see `prompts`); each engine step is one action of the
  `max_steps` budget (50, PoS `max_steps`; ReAct/Reflexion stop at 49 actions — set 49 for
  them). Decisions that reach no engine (empty, unknown tool, bad arguments) still spend a turn
  of the episode loop but no engine step.
- Feedback returns as `Observation(note=…)`: the engine's text as is (the PoS release; banner and
  "You arrive at …" kept), or after ReAct's clean-ups with `clean_observations: true`
  (`text.clean_observation`).
- `won` (the PDDL goal check) ends the request; success = won (§5). Nothing is stepped after it.
- `reference("agent", …)` gives the next command of the game's stored expert walkthrough.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.alfworld import text as alfworld_text
from benchmarks.alfworld.data import read_game
from benchmarks.alfworld.prompts import ACT, act_tool, policy
from benchmarks.one_request import OneRequestEnv
from runners.api import (
    Decision,
    EpisodeContext,
    Message,
    Observation,
    Reply,
    Request,
    RequestOutcome,
    TaskSpec,
    TaskView,
    ToolCall,
)

DEFAULTS: dict[str, Any] = {
    "max_steps": 50,  # PoS max_steps; ReAct/Reflexion: 49 actions (docs/alfworld.md §4, pitfall 6)
    "syntax": "native",  # harness choice: native file syntax, or "put" = ReAct-era patch (§4.3)
    "adapter": "release",  # PoS release adapter: task = the sentence after "Your task is to:", 1st obs = reset text
    "clean_observations": False,  # PoS release: the engine's text as is; true = ReAct's clean-ups below (§4.1)
    "strip_named_arrival": True,  # with clean_observations: drop "You arrive at <r>. " for ReAct-identical text (§4.3)
    "think_ok": True,  # with clean_observations (ReAct): the observation of a `think:` action is "OK." (§4.1)
    "lenient_match": False,  # harness choice: exact engine rule by default (§3.2)
    "message_as_command": True,  # harness choice: a plain assistant message is played as the command
    # upstream PoS: the admissible commands reach the policy every turn (Observation.actions); false = none
    "show_admissible": True,
}


class AlfworldEnv(OneRequestEnv):
    def __init__(self, task: TaskSpec, ctx: EpisodeContext, params: dict[str, Any]) -> None:
        self.task, self.ctx = task, ctx
        self.params = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
        self.benchmark = str(params.get("name", "alfworld"))
        if self.params["adapter"] not in ("release", "project"):
            raise ValueError(f"alfworld adapter must be 'release' or 'project', got {self.params['adapter']!r}")
        if self.params["syntax"] not in ("native", "put"):
            raise ValueError(f"alfworld syntax must be 'native' or 'put', got {self.params['syntax']!r}")
        game = read_game(Path(task.payload["path"]))
        native = alfworld_text.grammar_syntax(game["grammar"])
        self.syntax = "put" if self.params["syntax"] == "put" else native
        if self.syntax != native:  # patch in memory; the file is never touched (§4.3)
            game = {**game, "grammar": alfworld_text.patch_grammar_put(game["grammar"])}
        walk = list(game.get("walkthrough") or [])
        self.walkthrough = [alfworld_text.move_to_put(c) for c in walk] if self.syntax == "put" else walk
        self._game_dict = game
        self._game: Any = None
        self.admissible: list[str] = []
        self.won = False
        self.actions = 0  # engine steps taken
        self.idle_turns = 0  # decisions that reached no engine step
        self.invalid = 0  # engine steps whose command was not admissible (think steps excluded)
        self.issues: Counter[str] = Counter()
        self._wt = 0  # next walkthrough index (advances when the agent plays it)

    # ------------------------------------------------------------------ contract
    def view(self) -> TaskView:
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.benchmark,
            policy=policy(self.syntax, self.params["max_steps"]),
            tools=[act_tool(self.syntax)],
            kind="alfworld",
        )

    async def open_request(self) -> Request:
        from benchmarks.alfworld.engine import Game  # lazy: needs the alfworld extra

        root = self.task.payload.get("root")
        self._game = Game(self._game_dict, data_root=Path(root) if root else None)
        frame = await asyncio.to_thread(self._game.reset)
        self.admissible, self.won = frame.admissible, frame.won
        text = (
            alfworld_text.initial_observation(frame.feedback) if self.params["clean_observations"] else frame.feedback
        )
        goal = alfworld_text.task_sentence(text)
        if (
            self.params["adapter"] == "release"
        ):  # PoS adapter.py: state["task"] is the sentence, the reset text observed
            return Request(
                index=0,
                request_id=f"{self.task.task_id}/q1",
                text=goal or text,
                goal=goal,
                observation=text,
                actions=self._actions(),
            )
        return Request(index=0, request_id=f"{self.task.task_id}/q1", text=text, goal=goal, actions=self._actions())

    def _actions(self) -> list[str] | None:
        """The step's admissible commands, as upstream PoS's adapter passes `infos["admissible_commands"]`."""
        return list(self.admissible) if self.params["show_admissible"] and not self.won else None

    async def act(self, decision: Decision) -> Reply:
        if self.won or self._game is None:
            return Reply(request_done=self.won)
        command, notes = self._command_of(decision)
        if command is None:
            self.idle_turns += 1
            return Reply(observation=Observation(note=" ".join(notes), actions=self._actions()))
        m = alfworld_text.match_command(command, self.admissible, lenient=self.params["lenient_match"])
        if m.issue:  # pitfall 8: invalid actions are logged, never silently dropped
            self.issues[m.issue] += 1
        self.invalid += int(not m.admissible and m.issue != "think")
        frame = await asyncio.to_thread(self._game.step, m.command)
        self.actions += 1
        if self._wt < len(self.walkthrough) and m.command == self.walkthrough[self._wt] and m.admissible:
            self._wt += 1
        self.admissible, self.won = frame.admissible, frame.won
        note = (
            alfworld_text.clean_observation(
                frame.feedback,
                command,
                strip_named_arrival=self.params["strip_named_arrival"],
                think_ok=self.params["think_ok"],
            )
            if self.params["clean_observations"]
            else frame.feedback
        )
        if notes:
            note = f"{note}\n({' '.join(notes)})"
        return Reply(observation=Observation(note=note, actions=self._actions()), request_done=self.won)

    def _command_of(self, decision: Decision) -> tuple[str | None, list[str]]:
        """The command a decision carries, plus notes about what was ignored (harness choices:
        one action per turn, as PoS runs ALFWorld; a message is the command if allowed)."""
        notes: list[str] = []
        if decision.tool_calls:
            call, rest = decision.tool_calls[0], decision.tool_calls[1:]
            if rest:
                self.issues["extra_calls"] += len(rest)
                notes.append(f"Only one action per step: {len(rest)} further tool call(s) were ignored.")
            if call.name != ACT:
                self.issues["unknown_tool"] += 1
                return None, [f"Unknown tool '{call.name}'. The only tool is `{ACT}` with a `command` argument."]
            command = call.arguments.get("command")
            if not isinstance(command, str):
                self.issues["bad_arguments"] += 1
                return None, [f'`{ACT}` needs a string argument `command`, e.g. {{"command": "look"}}.']
            return command, notes
        if decision.message is not None:
            if self.params["message_as_command"]:
                return decision.message, notes
            self.issues["message"] += 1
            return None, [f"There is no one to talk to here. Act with the `{ACT}` tool."]
        self.issues["no_action"] += 1
        return None, [f"No action was taken. Act with the `{ACT}` tool."]

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        assert self.request is not None
        result = "completed" if self.won else "not completed"
        memory = f"{self.request.text}\nResult: task {result} after {self.actions} actions."
        return RequestOutcome(
            request=self.request,
            final_response=None,
            steps=steps,
            truncated=truncated,
            memory_text=memory,
            success=self.won,
        )

    async def score_task(self) -> dict[str, Any]:
        if self._game is not None:
            self._game.close()
        pay = self.task.payload
        return {
            "success": int(self.won),
            "won": self.won,
            "task_type": pay["task_type"],
            "task_key": pay["task_key"],
            "actions": self.actions,
            "idle_turns": self.idle_turns,
            "invalid_actions": self.invalid,
            "issues": dict(self.issues),
            "syntax": self.syntax,
        }

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        """The expert's next command (in the played syntax) for the agent role; `look` once the
        walkthrough is used up. Other roles have no reference here."""
        if role != "agent" or self._game is None:
            return None
        cmd = self.walkthrough[self._wt] if self._wt < len(self.walkthrough) else "look"
        return Decision(tool_calls=[ToolCall(name=ACT, arguments={"command": cmd}, id=f"{ACT}-{self.actions + 1}")])
