"""Full Context and the memory baselines show the current request once, in `<user_query>` (B.3 does
not say `<trajectory_history>` repeats it); `repeat_query_in_history=true` restores the doubled
layout. Checked on the messages a scripted sweep sent (runners.records.results): the current
request's text is in `<user_query>` and not in the history; earlier requests stay in it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.runners.sweep_helpers import REPO
from tests.upstream_texts import cell_calls


def blocks(text: str) -> dict[str, str]:
    return dict(re.findall(r"<(trajectory_history|user_query)>\n(.*?)\n</\1>", text, re.DOTALL))


@pytest.mark.parametrize("repeat", [False, True])
def test_current_query_once_or_twice(tmp_path, repeat):
    cmd = [
        sys.executable,
        "-m",
        "runners.sweep",
        "++experiment.grid.method=[full_context,bm25]",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.limit=1",
        f"runner.output_dir={tmp_path}",
        "runner.display=none",
        "experiment.name=q",
        f"++method.params.repeat_query_in_history={str(repeat).lower()}",
    ]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    cells = sorted((tmp_path / "q").glob("*__scripted__*"))
    assert len(cells) == 2
    for cell in cells:
        agent = [c for c in cell_calls(cell, "agent")]
        later = 0
        for call in agent:
            b = blocks(call.messages[-1]["content"])
            query, history = b["user_query"], b["trajectory_history"]
            assert (f"User query: {query}" in history) is repeat, (cell.name, history[-500:])
            later += history.count("User query: ") > 0
        if cell.name.startswith("full_context"):  # the memory baselines' history is the current request's only
            assert later, "no prompt showed an earlier request in its history"
