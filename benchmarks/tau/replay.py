"""Gold replay: run each task's gold actions on a fresh environment and print one JSON line per
task with every output and the final normalized DB hash (docs/tau-bench.md §9).

    python -m benchmarks.tau.replay --domain airline --data-dir ../shared/data/tau2 --split base

Tool error messages come from the pinned tau2 toolkit (benchmarks/tau/errors.py); without it the
project's wording is used and a `warning:` line on stderr says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from benchmarks.tau import errors
from benchmarks.tau.data import DOMAINS, DataError, DomainData, load_domain
from benchmarks.tau.domains import toolkit_for
from benchmarks.tau.toolkit import db_hash
from runners.upstream import TextSources


def gold_actions(task: dict[str, Any]) -> list[dict[str, Any]]:
    crit = task.get("evaluation_criteria") or {}
    return list(crit.get("actions") or [])


def replay_task(data: DomainData, task: dict[str, Any]) -> dict[str, Any]:
    """Execute the gold actions in order on a fresh DB; errors are recorded, not raised (§7.1)."""
    tools = toolkit_for(data.domain)(data.fresh_db())
    outputs = []
    for action in gold_actions(task):
        content, error = tools.execute(action["name"], action.get("arguments") or {})
        outputs.append({"name": action["name"], "error": error, "content": content})
    return {"task_id": task["id"], "final_db_hash": db_hash(tools.db), "outputs": outputs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--domain", required=True, choices=DOMAINS)
    ap.add_argument("--data-dir", default=None, help="τ² data directory (default: $TAU2_DATA_DIR, else download)")
    ap.add_argument("--split", default="base")
    ap.add_argument("--task", action="append", help="only these task ids (repeatable)")
    a = ap.parse_args(argv)
    try:
        data = load_domain(a.domain, a.data_dir)
        tasks = data.split(a.split)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    sources = TextSources()
    errors.record(a.domain, sources)
    if sources.paraphrased:  # the tool errors will be the project's wording, not the official outputs
        why = sources.entries["tools.errors"].get("reason", "")
        print(
            f"warning: the pinned tau2 toolkit of {a.domain} is unavailable ({why}); the tool error messages in these "
            "outputs are the project's wording, so replays that hit an error differ from the official outputs. "
            "Fix: set HARNESS_UPSTREAM_DIR to a folder holding the pinned tau2-bench sources (or allow the download).",
            file=sys.stderr,
            flush=True,
        )
    for task in tasks:
        if a.task and task["id"] not in a.task:
            continue
        print(json.dumps(replay_task(data, task)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
