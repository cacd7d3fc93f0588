"""Walkthrough command: play each game's stored expert walkthrough through the harness
environment (`AlfworldEnv.reference` → `AlfworldEnv.act`) and print one JSON line per game,
then a summary line. Exit status 0 iff every played game is won.

    python -m benchmarks.alfworld.replay --data DIR --split valid_unseen [--limit N]
        [--syntax native|put] [--jobs N] [--game ID ...]

Spec reference: all 134 valid_unseen walkthroughs win in both syntaxes (docs/alfworld.md §1, §4.3);
about 6 min for the whole split on 2 cores, one process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from runners.api import EpisodeContext, TaskSpec


async def play(task: TaskSpec, settings: dict[str, Any]) -> dict[str, Any]:
    """Replay one game's walkthrough; at most one try per walkthrough command, within the budget."""
    from benchmarks.alfworld.env import AlfworldEnv

    env = AlfworldEnv(task, EpisodeContext(), settings)
    await env.next_request()
    budget, steps, done = min(env.step_budget(), len(env.walkthrough)), 0, env.won
    while steps < budget and not done:
        decision = env.reference("agent", [])
        assert decision is not None
        reply = await env.act(decision)
        steps += 1
        done = reply.request_done
    await env.end_request(truncated=not done, steps=steps)
    scores = await env.score_task()
    row = {
        "game": task.task_id,
        "task_type": scores["task_type"],
        "won": bool(scores["won"]),
        "steps": scores["actions"],
    }
    if not env.walkthrough:
        row["error"] = "game file has no walkthrough (v2.1.1 format)"
    elif scores["invalid_actions"]:
        row["invalid_actions"] = scores["invalid_actions"]
    return row


def _play_sync(task: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    t = TaskSpec.model_validate(task)
    try:
        return asyncio.run(play(t, settings))
    except Exception as e:  # one broken game must not hide the others' results
        return {
            "game": t.task_id,
            "task_type": t.payload["task_type"],
            "won": False,
            "steps": 0,
            "error": f"{type(e).__name__}: {e}",
        }


def _rows(tasks: list[TaskSpec], settings: dict[str, Any], jobs: int) -> Iterator[dict[str, Any]]:
    if jobs <= 1:
        for t in tasks:
            yield _play_sync(t.model_dump(), settings)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_play_sync, [t.model_dump() for t in tasks], [settings] * len(tasks))


def summary(rows: list[dict[str, Any]], *, split: str, wall_s: float) -> dict[str, Any]:
    per: dict[str, list[int]] = {}
    for r in rows:
        won_n = per.setdefault(r["task_type"], [0, 0])
        won_n[0] += int(r["won"])
        won_n[1] += 1
    won = sum(int(r["won"]) for r in rows)
    return {
        "summary": True,
        "split": split,
        "games": len(rows),
        "won": won,
        "success_rate": 100.0 * won / len(rows) if rows else None,
        "per_type": {t: {"won": w, "n": n} for t, (w, n) in sorted(per.items())},
        "errors": sum(1 for r in rows if "error" in r),
        "wall_s": round(wall_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=None, help="data root holding json_2.1.1/<split>/ (default: $ALFWORLD_DATA)")
    ap.add_argument("--split", default="valid_unseen")
    ap.add_argument("--limit", type=int, default=None, help="play only the first N games (sorted ids)")
    ap.add_argument("--game", action="append", default=None, help="play only this game id (repeatable)")
    ap.add_argument(
        "--syntax", choices=("native", "put"), default="native", help="place syntax (put = ReAct-era patch)"
    )
    ap.add_argument("--verify", choices=("auto", "strict", "off"), default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="games played in parallel processes")
    # Parse before any game loads: fast-downward overwrites sys.argv (docs/alfworld.md pitfall 1).
    args = ap.parse_args(argv)

    from benchmarks.alfworld.benchmark import Alfworld

    bench = Alfworld(data_dir=args.data, split=args.split, verify=args.verify, syntax=args.syntax)
    try:
        tasks = bench.load_tasks()
    except (OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.game:
        unknown = set(args.game) - {t.task_id for t in tasks}
        if unknown:
            print(
                f"error: unknown game ids {sorted(unknown)}; ids look like <task folder>/<trial folder>",
                file=sys.stderr,
            )
            return 2
        tasks = [t for t in tasks if t.task_id in set(args.game)]
    tasks = tasks[: args.limit] if args.limit else tasks
    t0 = time.perf_counter()
    rows = []
    for row in _rows(tasks, {"name": bench.name, **bench.settings}, args.jobs):
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps(summary(rows, split=args.split, wall_s=time.perf_counter() - t0)), flush=True)
    return 0 if rows and all(r["won"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
