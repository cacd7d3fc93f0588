"""Pure text rules of ALFWorld play (no engine): ReAct's observation clean-ups, the engine's
exact-match command rule, and the in-memory patch to ReAct-era `put … in/on …` syntax
(docs/alfworld.md §3.2, §4.1, §4.3, §7)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

THINK_OK = "OK."

_NAMED_ARRIVAL = re.compile(r"^You arrive at [^.]+\. ")
_MOVE = re.compile(r"^move (.+?) to (.+)$")

# v2.1.2+ → v2.1.1 grammar patch (docs/alfworld.md §4.3). Both PutObject and
# PutEmptyReceptacleObjectinReceptacle use the `move` template.
PUT_PATCHES = (
    ('template :: "move {o} to {r}";', 'template :: "put {o} in/on {r}";', 2),
    ('"rhs": "You move the {o.name} to the {r.name}."', '"rhs": "You put the {o.name} in/on the {r.name}."', 1),
)
_HELP_MOVE = re.compile(r"^(\s*)move \(object\) to \(receptacle\):\s*", re.M)


def initial_observation(feedback: str) -> str:
    """ReAct's first observation: split the reset feedback on blank lines, drop the banner
    (`-= Welcome to TextWorld, ALFRED! =-`) and join the rest with single newlines."""
    return "\n".join(feedback.split("\n\n")[1:])


TASK_MARKER = "Your task is to:"


def task_sentence(observation: str) -> str | None:
    """The task sentence of a reset observation: the text after `Your task is to:` (upstream PoS
    adapter `_task_from_observation`), or None when the marker is absent."""
    head, marker, rest = observation.partition(TASK_MARKER)
    return rest.strip() or None if marker else None


def clean_observation(observation: str, action: str, *, strip_named_arrival: bool = True, think_ok: bool = True) -> str:
    """ReAct `process_ob` plus its think rule (docs/alfworld.md §4.1 step 3, §4.3):
    - a leading `You arrive at loc N. ` (v2.1.1 text) is dropped through the first `. `;
    - with `strip_named_arrival` (harness choice) a leading `You arrive at <receptacle>. `
      (v2.1.2+ text; receptacle names hold no `.`) is dropped too, giving ReAct-identical text;
    - with `think_ok`, the observation of an action starting `think:` becomes `OK.`."""
    if think_ok and action.strip().startswith("think:"):
        return THINK_OK
    if observation.startswith("You arrive at loc "):
        return observation[observation.find(". ") + 2 :]
    if strip_named_arrival:
        return _NAMED_ARRIVAL.sub("", observation, count=1)
    return observation


Issue = Literal["empty", "think", "multi_line", "prompt_prefix", "case", "not_admissible"]


@dataclass(frozen=True)
class CommandMatch:
    """How a model's command relates to the admissible commands.
    `command`: the string handed to the engine; `admissible`: whether it is one of them;
    `issue`: why the raw text was not admissible as written (None when it was)."""

    command: str
    admissible: bool
    issue: Issue | None = None


def _normalise(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    return " ".join(first.strip().lstrip(">").split()).rstrip(".").casefold()


def diagnose(raw: str, admissible: list[str]) -> Issue:
    """Why `raw` is not admissible (pitfall 8: one line, no leading `>`, exact case; a ReAct
    `think:` step is its own, deliberate kind)."""
    text = raw.strip()
    if not text:
        return "empty"
    if text.startswith("think:"):
        return "think"
    if "\n" in text:
        return "multi_line"
    if text.startswith(">"):
        return "prompt_prefix"
    if any(a.casefold() == text.casefold() for a in admissible):
        return "case"
    return "not_admissible"


def match_command(raw: str, admissible: list[str], *, lenient: bool = False) -> CommandMatch:
    """The engine's rule (docs/alfworld.md §3.2): a command acts only if it equals an admissible
    string exactly after `.strip()`; anything else yields `Nothing happens.`. With `lenient`
    (harness choice, off by default) the first non-empty line is taken, a leading `>`, extra
    spaces, a trailing `.` and case are ignored, and the matching admissible string is sent
    instead; the issue is still recorded."""
    text = raw.strip()
    if text in admissible:
        return CommandMatch(command=text, admissible=True)
    issue = diagnose(raw, admissible)
    if lenient:
        key = _normalise(raw)
        for a in admissible:
            if a.casefold() == key:
                return CommandMatch(command=a, admissible=True, issue=issue)
    return CommandMatch(command=text, admissible=False, issue=issue)


def grammar_syntax(grammar: str) -> Literal["move", "put"]:
    """Which place-command syntax a game's grammar uses: v2.1.2+ `move {o} to {r}` or v2.1.1 `put {o} in/on {r}`."""
    return "move" if PUT_PATCHES[0][0] in grammar else "put"


def patch_grammar_put(grammar: str) -> str:
    """Rewrite a v2.1.2+ grammar to ReAct-era syntax (docs/alfworld.md §4.3): the two `move {o} to {r}`
    templates become `put {o} in/on {r}`, the PutObject feedback becomes `You put the o in/on the r.`,
    and the `help` line names `put`. A v2.1.1 grammar is returned unchanged."""
    if grammar_syntax(grammar) == "put":
        return grammar
    for old, new, n in PUT_PATCHES:
        if grammar.count(old) != n:
            raise ValueError(
                f"cannot patch ALFWorld grammar to put-syntax: expected {n}× {old!r}; set syntax='native' for this data"
            )
        grammar = grammar.replace(old, new)
    return _HELP_MOVE.sub(lambda m: f"{m.group(1)}put (object) in/on (receptacle): ", grammar)


def move_to_put(command: str) -> str:
    """Translate a v2.1.2+ `move o to r` command to v2.1.1 `put o in/on r`; other commands unchanged."""
    m = _MOVE.match(command.strip())
    return f"put {m.group(1)} in/on {m.group(2)}" if m else command
