"""MemoryArena Group Travel Planning (docs/memoryarena.md §2.2, §3.2, §4 Travel, §5.1): a group is a
task, each added traveller a request. The base traveller's plan comes first; each traveller's
plan is the request's answer; at most 30 model calls per traveller (upstream `max_steps`)."""

from __future__ import annotations

import os

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from benchmarks.memoryarena import metrics as ma_metrics
from benchmarks.memoryarena import travel_score
from benchmarks.memoryarena.loader import FIXTURES, read_tasks, resolve
from benchmarks.memoryarena.travel_tools import TOOL_SPECS, TravelDB
from runners.api import (
    EpisodeRow,
    Metrics,
    MetricSpec,
    BenchmarkParams,
    Benchmark,
    Decision,
    Environment,
    EpisodeContext,
    JsonlTasks,
    Message,
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
from runners.upstream import TextSources, UpstreamFile, py_literal

TRAVEL_PROMPTS = UpstreamFile("MemoryArena", "env/env_systems/travel_planner_env/prompts.py")
# The task policy (AGENT_SYSTEM_PROMPT), the per-traveller request (AGENT_USER_PROMPT_TEMPLATE) and the
# no-memory base-traveller context (BASE_PERSON_TEMPLATE) are upstream's, read at run time
# (`travel_prompts`). POLICY, REQUEST and BASE_CONTEXT below are the project's own wording, used (and
# recorded as paraphrase) only when the pinned file is unavailable.
REQUEST = "{query}"
BASE_CONTEXT = "Base traveller {base_name}'s request:\n{base_query}\n\nTheir plan:\n{base_plan}"

NAME_RE = re.compile(r"^I am (\w+)\.")
POLICY = """You plan a group trip. Every member shares the base traveller's route and dates; each request comes from \
one new member and says how their plan differs (shared meals or rooms with other members, or choices relative to \
another member's price, rating, cuisine, room type or house rules).
Use the tools to look up flights, restaurants, accommodations, attractions, distances and cities; base every choice on \
tool results. When the plan is complete, reply (without tool calls) with the member's whole plan in exactly this format:
=== <Name>'s Plan ===
Day 1:
Current City: from <origin> to <destination>
Transportation: Flight Number: <F...>, from <A> to <B>, Departure Time: <HH:MM>, Arrival Time: <HH:MM>
Breakfast: <Name>, <City>
Attraction: <Name>, <City>;<Name>, <City>;
Lunch: <Name>, <City>
Dinner: <Name>, <City>
Accommodation: <Name>, <City>
Day 2:
...
Write '-' for anything not needed that day. You may add corrected plans of earlier members as further `=== <Name>'s \
Plan ===` blocks; the last block of each member counts."""


TRAVEL_TOOLS = UpstreamFile("MemoryArena", "env/env_systems/travel_planner_env/tool_schemas.py")


def upstream_tool_specs(schemas: Any) -> list[ToolSpec] | None:
    """Upstream's `TOOLS` list as ToolSpecs, only when it names the same tools with the same required
    arguments as the executor (`TOOL_SPECS`), in the same order; else None (our own descriptions)."""
    try:
        specs = [ToolSpec(**t["function"]) for t in schemas]
    except (TypeError, KeyError, ValueError):
        return None
    same = [(t.name, t.parameters.get("required")) for t in specs] == [
        (t.name, t.parameters["required"]) for t in TOOL_SPECS
    ]
    return specs if same else None


def travel_prompts(sources: TextSources) -> dict[str, Any]:
    tools = upstream_tool_specs(py_literal(TRAVEL_TOOLS, "TOOLS"))
    return {
        "policy": sources.string("policy", TRAVEL_PROMPTS, "AGENT_SYSTEM_PROMPT", POLICY),
        "request": sources.string("request", TRAVEL_PROMPTS, "AGENT_USER_PROMPT_TEMPLATE", REQUEST),
        "base_context": sources.string("base_context", TRAVEL_PROMPTS, "BASE_PERSON_TEMPLATE", BASE_CONTEXT),
        "tools": sources.use("tools", TRAVEL_TOOLS, tools, list(TOOL_SPECS), symbol="TOOLS"),
    }


def traveller_name(question: str) -> str:
    """Upstream: `^I am (\\w+)\\.`, fallback "Person"."""
    m = NAME_RE.match(question.strip())
    return m.group(1) if m else "Person"


class TravelEnv(Environment):
    def __init__(
        self,
        task: TaskSpec,
        ctx: EpisodeContext,
        params: dict[str, Any],
        db: TravelDB,
        prompts: dict[str, str] | None = None,
    ) -> None:
        self.task, self.ctx, self.params, self.db = task, ctx, params, db
        self.prompts = prompts or travel_prompts(TextSources())
        row = task.payload
        self.base = row["base_person"]
        self.names = [traveller_name(q) for q in row["questions"]]
        # upstream run_single_person: AGENT_USER_PROMPT_TEMPLATE.format(name=name, query=query)
        self.requests = [
            Request(
                index=i, request_id=f"{task.task_id}/q{i + 1}", text=self.prompts["request"].format(name=n, query=q)
            )
            for i, (n, q) in enumerate(zip(self.names, row["questions"]))
        ]
        self.base_text = travel_score.format_plan(self.base["name"], self.base["daily_plans"])
        self.k = -1
        self.outputs: list[str] = []
        self._final: str | None = None
        self._scratch: list[dict[str, Any]] = []

    # --------------------------------------------------------------------------- view
    def base_record(self) -> str:
        """First memory chunk (§4 Travel 1)."""
        return json.dumps(
            {
                "name": self.base["name"],
                "query": self.base["query"],
                "is_base_person": True,
                "final_plan": self.base_text,
            },
            ensure_ascii=False,
        )

    def view(self) -> TaskView:
        """Upstream run_travel.py: with a memory system the base traveller reaches the agent only as
        the first memory chunk (`memory_system.add(base_chunk)`); without one, as the base-person
        message after the system prompt (`set_base_person`, BASE_PERSON_TEMPLATE). Here that message
        follows the policy. `base_plan_in_policy`: auto (default) = as upstream, methods that store
        `initial_memory` get `memory_policy` (no base plan); true = every method sees it; false = none."""
        policy = base = self.prompts["policy"]
        mode = self.params["base_plan_in_policy"]
        if mode is not False:
            context = self.prompts["base_context"].format(
                base_name=self.base["name"], base_query=self.base["query"], base_plan=self.base_text
            )
            policy = f"{base}\n\n{context}"
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.params["name"],
            kind="travel",
            policy=policy,
            memory_policy=base if mode == "auto" else None,
            tools=list(self.prompts["tools"]),
            initial_memory=[self.base_record()],
        )

    def step_budget(self) -> int:
        return int(self.params["max_steps"])

    # --------------------------------------------------------------------------- loop
    async def next_request(self) -> Request | None:
        self.k += 1
        self._final, self._scratch = None, []
        return self.requests[self.k] if self.k < len(self.requests) else None

    async def act(self, decision: Decision) -> Reply:
        step: dict[str, Any] = {
            "step_idx": len(self._scratch),
            "thought": decision.extras.get("thought"),
            "final_output": None,
            "tool_calls": None,
            "tool_results": None,
        }
        self._scratch.append(step)
        if decision.tool_calls:
            step["tool_calls"], step["tool_results"], results = [], [], []
            for i, call in enumerate(decision.tool_calls):
                cid = call.id or f"call_{len(self._scratch)}_{i}"
                out, err = self.db.execute(call.name, call.arguments)
                step["tool_calls"].append({"id": cid, "name": call.name, "args": call.arguments})
                step["tool_results"].append({"tool_call_id": cid, "name": call.name, "result": out})
                results.append(ToolResult(call_id=cid, name=call.name, content=out, error=err))
            return Reply(observation=Observation(tool_results=results))
        if decision.message is not None:
            # A reply without tool calls is the plan (upstream agent loop).
            self._final = step["final_output"] = decision.message
            return Reply(request_done=True)
        return Reply(observation=Observation(note="No tool call and no plan: call a tool or reply with the plan."))

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        name, plan = self.names[self.k], self._final or ""  # cap reached → empty plan (upstream)
        if plan and not travel_score.plan_blocks(plan) and self.params["headerless_plan"] == "current":
            # [switch] a plan without any `=== Name's Plan ===` header is this traveller's. Default `ignore` is
            # upstream's reading: `name_plan_pairs.get(name, "")` finds no plan, so the traveller fails.
            plan = f"=== {name}'s Plan ===\n{plan}"
        self.outputs.append(plan)
        # §4 Travel 2: the record holds the agent's raw final output (upstream `final_plan: action`);
        # the header added above only affects scoring.
        memory = json.dumps(
            {
                "name": name,
                "query": self.task.payload["questions"][self.k],
                "scratchpad": self._scratch,
                "final_plan": self._final or "",
            },
            ensure_ascii=False,
            default=str,
        )
        return RequestOutcome(
            request=self.requests[self.k],
            final_response=self._final,
            steps=steps,
            truncated=truncated,
            memory_text=memory,
        )

    def predictions(self) -> list[list[dict[str, Any]] | None]:
        texts = [self.base_text, *self.outputs]
        return [travel_score.parse_days(travel_score.submission(n, texts)) for n in self.names]

    async def score_task(self) -> dict[str, Any]:
        kw = {"prefix_only": self.params["prefix_only"], "threshold": self.params["threshold"]}
        persons = travel_score.score_group(
            self.task.payload["answers"], self.predictions(), self.base["daily_plans"], **kw
        )
        agg = travel_score.aggregate([persons], sr_missing=self.params["sr_missing"])
        return {
            "subtask_correct": [int(p["full_pass"]) for p in persons],
            "success": int(agg["SR"] or 0),
            "progress": agg["PS_group"],
            "sps": agg["sPS"],
            "persons": persons,
            "outputs": self.outputs,
        }

    # --------------------------------------------------------------------------- scripted oracle
    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        if role != "agent" or not 0 <= self.k < len(self.requests):
            return None
        if self.params["scripted_tool_probe"] and not any(s["tool_calls"] for s in self._scratch):
            city = self.base["daily_plans"][0]["current_city"].rsplit(" to ", 1)[-1].strip()
            return Decision(tool_calls=[ToolCall(name="RestaurantSearch", arguments={"city": city}, id="probe")])
        return Decision(message=travel_score.format_plan(self.names[self.k], self.task.payload["answers"][self.k]))


