"""Harness CPU per call of whole episodes without HTTP: the tail workload (Full Context on
12-call memoryarena_math-shaped episodes, `scripts/perf/tail.py`) run in one process as real
`runners.episode.Episode`s, the agent, tool and judge calls going through `RecordingBackbone(
OpenAIBackbone)` with the transport replaced by an in-process reply (what `ShapedEndpoint`
answers, as a JSON body with usage). What is measured is the episode loop, Full Context's prompts,
the reply reader, the environment and the judge, and the recording and OpenAI backbones' own work
per call; not the HTTP client (scripts/perf/transport.py), the records' storage, the transcripts
thread or the scheduler (all in `tail`). The stand-in endpoint's own CPU (building the reply) is
timed apart and subtracted. Between `scripts.perf.recorder` (one call shape, no method) and `tail`
(the whole process, noisy on a shared machine).

`--against DIR` also measures the harness checked out at DIR: every repeat runs both, each in a
fresh process, alternating which goes first; the medians and their ratio are printed.

Run: `.venv/bin/python -m scripts.perf.episode_path [--episodes 384] [--concurrency 128] [--repeats 5]
[--against DIR]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from scripts.perf import checkout
from scripts.perf.recorder import Delayed, in_process_backbone


def shaped_reply(w: dict[str, Any]) -> Any:
    """`answer(body)` → the `Reply` `ShapedEndpoint` gives to the request `body` of workload `w`
    (its `reply_json`: the same JSON body, usage included), built in this process (no server)."""
    from runners.backbones.openai import Reply
    from scripts.perf.inspect_compare import ShapedEndpoint

    endpoint = ShapedEndpoint(w, 0.0, 1500)  # never started: only its replies

    def answer(body: bytes) -> Reply:
        return Reply(200, {"content-type": "application/json"}, orjson.dumps(endpoint.reply_json(json.loads(body))))

    return answer


async def us_per_call(
    episodes: int, concurrency: int, data_dir: Path, w: dict[str, Any], latency: float = 0.0
) -> tuple[float, int]:
    """(harness CPU µs per call, calls) of `episodes` episodes, `concurrency` at a time, after one
    untimed round of `concurrency` episodes (imports, first-call caches); each reply is given
    `latency` seconds after its request (0: in the next turn of the loop)."""
    import yaml

    from baselines.full_context import FullContext
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.backbones.openai import Reply
    from runners.episode import Episode

    answer = shaped_reply(w)
    stand_in = [0.0]  # CPU seconds the stand-in endpoint spent building replies
    delayed = Delayed(latency)

    async def post(url: str, body: bytes) -> Reply:
        c0 = time.process_time()
        out = answer(body)
        stand_in[0] += time.process_time() - c0
        return await delayed.reply(out)  # a real reply arrives in a later turn of the loop

    bb = in_process_backbone(post, {}, max(concurrency, 32))
    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir=str(data_dir))
    tasks = bench.load_tasks()
    params = yaml.safe_load((Path(checkout.location()) / "conf/method/full_context.yaml").read_text())["params"]
    calls = [0]
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            task = tasks[i]
            ep = Episode(bb, cell="perf", task_id=task.task_id, trial=0, seed=i)
            rec = await ep.run(ep.make_env(bench, task), FullContext(backbone=ep.agent, **params))
            if rec.status != "ok":
                raise RuntimeError(f"{task.task_id}: {rec.status} {rec.error}")
            calls[0] += sum(rec.calls_by_role.values())

    await asyncio.gather(*(one(i) for i in range(min(concurrency, episodes))))
    calls[0], stand_in[0] = 0, 0.0
    c0 = time.process_time()
    await asyncio.gather(*(one(i) for i in range(episodes)))
    cpu = time.process_time() - c0 - stand_in[0]
    return cpu / calls[0] * 1e6, calls[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=384)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--against", metavar="DIR", help="also measure the harness checked out at DIR, alternating with this one"
    )
    ap.add_argument("--harness", metavar="DIR", help=argparse.SUPPRESS)  # import runners.* from DIR (a child)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.harness:
        checkout.use(a.harness)
    if a.json:
        from scripts.perf.inspect_compare import workload

        w = workload(a.episodes, 3000)
        root = Path(tempfile.mkdtemp(prefix="perf-episode-path-"))
        try:
            (root / "formal_reasoning_math").mkdir()
            rows = "".join(json.dumps(r) + "\n" for r in w["rows"])
            (root / "formal_reasoning_math" / "data.jsonl").write_text(rows)
            us, calls = asyncio.run(us_per_call(a.episodes, a.concurrency, root, w))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        print(json.dumps({"harness": checkout.location(), "us": us, "calls": calls}))
        return
    checkout.compare(
        "scripts.perf.episode_path",
        ["--episodes", str(a.episodes), "--concurrency", str(a.concurrency)],
        a.repeats,
        a.against,
        f"harness CPU per call of whole episodes without HTTP ({a.episodes} episodes, {a.concurrency} at a time)",
    )


if __name__ == "__main__":
    main()
