"""What a method's step log offers the report and the plots, declared on the method class
(`Method.step_series`, `Method.step_views`): the analysis layer draws these and never matches
method names or knows a method's log keys.

A *path* names a value in a step's method log (`Method.step_log()`, stored as the step's
`method`): dot-separated keys (`health.health_score`); where a key meets a list, the path takes
the list's last element in which the rest of the path has a value (`actions.health` = the health
of the last action that logged one). A tuple of paths is tried in order. `read_path` is the one
reader; the report's script follows the same rule."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

LogPath = str | tuple[str, ...]
"""A path, or paths tried in order."""


def read_path(log: Any, path: LogPath) -> Any:
    """The value `path` names in `log` (see the module docstring), or None."""
    if isinstance(path, tuple):
        for p in path:
            v = read_path(log, p)
            if v is not None:
                return v
        return None
    return _read(log, path.split(".") if path else [])


def _read(value: Any, keys: list[str]) -> Any:
    if not keys:
        return value
    if isinstance(value, list):
        for item in reversed(value):
            v = _read(item, keys)
            if v is not None:
                return v
        return None
    if isinstance(value, dict):
        return _read(value.get(keys[0]), keys[1:])
    return None


class StepSeries(BaseModel):
    """A number per step (e.g. PoS's progress health H) drawn over steps, one line per episode:
    a plot in the report (`#plot-<name>`) and `tables/<name>.svg|png` with `--plots`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="an identifier: the plot's file and element name")
    path: LogPath = Field(description="the number in the step's method log")
    title: str
    axis: str = Field(description="the y axis label")
    low: float | None = Field(None, description="the y axis range, where fixed")
    high: float | None = None
    threshold: float | None = Field(None, description="a horizontal line (e.g. the trapping threshold)")


ViewKind = Literal["state_graph", "step_table", "items"]


class StepView(BaseModel):
    """A panel of the report's episode page built from the steps' method logs. `fields` maps the
    renderer's slots to paths; the slots per kind:

    - `state_graph`: `ops` (list of operations `{state_id, operation, state_set, summary, refs}`
      applied in order; `delete`/`remove` drop a node), `rejected` (list of `{index, op, reason}`),
      `disclosed` (node ids shown this step), `persisted` (node ids persisted this step),
      `boundary` (a path in the *request's* method log: ids persisted at the request's end);
    - `step_table`: every slot is a column (slot = header, value = path; a boolean column shows
      its header when true); `details` lists (title, path) blocks shown for the clicked step;
    - `items`: `items` (a list of texts per step, shown for steps that have it).

    The panel is shown for an episode when some step (or request) has a value for one of its paths."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ViewKind
    name: str = Field(description="an identifier: the panel's element id")
    title: str
    fields: dict[str, LogPath] = Field(default_factory=dict)
    details: tuple[tuple[str, LogPath], ...] = ()