class TravelParams(BenchmarkParams):
    """conf/benchmark/memoryarena_travel.yaml documents each key."""

    data_dir: str | None = None
    db_dir: str | None = None
    flights_path: str | None = None
    max_steps: int = Field(30, ge=1)
    ps_pooling: Literal["group", "persons"] = "group"
    sr_missing: Literal["skip", "fail"] = "skip"
    prefix_only: bool = True
    threshold: float = travel_score.THRESHOLD
    base_plan_in_policy: Literal["auto", True, False] = "auto"
    headerless_plan: Literal["current", "ignore"] = "ignore"
    distance_day_routes: Literal["upstream", "none"] = "upstream"
    scripted_tool_probe: bool = True


class GroupTravel(Benchmark):
    task_kinds = {"travel": "MemoryArena group travel planning (TravelPlanner tools, a JSON plan per person)"}
    Params = TravelParams
    roles = ()
    metric_specs = (
        MetricSpec(name="SR", table=True),
        MetricSpec(name="PS", table=True),
        MetricSpec(name="sPS", table=True),
        MetricSpec(name="PS_group"),
        MetricSpec(name="PS_persons"),
        *ma_metrics.DEPTH_SPECS,
    )

    def __init__(
        self,
        *,
        name: str,
        db_dir: str | None = None,
        flights_path: str | None = None,
        data_dir: str | None = None,
        limit: int | None = None,
        ps_pooling: Literal["group", "persons"] = "group",
        **params: Any,
    ) -> None:
        super().__init__(
            name=name,
            db_dir=db_dir,
            flights_path=flights_path,
            data_dir=data_dir,
            limit=limit,
            ps_pooling=ps_pooling,
            **params,
        )
        self.name, self.data_dir, self.limit, self.ps_pooling = name, data_dir, limit, ps_pooling
        if flights_path == "fixtures":
            flights_path = str(FIXTURES / "flights" / "clean_Flights_2022.csv")
        # The database is not redistributable with tasks: a path, or $TRAVELPLANNER_DB_DIR.
        self.db_dir, self.flights_path = db_dir or os.environ.get("TRAVELPLANNER_DB_DIR"), flights_path
        self._db: TravelDB | None = None
        self._prov: dict[str, Any] = {}
        self.sources = TextSources()
        self.prompts = travel_prompts(self.sources)

    def missing(self) -> list:
        """The TravelPlanner database: every tool reads it, so without it every episode would fail."""
        from runners.api import Missing

        fix = (
            "set benchmark.params.db_dir=<dir> or export TRAVELPLANNER_DB_DIR, a copy of upstream "
            "env/env_systems/travel_planner_env/database/ (not redistributed with the tasks)"
        )
        if not self.db_dir:
            return [
                Missing(what=f"benchmark {self.name} needs the TravelPlanner database, and none is configured", fix=fix)
            ]
        if not Path(self.db_dir).expanduser().is_dir():
            return [
                Missing(
                    what=f"benchmark {self.name}: the TravelPlanner database directory {self.db_dir} does not exist",
                    fix=fix,
                )
            ]
        return []

    def db(self) -> TravelDB:
        if self._db is None:
            if not self.db_dir:
                raise ValueError(
                    "memoryarena_travel needs the TravelPlanner database directory (upstream "
                    "env/env_systems/travel_planner_env/database/ layout): set benchmark.params.db_dir "
                    "or export TRAVELPLANNER_DB_DIR"
                )
            mode = self.params["distance_day_routes"]
            self._db = TravelDB(self.db_dir, self.flights_path, day_routes=mode == "upstream")
        return self._db

    def load_tasks(self) -> JsonlTasks:
        """The file's groups, read lazily (`runners.api.JsonlTasks`, as Formal Reasoning's)."""
        path, self._prov = resolve("group_travel_planner", self.data_dir)

        def aligned(r: dict[str, Any]) -> None:
            if len(r.get("questions", [])) != len(r.get("answers", [])) or "base_person" not in r:
                raise ValueError(f"{path}: group {r.get('id')} needs base_person and aligned questions/answers")

        return read_tasks(
            path,
            lambda r: f"travel-{r['id']}",
            required=("id", "questions", "answers", "base_person"),
            check=aligned,
            limit=self.limit,
        )

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return TravelEnv(task, ctx, self.params, self.db(), self.prompts)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        groups = [e["scores"]["persons"] for e in episodes]
        agg = travel_score.aggregate(groups, ps_pooling=self.ps_pooling, sr_missing=self.params["sr_missing"])
        out = {k: (100.0 * v if v is not None else None) for k, v in agg.items()}
        out.update(ma_metrics.depth_metrics([e["scores"]["subtask_correct"] for e in episodes]))
        return out

    def notes(self) -> dict[str, Any]:
        flights = self.db().flights_path if self.db_dir else self.flights_path
        return {
            "data": self._prov,
            "text_sources": self.sources.as_manifest(),
            "db_dir": self.db_dir,
            "flights_path": str(flights) if flights else None,
            "flights_present": flights is not None and bool(flights) and Path(flights).is_file(),
            "ps_pooling": self.ps_pooling,
            "PS_note": (
                "PS follows ps_pooling; FlowState Table 1 pools persons (B.5): use ps_pooling=persons or read "
                "PS_persons"
            ),
        }
