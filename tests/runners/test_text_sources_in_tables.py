"""A cell that ran on paraphrased prompts (no pinned upstream text available) says so in its
manifest and is marked in the tables; one that ran on upstream's text is not."""

from __future__ import annotations

import json

import pytest

from runners.analysis.cells import paraphrased_prompts
from tests.conftest import upstream_src
from tests.runners.sweep_helpers import run_sweep

ARGS = (
    "method=full_context",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "runner.limit=1",
    "experiment.name=ts",
)


def test_paraphrased_prompts_reads_benchmark_and_method_notes():
    m = {
        "benchmark_notes": {"text_sources": {"paraphrased": ["policy"]}},
        "method_notes": {"text_sources": {"paraphrased": ["x"]}},
    }
    assert paraphrased_prompts(m) == ["benchmark:policy", "method:x"] and paraphrased_prompts({}) == []


def test_tables_mark_cells_that_ran_paraphrased(tmp_path):
    src = upstream_src()
    b3 = src.parent / "paper-text" / "flowstate_b3.txt"  # Full Context's layout: FlowState App. B.3 (kit/b3.py)
    if not b3.is_file():
        pytest.skip(f"FlowState App. B.3 transcription not found at {b3}")
    p = run_sweep(tmp_path / "up", *ARGS, env={"HARNESS_UPSTREAM_DIR": str(src), "HARNESS_FLOWSTATE_B3": str(b3)})
    assert p.returncode == 0, p.stderr
    assert "[paraphrased]" not in (tmp_path / "up" / "ts" / "tables" / "summary.md").read_text()
    (tmp_path / "empty").mkdir()
    p = run_sweep(
        tmp_path / "off",
        *ARGS,
        env={
            "HARNESS_UPSTREAM_DIR": str(tmp_path / "empty"),
            "XDG_CACHE_HOME": str(tmp_path),
            "HARNESS_UPSTREAM_OFFLINE": "1",
        },
    )
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "off" / "ts" / "tables" / "summary.md").read_text()
    assert "full_context [scripted] [paraphrased]" in md and "benchmark:policy" in md
    manifest = json.loads(next((tmp_path / "off" / "ts").glob("*/manifest.json")).read_text())
    assert manifest["benchmark_notes"]["text_sources"]["prompts"]["policy"]["source"] == "paraphrase"
