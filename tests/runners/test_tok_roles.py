"""#Tok counts method-side roles only (a judge or user simulator never enters it), and tables show
#Tok with and without the `tool` role (MemoryArena's reasoning tool), saying which matches the paper."""

from __future__ import annotations

import json

from runners.analysis.cells import summarize
from runners.analysis.units import TOK_NOTE, tok_without_tool
from runners.analysis.tables import aggregate_dir

USAGE = {
    "agent": {"prompt_tokens": 1_000_000, "completion_tokens": 0},
    "tool": {"prompt_tokens": 200_000, "completion_tokens": 50_000},
    "judge": {"prompt_tokens": 7_000_000, "completion_tokens": 0},
    "user_sim": {"prompt_tokens": 3_000_000, "completion_tokens": 0},
}


def write_cell(root, name, method, usage):
    d = root / name
    d.mkdir(parents=True)
    cfg = {
        "method": {"name": method},
        "backbone": {"name": "deepseek_v4_flash"},
        "benchmark": {
            "name": "memoryarena_math",
            "_target_": "benchmarks.memoryarena.formal.FormalReasoning",
            "params": {"config": "formal_reasoning_math", "data_dir": "fixtures"},
        },
    }
    (d / "manifest.json").write_text(json.dumps({"config": cfg, "scripted": False, "n_tasks": 1, "trials": 1}))
    rec = {
        "task_id": "t",
        "trial": 0,
        "status": "ok",
        "usage_by_role": usage,
        "scores": {"subtask_correct": [1], "success": 1},
    }
    (d / "episodes.jsonl").write_text(json.dumps(rec) + "\n")
    return d


def test_tok_is_method_side_only_and_tok_without_tool_drops_the_tool(tmp_path):
    c = summarize(write_cell(tmp_path, "full_context__x__memoryarena_math__a", "full_context", USAGE))
    assert c.metrics["Tok"] == 1.25  # agent + tool; judge (7M) and user simulator (3M) are not in #Tok
    assert c.metrics["Tok_no_tool"] == 1.0 == tok_without_tool(c.tokens_by_role) / 1e6
    assert c.table_metrics[-2:] == ["Tok", "Tok_no_tool"]


def test_table_shows_both_and_says_which_matches_the_paper(tmp_path, capsys):
    write_cell(tmp_path, "full_context__x__memoryarena_math__a", "full_context", USAGE)
    no_tool = {k: v for k, v in USAGE.items() if k != "tool"}
    write_cell(tmp_path, "flowstate__x__memoryarena_math__b", "flowstate", no_tool)
    aggregate_dir(tmp_path, with_paper=False)
    md = (tmp_path / "tables" / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Method"))
    assert "memoryarena_math:Tok |" in header and "memoryarena_math:Tok_no_tool" in header
    assert TOK_NOTE in md and "matches the paper" in TOK_NOTE
    assert "-20.00%" in md  # flowstate Tok 1.0 vs full_context 1.25


def test_no_tool_calls_no_extra_column(tmp_path):
    c = summarize(write_cell(tmp_path, "c__x__memoryarena_math__a", "full_context", {"agent": USAGE["agent"]}))
    assert "Tok_no_tool" not in c.metrics and c.table_metrics[-1] == "Tok"


def test_tok_without_tool_delta_is_relative_like_tok(tmp_path):
    """Both token totals get a relative Δ: flowstate's 0.5 M agent tokens (Tok_no_tool 0.5) against
    full_context's 1.0 M is −50 %, not −0.50."""
    write_cell(tmp_path, "full_context__x__memoryarena_math__a", "full_context", USAGE)  # Tok 1.25, Tok_no_tool 1.0
    half = {
        "agent": {"prompt_tokens": 500_000, "completion_tokens": 0},
        "tool": USAGE["tool"],
    }  # Tok 0.75, Tok_no_tool 0.5
    write_cell(tmp_path, "flowstate__x__memoryarena_math__b", "flowstate", half)
    long = aggregate_dir(tmp_path, with_paper=False)
    deltas = {
        r["metric"]: r["value"] for r in long if r["method"] == "flowstate" and r["metric"].startswith("delta_Tok")
    }
    assert deltas == {"delta_Tok": -40.0, "delta_Tok_no_tool": -50.0}
    md = (tmp_path / "tables" / "summary.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Method"))
    row = next(line for line in md.splitlines() if "Δ vs full_context" in line)
    cols = [c.strip() for c in header.strip("|").split("|")]
    vals = [c.strip() for c in row.strip("|").split("|")]
    assert vals[cols.index("memoryarena_math:Tok")] == "-40.00%"
    assert vals[cols.index("memoryarena_math:Tok_no_tool")] == "-50.00%"
