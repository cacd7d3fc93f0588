"""The provenance map (runners/provenance.py): every character of a sent message gets exactly one
source; on a scripted ClinDiag sweep, an upstream text read from the pinned file is labelled as its
key, the project-wording switch raises the project's share, and a cell whose fallback wording was sent
keeps its [paraphrased] mark while one that sent none loses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runners.provenance import Sources, cell_map, label_text, shares, template_pieces
from tests.conftest import UPSTREAM_SRC
from tests.runners.sweep_helpers import REPO, run_sweep

ENV = "benchmarks/clindiag_env.py"


def covers_once(text: str, spans: list[dict]) -> bool:
    pos = 0
    for s in spans:
        if s["start"] != pos or s["end"] <= s["start"]:
            return False
        pos = s["end"]
    return pos == len(text)


def test_longest_source_wins_and_the_rest_is_project_wording():
    src = Sources()
    src.add("upstream:a", template_pieces("You are a careful {role}. Answer briefly."))
    src.add("task", ["careful doctor"])
    text = "Intro: You are a careful doctor. Answer briefly. Bye"
    spans = label_text(text, src)
    assert covers_once(text, spans)
    got = [(text[s["start"] : s["end"]], s["label"]) for s in spans]
    assert got == [
        ("Intro: ", "project"),
        ("You are a careful ", "upstream:a"),  # the template's literal piece before {role}
        ("doctor", "project"),  # "careful doctor" overlaps a longer piece already labelled: not taken
        (". Answer briefly.", "upstream:a"),
        (" Bye", "project"),
    ]


def test_doubled_braces_are_literal_and_short_pieces_are_not_matched():
    assert template_pieces('Reply {{"a": {x}}} now') == ['Reply {{"a": {x}}} now', 'Reply {"a": ', "} now"]
    src = Sources()
    src.add("task", ["short", "a longer task phrase"])
    assert "short" not in src.labels and "a longer task phrase" in src.labels


def test_share_per_method_and_benchmark_weighs_cells_by_characters():
    cells = [
        {"method": "m", "benchmark": "b", "chars": {"project": 10, "upstream:x": 30}},
        {"method": "m", "benchmark": "b", "chars": {"project:y": 50, "task": 10}},
        {"method": "n", "benchmark": "b", "chars": {}},
    ]
    assert shares(cells) == {("m", "b"): 0.6, ("n", "b"): None}


def _sweep(out: Path, *overrides: str, env: dict | None = None) -> Path:
    proc = run_sweep(
        out,
        "benchmark=clindiag",
        "experiment.grid.method=[full_context]",
        "runner.display=none",
        *overrides,
        env={"PYTHONPATH": str(REPO), **(env or {})},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return next(out.glob("*/full_context__scripted__clindiag*/"))


def _provenance_cli(env: dict, *args: str) -> list:
    """`python -m runners.provenance ... --json` as a user runs it: its parsed output."""
    proc = subprocess.run(
        [sys.executable, "-m", "runners.provenance", *args, "--json"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _spans_cover(cm) -> None:
    assert cm.calls
    for msgs in cm.calls.values():
        for m in msgs:
            assert covers_once(m["text"], m["spans"])


def test_upstream_texts_are_labelled_and_project_switch_raises_the_share(tmp_path, monkeypatch):
    if not UPSTREAM_SRC.is_dir():
        pytest.skip(f"shared upstream sources not found at {UPSTREAM_SRC} (set HARNESS_SHARED_DATA)")
    from tests.upstream_texts import upstream_constant

    judge_system = upstream_constant("PoS", ENV, "JUDGE_SYSTEM_PROMPT")  # read independently of the loaders
    cell = _sweep(tmp_path / "up")
    cm = cell_map(cell)
    _spans_cover(cm)
    judged = [m for msgs in cm.calls.values() for m in msgs if m["text"] == judge_system]
    assert judged, "no call sent the release's judge system prompt"
    for m in judged:
        assert [(s["start"], s["end"], s["label"]) for s in m["spans"]] == [
            (0, len(judge_system), "upstream:judge.system")
        ]
    up_share = cm.project_share()
    own = cell_map(_sweep(tmp_path / "own", "method.params.policy_prompt=project", "benchmark.params.adapter=project"))
    _spans_cover(own)
    assert own.project_share() > 0
    assert up_share < own.project_share()
    assert not any(k.startswith("project:") for k in cm.totals())  # every text was read: no fallback sent


def test_fallback_wording_is_labelled_and_drives_the_paraphrased_mark(tmp_path):
    """Without the pinned files every text is the project's fallback: its spans are `project:<key>`, the
    stored summary lists them as sent, and the tables keep the cell [paraphrased]; a summary listing none
    lifts the mark (it is derived from what was sent, not from what could have been)."""
    env = {"HARNESS_UPSTREAM_DIR": str(tmp_path / "none"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.update(HARNESS_UPSTREAM_OFFLINE="1")
    cell = _sweep(tmp_path / "fb", env=env)
    (summary,) = _provenance_cli(env, str(cell.parent), "--write")
    assert summary["paraphrased_sent"] and summary["project_share"] > 0
    assert (summary["method"], summary["benchmark"]) == ("full_context", "clindiag")
    assert not any(k.startswith("upstream:") for k in summary["chars"])
    assert "judge.system" in summary["paraphrased_sent"]
    assert json.loads((cell / "provenance.json").read_text()) == summary

    from runners.analysis.cells import paraphrased_prompts, summarize

    every = paraphrased_prompts(json.loads((cell / "manifest.json").read_text()))
    marked = summarize(cell).paraphrased
    assert "benchmark:judge.system" in marked and set(marked) <= set(every)
    assert "method:pos.policy_repair" in set(every) - set(marked)  # a clean scripted run sends no repair turn
    from runners.analysis.report import gather

    (shown,) = gather(cell.parent)[0]["cells"]  # the report's cells table shows the stored share
    assert shown["project_share"] == summary["project_share"]
    stored = {**summary, "paraphrased_sent": []}
    (cell / "provenance.json").write_text(json.dumps(stored))
    assert summarize(cell).paraphrased == []
    (cell / "provenance.json").write_text(json.dumps({**stored, "n_episodes": summary["n_episodes"] + 1}))
    assert summarize(cell).paraphrased == every  # a stale summary is not used: every listed key marks

    if UPSTREAM_SRC.is_dir():  # read with the pinned copies, the texts differ from the run's: refused, named
        proc = subprocess.run(
            [sys.executable, "-m", "runners.provenance", str(cell)],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO), **env, "HARNESS_UPSTREAM_DIR": str(UPSTREAM_SRC)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and "differ from those the cell ran on" in proc.stderr, proc.stderr[-2000:]
        assert "HARNESS_UPSTREAM_DIR" in proc.stderr

    (one,) = _provenance_cli(env, str(cell), "--call", "90000001/0/0")
    assert list(one["calls"]) == ["90000001/0/0"]
    labels = {s["label"] for m in one["calls"]["90000001/0/0"] for s in m["spans"]}
    assert "task" in labels and any(lab.startswith("project:") for lab in labels)


def test_a_sharded_cell_is_read_through_its_shards(tmp_path):
    env = {"HARNESS_UPSTREAM_DIR": str(tmp_path / "none"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    cell = _sweep(tmp_path / "sh", "runner.shard=0/2", env=env)
    assert not (cell / "manifest.json").exists() and list(cell.glob("shard-*/manifest.json"))
    for where in (cell.parent, cell):  # the experiment, or the cell folder itself
        (summary,) = _provenance_cli(env, str(where))
        assert summary["cell"] == cell.name and summary["calls"] > 0 and summary["n_episodes"] > 0


def test_a_folder_without_a_readable_manifest_names_the_fix(tmp_path):
    from runners.provenance import ProvenanceError, _manifest

    (tmp_path / "cell").mkdir()
    with pytest.raises(ProvenanceError, match="unreadable manifest.*re-run the sweep.*a cell folder"):
        _manifest(tmp_path / "cell")
    (tmp_path / "cell" / "manifest.json").write_text("[1, 2]")
    with pytest.raises(ProvenanceError, match="not a JSON object"):
        _manifest(tmp_path / "cell")
