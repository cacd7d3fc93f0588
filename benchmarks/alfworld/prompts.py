"""What every method is told about ALFWorld: the task policy and the single `act` tool.

Harness choice (docs/alfworld.md §4.3 leaves it open): the agent acts through one tool, `act`, with
one text command per call, because every method here speaks tool calls; a plain assistant
message can also be played as the command (`message_as_command`, ReAct's plain-text action).
The command list follows the game's place syntax (`move o to r`, or `put o in/on r` when the
put patch is on) so the two syntaxes are never mixed (docs/alfworld.md §4.3, pitfall 3).
"""

from __future__ import annotations

from runners.api import ToolSpec

ACT = "act"

_COMMANDS = (
    "go to (receptacle)",
    "open (receptacle)",
    "close (receptacle)",
    "take (object) from (receptacle)",
    "{place}",
    "examine (object or receptacle)",
    "use (object)",
    "heat (object) with (receptacle)",
    "clean (object) with (receptacle)",
    "cool (object) with (receptacle)",
    "slice (object) with (object)",
    "look",
    "inventory",
    "help",
)
_PLACE = {"move": "move (object) to (receptacle)", "put": "put (object) in/on (receptacle)"}
_EXAMPLE = {"move": "move mug 2 to shelf 1", "put": "put mug 2 in/on shelf 1"}


def command_list(syntax: str) -> list[str]:
    """Command templates in the game's place syntax (`move` or `put`)."""
    return [c.format(place=_PLACE[syntax]) for c in _COMMANDS]


def policy(syntax: str, max_steps: int) -> str:
    lines = "\n".join(f"- {c}" for c in command_list(syntax))
    return (
        "You are in a simulated household. The request describes the room and ends with your task. "
        f"Complete it by acting in the household with the `{ACT}` tool, one text command per step. "
        f"You have at most {max_steps} steps. The episode ends by itself as soon as the task is done; "
        "there is no final answer to write.\n"
        "Commands, with (object) and (receptacle) replaced by names exactly as observations show them, "
        "number included (for example `desk 1`, `mug 2`):\n"
        f"{lines}\n"
        "A command works only when it matches a valid command exactly: lower case, one line, nothing "
        'added. Any other text changes nothing, the game answers "Nothing happens.", and the step is '
        "still spent."
    )


def act_tool(syntax: str) -> ToolSpec:
    return ToolSpec(
        name=ACT,
        description=(
            "Perform one action in the household and see what happens. Costs one step. "
            f"Examples: `go to desk 1`, `take mug 2 from desk 1`, `{_EXAMPLE[syntax]}`, "
            "`heat apple 1 with microwave 1`."
        ),
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string", "description": "one command, exactly as the policy lists it"}},
            "required": ["command"],
        },
    )
