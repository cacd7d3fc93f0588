"""`python -m benchmarks.alfworld.check`: upstream's layout check (134 valid_unseen games, the
ALFRED logic files) plus the loader's manifest check, on the shared copy and a damaged one."""

from __future__ import annotations

import json
import shutil

from benchmarks.alfworld.check import main
from tests.alfworld.conftest import needs_engine


@needs_engine
def test_shared_layout_is_complete(alf_root, capsys):
    assert main(["--data", str(alf_root)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["game_files"] == report["playable"] == 134 and report["logic"] and not report["problems"]


def test_missing_game_is_reported(alf_root, tmp_path, capsys):
    split = tmp_path / "json_2.1.1" / "valid_unseen"
    first = sorted((alf_root / "json_2.1.1" / "valid_unseen").iterdir())[:2]
    for task in first:
        shutil.copytree(task, split / task.name)
    assert main(["--data", str(tmp_path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any("expected 134" in p for p in report["problems"]) and any("found" in p for p in report["problems"])
