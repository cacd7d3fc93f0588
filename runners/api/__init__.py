"""The contracts every method, benchmark and backbone speaks.

This package is the one thing a newcomer must read before adding a method or a benchmark. Its
names are re-exported here from small private modules (read them in this order):

- `_roles`: `Role` (who a call is for) and `method_tokens` (the one definition of #Tok);
- `_backbone`: `Backbone`, `Completion`, `Usage`, `BackboneError`, `Message`;
- `_decision`: `Decision`, `ToolCall`, `ToolSpec`, `Protocol` (a method's output format), `Parsed`;
- `_views`: `StepSeries`, `StepView` (what a method's step log offers the report and plots), `read_path`;
- `_task`: `Request`, `Observation`, `TaskView`, `Environment`, `Method`, `RequestOutcome`;
- `_benchmark`: `TaskSpec`, `EpisodeContext`, `Benchmark`, `MetricSpec` (how the tables treat a metric);
- `_lazy`: `JsonlTasks` (a JSONL file's tasks, indexed once and parsed one at a time: what
  `load_tasks` may return for a large data set), `task_ids`, `tasks_by_id`.

Everything is plain data (pydantic) or an abstract base class; no I/O (but `JsonlTasks`, which reads its file).

Data flow of one episode (FlowState Algorithm 1 shape, generalised):

    env = benchmark.make_env(task, ctx)            # gold labels stay inside env
    method.begin_task(env.view())
    while (request := await env.next_request()):   # q_1..q_K
        method.begin_request(request)
        obs = Observation()                        # O_{k,1} = ∅
        for t in range(budget):
            decision = await method.step(obs)      # build context → model → parse
            reply = await env.act(decision)        # act → observe
            if reply.request_done: break
            obs = reply.observation
        outcome = await env.end_request()          # scores q_k, gives memory text
        await method.end_request(outcome)
    scores = await env.score_task()
"""

from runners.api._backbone import Backbone, BackboneError, CaseError, Completion, Message, RetryEvent, Usage
from runners.api._benchmark import (
    Benchmark,
    BenchmarkParams,
    EpisodeContext,
    EpisodeRow,
    MetricKind,
    Metrics,
    MetricSpec,
    TaskSpec,
    check_params,
    find_spec,
    params_model,
)
from runners.api._lazy import JsonlTasks, task_ids, tasks_by_id
from runners.api._decision import DROPPED_MESSAGE, Decision, Parsed, Protocol, ProtocolError, ToolCall, ToolSpec
from runners.api._views import LogPath, StepSeries, StepView, read_path
from runners.api._missing import Missing, missing_modules
from runners.api._roles import BENCHMARK_ROLES, METHOD_ROLES, Role, method_tokens
from runners.api._task import (
    Environment,
    EpisodeScope,
    Method,
    Observation,
    Oracle,
    Reply,
    Request,
    RequestOutcome,
    Scores,
    TaskKinds,
    TaskView,
    ToolResult,
    actions_json,
    register_task_kinds,
    task_kinds,
)

__all__ = [
    "BENCHMARK_ROLES",
    "DROPPED_MESSAGE",
    "METHOD_ROLES",
    "Backbone",
    "BackboneError",
    "Benchmark",
    "BenchmarkParams",
    "CaseError",
    "Completion",
    "Decision",
    "JsonlTasks",
    "LogPath",
    "Environment",
    "EpisodeContext",
    "EpisodeRow",
    "EpisodeScope",
    "Message",
    "Method",
    "MetricKind",
    "MetricSpec",
    "Metrics",
    "Observation",
    "Oracle",
    "Parsed",
    "Protocol",
    "ProtocolError",
    "Reply",
    "Request",
    "RequestOutcome",
    "RetryEvent",
    "Role",
    "Scores",
    "StepSeries",
    "StepView",
    "TaskKinds",
    "TaskSpec",
    "TaskView",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "actions_json",
    "check_params",
    "find_spec",
    "method_tokens",
    "params_model",
    "read_path",
    "register_task_kinds",
    "task_ids",
    "task_kinds",
    "tasks_by_id",
    "Missing",
    "missing_modules",
]
