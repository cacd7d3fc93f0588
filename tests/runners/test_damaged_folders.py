"""Damaged and foreign things in an experiment folder, through the command lines users run: a
truncated compacted records file is named with what it held (aggregate, view, paper) and re-run
on resume; a symlinked copy of a cell counts once; names that are not UTF-8 never crash the
sweep's end or the readers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from tests.runners.sweep_helpers import REPO, run_sweep

ARGS = ("method=full_context", "benchmark=toy", "experiment.name=exp", "runner.trials=4")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("finished")
    p = run_sweep(out, *ARGS)
    assert p.returncode == 0, p.stderr[-2000:]
    return out


@pytest.fixture
def experiment(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "out", symlinks=True)
    root = tmp_path / "out" / "exp"
    (cell,) = [d for d in root.iterdir() if (d / "manifest.json").exists()]
    return tmp_path / "out", root, cell


def reader(name: str, root) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"runners.{name}", str(root)], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_a_truncated_records_file_is_named_by_every_reader_and_rerun_on_resume(experiment):
    out, root, cell = experiment
    import json

    listed = len(json.loads((cell / "episodes.index.json").read_text())["done"])
    zst = cell / "episodes.jsonl.zst"
    data = zst.read_bytes()
    zst.write_bytes(data[: len(data) // 3])
    for name in ("aggregate", "view", "paper"):
        p = reader(name, root)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (name, p.stderr[-2000:])
        said = [line for line in p.stderr.splitlines() if "episodes.jsonl.zst is damaged" in line]
        assert said and f"{cell.name}: episodes.jsonl.zst is damaged" in said[0], (name, p.stderr)
        assert (
            f"its index lists {listed} finished episodes" in said[0] and "run the same sweep command again" in said[0]
        )
    p = run_sweep(out, *ARGS)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "episodes.jsonl.zst was damaged" in p.stderr + p.stdout
    assert f"{listed}/{listed} episodes" in p.stdout  # what could not be read back ran again
    assert list(cell.glob("episodes.damaged-*.jsonl.zst"))
    again = reader("aggregate", root)
    assert "damaged" not in again.stderr and "[partial]" not in again.stdout


def test_a_symlinked_copy_of_a_cell_counts_once(experiment):
    out, root, cell = experiment
    (root / "copy_of_cell").symlink_to(cell.name)
    p = reader("aggregate", root)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("| full_context") == 1, p.stdout
    assert f"copy_of_cell is another name of {cell.name} (a symlink): counted once" in p.stderr


def test_names_that_are_not_utf8_never_crash_the_sweep_end_or_the_readers(experiment):
    out, root, cell = experiment
    os.mkdir(os.fsencode(root) + b"/old\xffcopy")
    shutil.copy(cell / "manifest.json", os.fsencode(root) + b"/old\xffcopy/manifest.json")
    (cell / "notes\udcfe.txt").write_bytes(b"a file a user left in the cell")
    for name in ("aggregate", "view"):
        p = reader(name, root)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (name, p.stderr[-2000:])
        assert "'old\\xffcopy' is not a UTF-8 name: ignored" in p.stderr, name
    s = run_sweep(out, *ARGS)  # a resume with nothing to run: its end writes the tables
    assert s.returncode == 0 and "Traceback" not in s.stderr, s.stderr[-2000:]
    assert "is not a UTF-8 name" in s.stdout + s.stderr
