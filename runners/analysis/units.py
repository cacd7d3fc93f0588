"""The #Tok unit rule, once for the tables (runners.analysis.tables), the papers' artefacts
(runners.analysis.paper_tables) and the report.

The papers count #Tok as the tokens a method spends on the evaluated backbone: the method-side
roles (`runners.api.method_tokens`) without the `tool` role, which MemoryArena's LLM `reasoning`
tool fills and which upstream runs inside the environment on its own model. Our tables show both
readings (`Tok`, and `Tok_no_tool` where the tool ran); a comparison with the paper reads the
second. The papers report totals over their task sets; a run on a subset compares per task:
`Tok/task` is our mean per episode beside the paper's total / its task count, in thousands."""

from __future__ import annotations

from typing import Any

from runners.api import method_tokens

TOK_PER_TASK = "Tok/task"  # mean method-side tokens per episode, in thousands (what a subset can compare)

TOK_NOTE = (
    "Tok = method-side roles (agent, tool, state, memory, sentinel; judge and user simulator apart); "
    "Tok_no_tool = the same without the `tool` role (MemoryArena's LLM `reasoning` tool, which upstream runs "
    "inside the environment on its own model): Tok_no_tool is the reading that matches the paper's #Tok "
    "(tokens the method spends on the evaluated backbone); both are shown where the tool was called"
)
"""The note under runners.aggregate's tables, which show both readings."""

PAPER_TOK_NOTE = (
    "#Tok leaves out the `tool` role (MemoryArena's LLM reasoning tool, which upstream runs inside the environment "
    "on its own model), the reading that matches the paper's #Tok; runners.aggregate shows both"
)
"""The note under the papers' artefacts (runners.paper), which show the paper's reading only."""


def tok_without_tool(tokens: dict[str, int]) -> int:
    """#Tok without the `tool` role (see TOK_NOTE)."""
    return method_tokens({r: v for r, v in tokens.items() if r != "tool"})


def paper_tok(c: Any) -> float | None:
    """A cell's #Tok (millions) as the papers count it: without the `tool` role where it ran
    (Tok_no_tool), else Tok. `c` is a runners.analysis.cells.CellSummary."""
    v = c.metrics.get("Tok_no_tool")
    return v if v is not None else c.metrics.get("Tok")


def tok_per_task(c: Any) -> float | None:
    """Mean #Tok per episode in millions, as the paper counts #Tok (`paper_tok`), over the
    episodes counted."""
    tok = paper_tok(c)
    return tok / c.n_episodes if tok is not None and c.n_episodes else None


def fmt_tok_per_task(v: float | None) -> str:
    """A Tok/task value (millions per episode, as `tok_per_task`) as the tables print it: thousands."""
    return f"{v * 1000.0:.1f}" if v is not None else "–"


def paper_in_unit(value: str | None, metric: str, tok_scale: float, n_tasks: int | None) -> str | None:
    """A paper's value (`value`, as the reference CSVs print it) in the unit our column shows:
    #Tok (millions in the papers) at the table's scale (`tok_scale`: 1 for millions, 1000 for
    thousands), for `Tok` and `Tok_no_tool` alike; for `Tok/task` the value is the paper's #Tok
    total and `n_tasks` its task count (thousands per task; None without a count)."""
    if not value:
        return value
    if metric == TOK_PER_TASK:
        return f"{float(value) * 1000.0 / n_tasks:.1f}" if n_tasks else None
    if metric.startswith("Tok") and tok_scale != 1.0:
        return f"{float(value) * tok_scale:.1f}"
    return value
