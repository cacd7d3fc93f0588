"""Toy: price questions over a four-item catalogue, two requests per task (the second needs the
first's item again). One tool, `price`; the answer is a number. The environment is its own
oracle: the scripted backbone looks each price up, then answers (docs/toy-benchmark.md)."""

from __future__ import annotations

from typing import Any

from runners.api import (
    Benchmark,
    BenchmarkParams,
    Decision,
    Environment,
    EpisodeContext,
    EpisodeRow,
    Message,
    Metrics,
    MetricSpec,
    Observation,
    Reply,
    Request,
    RequestOutcome,
    TaskSpec,
    TaskView,
    ToolCall,
    ToolResult,
    ToolSpec,
)

PRICES = {"apple": 3, "bread": 5, "cheese": 7, "dates": 11}
TASKS = [("apple", "bread"), ("cheese", "apple"), ("dates", "cheese"), ("bread", "dates")]
PRICE_TOOL = ToolSpec(
    name="price",
    description="The price of one catalogue item.",
    parameters={"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
)


class ToyEnv(Environment):
    def __init__(self, task: TaskSpec, name: str) -> None:
        self.task, self.name = task, name
        a, b = task.payload["items"]
        self.questions = [(f"What does one {a} cost?", [a]), (f"What do one {a} and one {b} cost together?", [a, b])]
        self.k = -1  # the current request
        self.correct: list[int] = []  # per request: 1 = right
        self.looked_up: set[str] = set()  # items priced during the current request (the oracle's state)
        self.answer: str | None = None

    def view(self) -> TaskView:
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.name,
            kind="toy",
            tools=[PRICE_TOOL],
            policy="Answer each question with a number only. Use the `price` tool to look prices up.",
        )

    async def next_request(self) -> Request | None:
        self.k, self.looked_up, self.answer = self.k + 1, set(), None
        if self.k == len(self.questions):
            return None
        self.request = Request(
            index=self.k, request_id=f"{self.task.task_id}/q{self.k + 1}", text=self.questions[self.k][0]
        )
        return self.request

    async def act(self, decision: Decision) -> Reply:
        results = []
        for call in decision.tool_calls:
            item = str(call.arguments.get("item", ""))
            self.looked_up.add(item)
            text, bad = (
                (str(PRICES[item]), False) if item in PRICES else (f"unknown item; items: {', '.join(PRICES)}", True)
            )
            results.append(ToolResult(call_id=call.id or item, name=call.name, content=text, error=bad))
        if decision.message is not None and not results:
            self.answer = decision.message.strip()
            return Reply(request_done=True)
        return Reply(observation=Observation(tool_results=results))

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        gold = sum(PRICES[i] for i in self.questions[self.k][1])
        self.correct.append(int(self.answer == str(gold)))
        return RequestOutcome(
            request=self.request,
            final_response=self.answer,
            steps=steps,
            truncated=truncated,
            memory_text=f"Q: {self.request.text} A: {self.answer}",
        )

    async def score_task(self) -> dict[str, Any]:
        return {"subtask_correct": self.correct, "success": all(self.correct)}

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        if role != "agent" or not 0 <= self.k < len(self.questions):
            return None
        missing = [i for i in self.questions[self.k][1] if i not in self.looked_up]
        if missing:
            return Decision(
                tool_calls=[ToolCall(name="price", arguments={"item": missing[0]}, id=f"c{len(self.looked_up)}")]
            )
        return Decision(message=str(sum(PRICES[i] for i in self.questions[self.k][1])))


class Toy(Benchmark):
    task_kinds = {"toy": "the template benchmark (benchmarks/toy): price look-ups over a tiny catalogue"}
    Params = BenchmarkParams  # only `limit`; a benchmark with settings subclasses BenchmarkParams
    metric_specs = (
        MetricSpec(name="SR", label="success rate", table=True),
        MetricSpec(name="subtask_accuracy"),
        MetricSpec(name="n", kind="count"),
    )

    def load_tasks(self) -> list[TaskSpec]:
        tasks = [TaskSpec(task_id=f"toy-{i}", payload={"items": list(t)}) for i, t in enumerate(TASKS)]
        return tasks[: self.params["limit"]] if self.params["limit"] else tasks

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return ToyEnv(task, self.name)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        scores = [e["scores"] for e in episodes if e.get("scores")]
        subtasks = [c for s in scores for c in s["subtask_correct"]]
        return {
            "SR": 100.0 * sum(bool(s["success"]) for s in scores) / len(scores) if scores else None,
            "subtask_accuracy": 100.0 * sum(subtasks) / len(subtasks) if subtasks else None,
            "n": float(len(scores)),
        }
