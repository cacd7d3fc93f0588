"""`make perf`'s whole-process goals are read from scripts/perf/README.md, their one copy."""

from __future__ import annotations

import re

import pytest

from scripts.perf.run_all import long_goals


def test_the_readme_goal_table_is_read_whole():
    rows = long_goals()
    assert len(rows) >= 5
    for goal, measured, command, load, date in rows:
        assert goal and measured and command.startswith(("python", "/usr/bin/time")) and load
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), date


def test_a_readme_without_the_table_names_the_fix(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Performance benchmarks\n\n## Another section\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    with pytest.raises(SystemExit, match="no table under '## Whole-process goals'"):
        long_goals(readme)


def test_rows_stop_at_the_next_section(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(
        "## Whole-process goals\n\n| goal | measured | command | load | date |\n|---|---|---|---:|---|\n"
        "| g | m | `python -m x` | 1.0 | 2026-12-06 |\n\n## Later\n\n| h | n | `python -m y` | 2.0 | 2026-12-07 |\n"
    )
    assert long_goals(readme) == [["g", "m", "python -m x", "1.0", "2026-12-06"]]
