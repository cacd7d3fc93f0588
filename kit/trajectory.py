"""The interaction trajectory as methods without explicit state see it (`trajectory_history`
in FlowState App. B.3): requests, each step's action and the observation it produced."""

from __future__ import annotations

import json
from typing import Any

import orjson

from runners.api import Decision, Observation, Request, RequestOutcome
from runners.tokens import count


QUERY_LINE = 1
"""Index of a request's `User query:` line (after its heading)."""

_std_json_text = json.JSONEncoder(ensure_ascii=False).encode


class _Other(Exception):
    """A value `json_text` leaves to the standard library's encoder."""


def _json_parts(v: Any, out: list[str]) -> None:
    t = type(v)
    if t is str:
        out.append(orjson.dumps(v).decode())  # the standard library's escapes, every code point (a test)
    elif t is dict:
        if not v:
            out.append("{}")
            return
        sep = "{"
        for k, x in v.items():
            if type(k) is not str:
                raise _Other
            out += (sep, orjson.dumps(k).decode(), ": ")
            _json_parts(x, out)
            sep = ", "
        out.append("}")
    elif t is list:
        if not v:
            out.append("[]")
            return
        sep = "["
        for x in v:
            out.append(sep)
            _json_parts(x, out)
            sep = ", "
        out.append("]")
    elif v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif t is int:
        out.append(int.__repr__(v))
    else:  # floats (NaN, repr), tuples, subclasses, non-str keys: as the standard library writes them
        raise _Other


def json_text(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)`, the same text: dicts with str keys, lists, str, int,
    bool and None are laid out here with the standard separators and each string escaped by orjson
    (~10x the standard library's C escaping on the tool inputs and results of a step, a few KB);
    anything else (floats, tuples, subclasses, non-str keys, lone surrogates, cycles) goes to the
    standard library's encoder."""
    out: list[str] = []
    try:
        _json_parts(value, out)
    except (_Other, TypeError, RecursionError):  # orjson.JSONEncodeError is a TypeError (lone surrogates)
        return _std_json_text(value)
    return "".join(out)


class Trajectory:
    """`repeat_current_query`: whether the request in progress shows its `User query:` line too.
    B.3 puts the current request in `<user_query>`, and does not say the history repeats it;
    the default (False) shows it once, there. True = the history also carries it (the earlier
    layout: the current query twice in every prompt). Past requests always keep their query."""

    def __init__(self, *, repeat_current_query: bool = True) -> None:
        self.requests: list[list[str]] = []  # per request: its lines
        self.repeat_current_query = repeat_current_query
        self.open = False  # a request has begun and not ended

    def begin(self, request: Request) -> None:
        self.requests.append([f"## Request {request.index + 1} ({request.request_id})", f"User query: {request.text}"])
        self.open = True

    def observe(self, obs: Observation) -> None:
        if not obs.is_empty and self.requests:
            self.requests[-1].append(
                f"Observation: {obs.as_text(actions=False)}"
            )  # the valid actions are current-turn only

    def act(self, decision: Decision, step: int) -> None:
        if not self.requests:
            return
        if decision.tool_calls:
            calls = json_text([{"name": c.name, "arguments": c.arguments} for c in decision.tool_calls])
            self.requests[-1].append(f"Step {step} action: tool_calls {calls}")
        elif decision.message is not None:
            self.requests[-1].append(f"Step {step} action: assistant_message {json_text(decision.message)}")
        else:
            self.requests[-1].append(f"Step {step} action: none")

    def end(self, outcome: RequestOutcome) -> None:
        self.open = False
        if self.requests:
            self.requests[-1].append(
                f"Final response: {outcome.final_response if outcome.final_response is not None else '(none)'}"
            )

    def render(self, *, current_only: bool = False, max_tokens: int | None = None) -> tuple[str, bool]:
        """Text of the trajectory; with `max_tokens`, the oldest whole lines are dropped until it
        fits (returns whether anything was dropped)."""
        reqs = self.requests[-1:] if current_only else self.requests
        if reqs and self.open and not self.repeat_current_query:  # the current query is in <user_query> only
            reqs = [*reqs[:-1], [line for i, line in enumerate(reqs[-1]) if i != QUERY_LINE]]
        lines = [line for r in reqs for line in r]
        truncated = False
        if max_tokens is not None:
            while lines and count("\n".join(lines)) > max_tokens:
                lines.pop(0)
                truncated = True
        return "\n".join(lines), truncated
