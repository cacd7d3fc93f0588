"""MemoryArena Formal Reasoning (Math, Physics): each paper's lemma chain is a task, each
subtask a request; later subtasks may reuse earlier results. The judge is the whole
environment, plus upstream's `reasoning` tool (a separate LLM call, role `tool`)
(docs/memoryarena.md §2.3, §3.3, §4 Formal, §5.2)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from benchmarks.memoryarena import metrics as ma_metrics
from benchmarks.memoryarena.judge import judge, judge_prompts, scripted_equivalent
from benchmarks.memoryarena.loader import read_tasks, resolve
from kit.trajectory import json_text
from runners.api import (
    BenchmarkParams,
    EpisodeRow,
    Metrics,
    DROPPED_MESSAGE,
    Benchmark,
    Decision,
    Environment,
    EpisodeContext,
    JsonlTasks,
    Message,
    MetricSpec,
    Observation,
    Reply,
    Request,
    RequestOutcome,
    TaskSpec,
    TaskView,
    ToolResult,
    ToolSpec,
)
from runners.upstream import TextSources, UpstreamFile, py_function_strings

MATH_AGENT = UpstreamFile("MemoryArena", "agent/math.py")
# The task policy, the `reasoning` tool and its prompts are upstream MathAgent's, read at run time
# (`formal_prompts`); POLICY, REASONING_TOOL, REASONING_SYSTEM and REASONING_USER are the project's own
# wording, used (and recorded as paraphrase) only when the pinned file is unavailable.

POLICY = (
    "You are solving a chain of formal-reasoning subtasks taken from one research paper. Each request "
    "gives a BACKGROUND section and a PROBLEM. Later problems may reuse results established in earlier "
    "ones. Give the final answer as a single mathematical expression or statement in the assistant message."
)
NO_BACKGROUND = "No background information is provided for this problem."
REASONING_TOOL = ToolSpec(
    name="reasoning",
    description="Ask a careful solver to work through a problem step by step, check itself, and state a final answer.",
    parameters={
        "type": "object",
        "properties": {"input": {"type": "string", "description": "the problem and anything the solver needs"}},
        "required": ["input"],
    },
)
REASONING_SYSTEM = (
    "Solve the problem carefully, step by step. Check your work, then state the final answer clearly on the last line."
)
REASONING_USER = "{task}"


def formal_prompts(sources: TextSources) -> dict[str, Any]:
    """Policy (MathAgent's system prompt), the `reasoning` tool spec, the tool's system prompt and user
    template (MathAgent._reasoning_with_errors), the judge prompts (MathEnvironment.judge)."""
    tool = sources.literal("reasoning_tool.spec", MATH_AGENT, "MathAgent._act_with_tools.tools", None, (0, "function"))
    return {
        "policy": sources.string("policy", MATH_AGENT, "MathAgent._act_with_tools.system_prompt", POLICY),
        "tool": ToolSpec(**tool) if isinstance(tool, dict) else REASONING_TOOL,
        "tool_system": sources.literal(
            "reasoning_tool.system",
            MATH_AGENT,
            "MathAgent._reasoning_with_errors.messages",
            REASONING_SYSTEM,
            (0, "content"),
        ),
        "tool_user": sources.fstring(
            "reasoning_tool.user", MATH_AGENT, "MathAgent._reasoning_with_errors.prompt", REASONING_USER
        ),
        "judge": judge_prompts(sources),
        "final_call": final_call_text(sources),
    }


FINAL_CALL = (
    "Now give the final answer, using the results of the reasoning tool so far. Do not call a tool. Write only the "
    "final solution that is to be checked."
)
"""Our wording of upstream MathAgent's forced final call (used only when the pinned file is unavailable)."""


def final_call_text(sources: TextSources) -> str:
    """The user message upstream MathAgent._act_with_tools appends after its tool iterations for one
    last call without tools (read at run time from the pinned agent/math.py)."""
    found = [
        t for t in (py_function_strings(MATH_AGENT, "MathAgent._act_with_tools") or []) if t.startswith("Use the prior")
    ]
    return sources.use(
        "final_call", MATH_AGENT, found[0] if len(found) == 1 else None, FINAL_CALL, symbol="MathAgent._act_with_tools"
    )


def request_text(background: str, question: str) -> str:
    return f"### BACKGROUND:\n{background.strip() or NO_BACKGROUND}\n\n### PROBLEM:\n{question.strip()}"


KINDS = {"formal_reasoning_math": "formal_math", "formal_reasoning_phys": "formal_phys"}  # TaskView.kind per config


class FormalEnv(Environment):
    def __init__(
        self, task: TaskSpec, ctx: EpisodeContext, params: dict[str, Any], prompts: dict[str, Any] | None = None
    ) -> None:
        self.task, self.ctx, self.params = task, ctx, params
        self.prompts = prompts or formal_prompts(TextSources())
        row = task.payload
        self.requests = [
            Request(index=i, request_id=f"{task.task_id}/q{i + 1}", text=request_text(b or "", q))
            for i, (b, q) in enumerate(zip(row["backgrounds"], row["questions"]))
        ]
        self.k = -1
        self.correct: list[int] = []
        self.judge_replies: list[str] = []
        self.answers: list[str | None] = []
        self._final: str | None = None
        self._trace: list[dict[str, Any]] = []
        self._judging: tuple[str, str] | None = None

    def view(self) -> TaskView:
        tools = [self.prompts["tool"]] if self.params["reasoning_tool"] else []
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.params["name"],
            policy=self.prompts["policy"],
            tools=tools,
            kind=KINDS[self.params["config"]],
            initial_memory=["Initial result: Empty"],
        )

    def step_budget(self) -> int:
        # Upstream MathAgent: at most 3 tool iterations, then a final answer.
        return int(self.params["max_tool_iterations"]) + 1

    async def next_request(self) -> Request | None:
        self.k += 1
        self._final, self._trace = None, []
        self._turns, self._final_call = 0, False
        return self.requests[self.k] if self.k < len(self.requests) else None

    async def act(self, decision: Decision) -> Reply:
        """Upstream MathAgent's loop: up to `max_tool_iterations` turns that act; the reply to the
        last of them carries upstream's forced-final message, and the next decision is the final
        call: tools are not run there, its message (or text written beside ignored tool calls) is
        the answer, and the request ends. [harness choice] upstream also jumps to the final call
        after a turn with neither tool call nor text; here such a turn (e.g. FlowState's state-only
        step) counts as one of the iterations. `forced_final: false` = the budget without that call."""
        if self.params["forced_final"]:
            self._turns += 1
            if self._final_call:
                if decision.tool_calls:
                    self._trace.append(
                        {
                            "forced_final": "tool calls at the final call were not run",
                            "calls": [c.name for c in decision.tool_calls],
                        }
                    )
                answer = decision.message if decision.message is not None else decision.extras.get(DROPPED_MESSAGE)
                self._final = answer
                return Reply(request_done=True)
            if decision.message is None and self._turns >= int(self.params["max_tool_iterations"]):
                reply = await self._act(decision) if decision.tool_calls else Reply()
                self._final_call = True
                obs = reply.observation
                return Reply(
                    observation=Observation(
                        tool_results=obs.tool_results,
                        user_message=obs.user_message,
                        note="\n".join(x for x in (obs.note, self.prompts["final_call"]) if x),
                    )
                )
        return await self._act(decision)

    async def _act(self, decision: Decision) -> Reply:
        if decision.tool_calls:
            results = []
            for call in decision.tool_calls:
                content, error = await self._tool(call.name, call.arguments)
                results.append(ToolResult(call_id=call.id or call.name, name=call.name, content=content, error=error))
                self._trace.append({"name": call.name, "arguments": call.arguments, "result": content})
            return Reply(observation=Observation(tool_results=results))
        if decision.message is not None:
            self._final = decision.message
            return Reply(request_done=True)
        return Reply()

    async def _tool(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        if name != "reasoning" or not self.params["reasoning_tool"]:
            return f"Unknown tool '{name}'. Available: reasoning.", True
        text = str(args.get("input", ""))
        if not text.strip():
            return "The reasoning tool needs a non-empty 'input'.", True
        msgs: list[Message] = [
            {"role": "system", "content": self.prompts["tool_system"]},
            {"role": "user", "content": self.prompts["tool_user"].format(task=text)},
        ]
        out = ""
        for attempt in range(3):  # upstream retries up to 3 times on empty output
            c = await self.ctx.backbone("tool").complete(msgs, role="tool", attempt=attempt)
            out = c.text
            if out.strip():
                break
        return out, False

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        row, k = self.task.payload, self.k
        gold, question = row["answers"][k], row["questions"][k]
        answer = self._final
        # The forced final call ends the request; if it gave no answer the budget ran out all the same.
        truncated = truncated or (self._final_call and not (answer or "").strip())
        ok, reply = False, ""
        if answer is not None and answer.strip():
            self._judging = (answer, gold)
            ok, reply = await judge(
                self.ctx.backbone("judge"),
                answer=answer,
                gold=gold,
                question=question if self.params["judge_includes_question"] else None,
                strict=self.params["strict_verdict"],
                prompts=self.prompts["judge"],
                **self.params["judge_sampling"],
            )
            self._judging = None
        self.correct.append(int(ok))
        self.judge_replies.append(reply)
        self.answers.append(answer)
        memory = (
            f"## Task:\n{question}\n## solution:\n{answer if answer is not None else ''}\n"
            f"## Tool Calls Info:\n{json_text(self._trace)}"
        )
        return RequestOutcome(
            request=self.requests[k], final_response=answer, steps=steps, truncated=truncated, memory_text=memory
        )

    async def score_task(self) -> dict[str, Any]:
        n = len(self.correct)
        return {
            "subtask_correct": self.correct,
            "success": int(bool(n) and bool(self.correct[-1])),  # SR: last subtask correct
            "progress": sum(self.correct) / n if n else 0.0,
            "answers": self.answers,
            "judge_replies": self.judge_replies,
        }

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        if role == "judge" and self._judging is not None:
            return Decision(message="yes" if scripted_equivalent(*self._judging) else "no")
        if role in ("agent", "tool") and 0 <= self.k < len(self.requests):
            return Decision(message=self.task.payload["answers"][self.k])
        return None


class FormalParams(BenchmarkParams):
    """conf/benchmark/memoryarena_{math,phys}.yaml documents each key."""

    config: Literal["formal_reasoning_math", "formal_reasoning_phys"]
    data_dir: str | None = None
    reasoning_tool: bool = True
    max_tool_iterations: int = Field(3, ge=0)
    forced_final: bool = True
    judge_includes_question: bool = False
    strict_verdict: bool = False
    judge_sampling: dict[str, Any] = Field(default_factory=dict)


class FormalReasoning(Benchmark):
    task_kinds = {
        "formal_math": "MemoryArena Formal Reasoning, math: chained derivations, one answer per subtask",
        "formal_phys": "MemoryArena Formal Reasoning, physics",
    }
    Params = FormalParams
    roles = ("judge", "tool")
    metric_specs = (MetricSpec(name="SR", table=True), MetricSpec(name="PS", table=True), *ma_metrics.DEPTH_SPECS)

    def __init__(
        self, *, name: str, config: str, data_dir: str | None = None, limit: int | None = None, **params: Any
    ) -> None:
        super().__init__(name=name, config=config, data_dir=data_dir, limit=limit, **params)
        self.name, self.config, self.data_dir, self.limit = name, config, data_dir, limit
        self._prov: dict[str, Any] = {}
        self.sources = TextSources()
        self.prompts = formal_prompts(self.sources)

    def load_tasks(self) -> JsonlTasks:
        """The file's tasks, read lazily (`runners.api.JsonlTasks`): every row checked now, each
        parsed again when its episode starts (a large file is not held in memory)."""
        path, self._prov = resolve(self.config, self.data_dir)

        def aligned(r: dict[str, Any]) -> None:
            if not (len(r["backgrounds"]) == len(r["questions"]) == len(r["answers"])):
                raise ValueError(f"{path}: task {r.get('id')} has unaligned backgrounds/questions/answers")

        return read_tasks(
            path,
            lambda r: f"{self.config}-{r['id']}",
            required=("id", "backgrounds", "questions", "answers"),
            check=aligned,
            limit=self.limit,
        )

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return FormalEnv(task, ctx, self.params, self.prompts)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        correct = [e["scores"]["subtask_correct"] for e in episodes]
        out = {
            "SR": ma_metrics.success_rate([e["scores"]["success"] for e in episodes]),
            "PS": ma_metrics.progress_macro(correct),
        }
        out.update(ma_metrics.depth_metrics(correct))
        return out

    def notes(self) -> dict[str, Any]:
        return {"data": self._prov, "text_sources": self.sources.as_manifest()}
