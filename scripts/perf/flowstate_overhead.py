"""FlowState performance (run: `python -m scripts.perf.flowstate_overhead`).

1. Per-step FlowState overhead outside the backbone (Validate_upd + Validate_acc + Commit +
   Disclose + Serialize) at 10 / 100 / 1,000 / 10,000 repository nodes: median and p90 in ms.
2. Prompt tokens per agent step for Full Context and FlowState on the same scripted trajectory
   (the scripted backbone makes both take the same actions), and the ratio of totals."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from flowstate.method import FlowState
from flowstate.repository import ActiveState, Repository
from flowstate.state import Node, Relation, StateType
from runners.api import Backbone, Completion, Decision, Message, Protocol, Request, Role, TaskView, ToolSpec

TASK = TaskView(
    task_id="perf",
    benchmark="perf",
    policy="Synthetic policy.",
    tools=[ToolSpec(name="search", description="look something up")],
)


class _Unused(Backbone):
    async def complete(
        self,
        messages: list[Message],
        *,
        role: Role,
        protocol: Protocol | None = None,
        attempt: int = 0,  # pragma: no cover
        **sampling: Any,
    ) -> Completion:
        return Completion(text="", role=role, model="none")


def synthetic_repository(n_nodes: int, per_request: int = 10) -> Repository:
    """A repository of `n_nodes` persisted states in requests of `per_request`, each state
    ref'ing the previous one (built directly; Persist semantics are tested elsewhere)."""
    repo = Repository()
    for k in range(max(1, n_nodes // per_request)):
        qid = f"q{k + 1}"
        states, prev = [], None
        for i in range(min(per_request, n_nodes - k * per_request)):
            sid = f"s{k + 1}_{i}"
            refs = (Relation(rel="follows", state_id=prev),) if prev else ()
            states.append(
                Node(
                    state_id=sid,
                    request=qid,
                    type=StateType.knowledge,
                    summary=f"fact {i} of request {k + 1}",
                    value={"i": i, "text": "x" * 40},
                    refs=refs,
                )
            )
            prev = sid
        repo.persist(qid, f"synthetic request {k + 1}", states, {})
    return repo


def step_overhead(n_nodes: int, reps: int = 200) -> tuple[float, float]:
    """(median, p90) milliseconds of one step's FlowState work at `n_nodes` repository nodes."""
    m = FlowState(_Unused(), log_tokens=False)
    asyncio.run(m.begin_task(TASK))
    m.repo = synthetic_repository(n_nodes)
    asyncio.run(m.begin_request(Request(index=0, request_id="perf/q", text="perf request")))
    hist = [n.state_id for n in m.repo.historical_states()]
    times = []
    for r in range(reps):
        m.active = ActiveState(m.query_id)
        for j in range(5):  # a small current Active State
            m.active.current[f"cur{j}"] = Node(
                state_id=f"cur{j}", request=m.query_id, type=StateType.judgements, summary="c", value=j
            )
        delta = [
            {
                "state_set": "knowledge",
                "operation": "add",
                "state_id": f"new{r}",
                "summary": "n",
                "value": {"r": r},
                "refs": [{"rel": "derives", "state_id": hist[r % len(hist)]}],
            },
            {"operation": "update", "state_id": "cur0", "summary": "updated"},
            {"operation": "remove", "state_id": "cur1"},
        ]
        focus = [{"target_id": hist[(r * 7) % len(hist)], "reason": "r"}, {"target_id": "ghost", "reason": "r"}]
        d = Decision(extras={"state_delta": delta, "state_focus": focus})
        t0 = time.perf_counter()
        m.messages("[obs-1-1-0] search -> result")
        m.apply(d)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


async def token_curves() -> dict[str, list[int]]:
    """Agent prompt tokens per step (episodes concatenated) on the Formal Reasoning fixture."""
    from baselines.full_context import FullContext
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.backbones.scripted import ScriptedBackbone
    from runners.episode import Episode

    bench = FormalReasoning(name="memoryarena_math", config="formal_reasoning_math", data_dir="fixtures")
    curves: dict[str, list[int]] = {}
    for name, cls in (("full_context", FullContext), ("flowstate", FlowState)):
        bb, curve = ScriptedBackbone(), []
        for task in bench.load_tasks():
            ep = Episode(bb, cell="perf", task_id=task.task_id)
            rec = await ep.run(ep.make_env(bench, task), cls(ep.agent))
            curve += [
                c.usage.prompt_tokens for rr in rec.requests for s in rr.steps for c in s.calls if c.role == "agent"
            ]
        curves[name] = curve
    return curves


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 100, 1000, 10000])
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args(argv)
    print("repository_nodes  median_ms  p90_ms")
    for n in args.sizes:
        med, p90 = step_overhead(n, args.reps)
        print(f"{n:>16}  {med:9.3f}  {p90:6.3f}")
    curves = asyncio.run(token_curves())
    print("\nagent prompt tokens per step (same scripted actions)")
    print("step  full_context  flowstate")
    for i, (a, b) in enumerate(zip(curves["full_context"], curves["flowstate"]), start=1):
        print(f"{i:>4}  {a:>12}  {b:>9}")
    fc, fs = sum(curves["full_context"]), sum(curves["flowstate"])
    print(f"total: full_context={fc} flowstate={fs} ratio flowstate/full_context={fs / fc:.3f}")


if __name__ == "__main__":
    main()
