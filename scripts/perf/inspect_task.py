"""The inspect_ai side of `scripts.perf.inspect_compare`: MemoryArena-math-shaped episodes as an
inspect Task. Runs only inside the comparison's own venv (inspect_ai is never a dependency of the
project; nothing in the project imports this file).

One sample = one episode: for each subtask, the request as a user message, `generate` with the
`reasoning` tool until the model stops calling tools (the tool is itself one model call), then the
equivalence judge as one more model call. With the comparison's endpoint that is 4 calls per
subtask, the same calls the harness's Full Context makes on the same tasks. Every text (policy,
tool description and prompts, judge prompts) comes from the workload file the comparison writes,
which holds the harness's own prompts, so both systems send the same text.

    inspect eval scripts/perf/inspect_task.py -T data=<workload.json> --model openai/fake-model ...
"""

from __future__ import annotations

import json
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef


def reasoning_tool(w: dict) -> ToolDef:
    async def reasoning(input: str) -> str:  # noqa: A002 - the tool's argument name is upstream's
        msgs = [ChatMessageSystem(content=w["tool_system"]), ChatMessageUser(content=w["tool_user"].format(task=input))]
        return (await get_model().generate(msgs)).completion

    spec = w["tool"]
    return ToolDef(
        reasoning,
        name=spec["name"],
        description=spec["description"],
        parameters={k: v["description"] for k, v in spec["parameters"]["properties"].items()},
    )


def prompts(data: str) -> dict:
    return {k: v for k, v in json.loads(Path(data).read_text()).items() if k != "tasks"}


@solver
def math_agent(data: str) -> Solver:
    # the workload path, not its content, is the solver's argument: inspect records solver
    # arguments in the log's header, and the tasks are the dataset's, not the solver's
    w = prompts(data)
    tool = reasoning_tool(w)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = [tool]
        verdicts = []
        for req, gold in zip(state.metadata["requests"], state.metadata["answers"]):
            state.messages.append(ChatMessageUser(content=req))
            state = await generate(state)  # tool calls resolved until the model answers
            answer = state.output.completion
            judge = w["judge_user"].format(query="None", action=answer, ground_truth=gold)
            out = await get_model().generate(
                [ChatMessageSystem(content=w["judge_system"]), ChatMessageUser(content=judge)]
            )
            verdicts.append(int("yes" in out.completion.lower()))
        state.store.set("verdicts", verdicts)
        return state

    return solve


@scorer(metrics=[mean()])
def last_subtask() -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        v = state.store.get("verdicts") or [0]
        return Score(value=v[-1], metadata={"subtask_correct": v})

    return score


@task
def memoryarena_math_shaped(data: str) -> Task:
    w = json.loads(Path(data).read_text())
    samples = [
        Sample(
            id=t["task_id"],
            input=[ChatMessageSystem(content=w["policy"])],
            target=t["answers"][-1],
            metadata={"requests": t["requests"], "answers": t["answers"]},
        )
        for t in w["tasks"]
    ]
    return Task(dataset=MemoryDataset(samples), solver=math_agent(data), scorer=last_subtask())
