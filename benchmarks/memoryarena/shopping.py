"""MemoryArena Bundled Web Shopping (docs/memoryarena.md §2.1, §3.1, §4 Shopping, §5.3): a bundle is
a task, each product step a request run as a fresh WebShop episode (split mode) over the offline
reduced catalogue (`catalogue.py`).

Actions [harness choice]: the store's `search[kw]` / `click[v]` are offered as two tools,
`search(query)` and `click(target)`, so every method's protocol can call them; an assistant
message holding `search[...]` or `click[...]` (upstream's text form) is executed too. One action
per turn: extra tool calls in a step are answered with an error and not executed."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import Field

from benchmarks.memoryarena import metrics as ma_metrics
from benchmarks.memoryarena import shopping_score
from benchmarks.memoryarena.catalogue import (
    PRODUCT_WINDOW,
    Catalogue,
    CatalogueSource,
    catalogue_mode,
    load_catalogues,
    preamble,
    section,
)
from benchmarks.memoryarena.loader import FIXTURES, read_rows, resolve
from benchmarks.memoryarena.shopping_site import BACK, BUY, NEXT, PREV, Site, parse_action
from runners.upstream import TextSources, UpstreamFile
from runners.api import (
    EpisodeRow,
    Metrics,
    MetricSpec,
    BenchmarkParams,
    Benchmark,
    Decision,
    Environment,
    EpisodeContext,
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

STEP_BLOCK = (
    "In this session buy ONLY the item of the product section below (one purchase). The bundle's budget "
    "and compatibility rules above still apply; items bought in earlier sessions are not shown here.\n"
)
POLICY = (
    "You shop in a WebShop-style text store. Take exactly one action per step: `search` with keywords (only on "
    "the search page) or `click` on a button, product ASIN or option value shown on the current page (buttons "
    "include 'Back to Search', 'Next >', '< Prev', 'Description', 'Features', 'Reviews', 'Buy Now'). Clicking "
    "'Buy Now' on a product page buys it and ends the session. Anything else does nothing."
)
WEBSHOP_AGENT = UpstreamFile("MemoryArena", "agent/webshop.py")
# The policy is upstream WebShop agent's DEFAULT_SYSTEM_PROMPT, read at run time; POLICY above is the
# project's own wording, used (and recorded as paraphrase) only when the pinned file is unavailable.
# Upstream's prompt asks for search[...] / click[...]: the `search` and `click` tools are those actions.
TOOLS = [
    ToolSpec(
        name="search",
        description="search[query] on the search page.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "search keywords"}},
            "required": ["query"],
        },
    ),
    ToolSpec(
        name="click",
        description="click[target]: a button text, product ASIN or option value on the current page.",
        parameters={
            "type": "object",
            "properties": {"target": {"type": "string", "description": "text to click"}},
            "required": ["target"],
        },
    ),
]
REPEAT_EXIT = 7  # webshop_plus_client `max_same_action`: identical consecutive actions that end a step
REDUCTION = (
    "reduced catalogue: per-task catalogue of the option products (target ASINs from the answers, synthetic "
    "distractor ASINs) with local BM25 search instead of WebShop's 1.18M-product Lucene index; not comparable with the "
    "paper"
)


def shopping_policy(sources: TextSources) -> str:
    return sources.string("policy", WEBSHOP_AGENT, "DEFAULT_SYSTEM_PROMPT", POLICY)


class ShoppingEnv(Environment):
    def __init__(
        self,
        task: TaskSpec,
        ctx: EpisodeContext,
        params: dict[str, Any],
        catalogue: Catalogue,
        policy: str | None = None,
    ) -> None:
        self.task, self.ctx, self.params, self.cat = task, ctx, params, catalogue
        self.policy = policy if policy is not None else shopping_policy(TextSources())
        row = task.payload
        qs, pre = row["questions"], preamble(row["questions"])
        self.instructions = [f"{pre}{STEP_BLOCK}{section(qs, i)}" for i in range(1, len(qs) + 1)]
        self.requests = [
            Request(index=i, request_id=f"{task.task_id}/q{i + 1}", text=Site(catalogue, ins).render())
            for i, ins in enumerate(self.instructions)
        ]
        self.k = -1
        self.steps: list[dict[str, Any]] = []
        self.judge_replies: list[str] = []
        self._judging: tuple[str, list[str]] | None = None

    def view(self) -> TaskView:
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.params["name"],
            policy=self.policy,
            tools=list(TOOLS),
            kind="shopping",
        )

    def step_budget(self) -> int:
        return int(self.params["max_steps"])  # task_specific.max_steps in every upstream config

    async def next_request(self) -> Request | None:
        self.k += 1
        if self.k >= len(self.requests):
            return None
        self.site = Site(
            self.cat, self.instructions[self.k] if self.params["instruction_in_observation"] else "(see request)"
        )
        self.turns: list[dict[str, Any]] = []
        self._last: list[str] = []
        return self.requests[self.k]

    # --------------------------------------------------------------------------- acting
    def _action(self, decision: Decision) -> tuple[tuple[str, str] | None, str, list[ToolResult]]:
        """The one action of this turn, its tool-call id, and errors for extra calls."""
        extra = [
            ToolResult(call_id=c.id or f"extra_{i}", name=c.name, error=True, content="Ignored: one action per turn.")
            for i, c in enumerate(decision.tool_calls[1:], 1)
        ]
        if decision.tool_calls:
            c = decision.tool_calls[0]
            args = c.arguments if isinstance(c.arguments, dict) else {}
            arg = args.get("query" if c.name == "search" else "target")
            if c.name in ("search", "click") and isinstance(arg, str):
                return (c.name, arg.strip()), c.id or "call_0", extra
            return ("invalid", f"{c.name}({args})"), c.id or "call_0", extra
        return parse_action(decision.message), "", extra

    async def act(self, decision: Decision) -> Reply:
        action, cid, extra = self._action(decision)
        before = self.site.render()
        text = f"{action[0]}[{action[1]}]" if action else (decision.message or "").strip()
        self._last.append(text)
        # Wrapper (`webshop_plus_client.py`): the repeat count is checked BEFORE the action runs, so
        # the 7th identical action in a row is not executed; the episode ends on the current page.
        repeats = len(self._last) >= REPEAT_EXIT and len(set(self._last[-REPEAT_EXIT:])) == 1
        valid = (
            not repeats and action is not None and bool(action) and action[0] != "invalid" and self.site.step(*action)
        )
        done = self.site.purchased is not None
        after = self.site.summary() if done else self.site.render()
        if repeats:
            after = f"{after}\nSoft exit: the same action {REPEAT_EXIT} times in a row ({text})."
        elif not valid and self.params["explain_invalid_actions"]:
            after = f"Invalid action on this page (nothing happened).\n{after}"  # [harness choice]; upstream is silent
        self.turns.append({"instruction": before, "action": text, "observation": after, "done": done or repeats})
        if decision.tool_calls:
            obs = Observation(
                tool_results=[ToolResult(call_id=cid, name=decision.tool_calls[0].name, content=after), *extra]
            )
        else:
            obs = Observation(note=after)
        return Reply(observation=obs, request_done=done or repeats)

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        ans = self.task.payload["answers"][self.k]
        bought = self.site.purchased
        asin = str(bought["asin"]) if bought else None
        matches, err = None, None
        if bought and not shopping_score.step_match(asin, ans["target_asin"]) and self.params["llm_attributes"]:
            self._judging = (str(bought.get("name", "")), list(ans.get("attributes", [])))
            matches, reply, err = await shopping_score.llm_attribute_matches(
                self.ctx.backbone("judge"), *self._judging, **self.params["judge_sampling"]
            )
            self.judge_replies.append(reply)
            self._judging = None
        reward = shopping_score.soft_reward(
            bought=bought,
            bought_asin=asin,
            target_asin=ans["target_asin"],
            target=self.cat.get(ans["target_asin"]),
            attributes=ans.get("attributes", []),
            attr_matches=matches,
        )
        self.steps.append(
            {
                "purchase": asin,
                "match": shopping_score.step_match(asin, ans["target_asin"]),
                "reward": reward,
                "judge_error": err,
            }
        )
        # upstream `run_shopping.build_memory_entries`: `Step {turn}:` (turn within this step's episode)
        chunks = [
            f"Step {t}:\nUser Instruction: {x['instruction']}\nAgent Action: {x['action']}\n"
            f"Env Observation: {x['observation']}\nDone: {x['done']}"
            for t, x in enumerate(self.turns, 1)
        ]
        # All per-turn chunks in order = [memory_text] + memory_chunks (§4 Shopping 4).
        return RequestOutcome(
            request=self.requests[self.k],
            final_response=asin,
            steps=steps,
            truncated=truncated,
            memory_text=chunks[0] if chunks else "",
            memory_chunks=chunks[1:],
        )

    async def score_task(self) -> dict[str, Any]:
        agg = shopping_score.aggregate([self.steps])
        return {
            "subtask_correct": [int(s["match"]) for s in self.steps],
            "success": int(agg["SR"] or 0),
            "progress": agg["PS"],
            "rewards": [s["reward"] for s in self.steps],
            "steps": self.steps,
            "judge_replies": self.judge_replies,
        }

    # --------------------------------------------------------------------------- scripted oracle
    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        if role == "judge" and self._judging is not None:
            name, attrs = self._judging
            return Decision(
                message=json.dumps(
                    {
                        "matches": [
                            {"attribute": a, "has_attribute": m}
                            for a, m in zip(attrs, shopping_score.substring_matches(name, attrs))
                        ]
                    }
                )
            )
        if role != "agent" or not 0 <= self.k < len(self.requests):
            return None
        nxt = self.next_action()
        if nxt is None:
            return None
        verb, arg = nxt
        return Decision(
            tool_calls=[
                ToolCall(
                    name=verb, arguments={"query" if verb == "search" else "target": arg}, id=f"a{len(self.turns)}"
                )
            ]
        )

    def next_action(self) -> tuple[str, str] | None:
        """Next action of a shortest path to buying this step's target (None if it is not in the catalogue)."""
        target = self.cat.get(self.task.payload["answers"][self.k]["target_asin"])
        if target is None:
            return None
        s, t = self.site, str(target["asin"]).lower()
        if s.page == "search":
            return ("search", str(target.get("name", "")))
        if s.page == "results":
            pos = [str(p["asin"]).lower() for p in s.results]
            if t in [str(p["asin"]).lower() for p in s.window()]:
                return ("click", t)
            if t not in pos:
                return ("click", BACK)
            return ("click", NEXT if pos.index(t) >= s.page_no * PRODUCT_WINDOW else PREV)
        if s.page == "item":
            return ("click", BUY if str(s.asin).lower() == t else PREV)
        return ("click", PREV)


def select_per_category(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """Upstream `task_file_limit` (10 in every shipped config → 50 of 150 bundles): for each
    `<prefix>_item_<n>` prefix, in order of first appearance, the k rows with the smallest n."""

    def key(r: dict[str, Any]) -> tuple[str, int]:
        m = re.match(r"^(.*)_item_(\d+)$", str(r.get("category", "")))
        return (m.group(1), int(m.group(2))) if m else (str(r.get("category", "")), 0)

    prefixes = list(dict.fromkeys(key(r)[0] for r in rows))
    return [r for p in prefixes for r in sorted((r for r in rows if key(r)[0] == p), key=lambda r: key(r)[1])[:k]]


class ShoppingParams(BenchmarkParams):
    """conf/benchmark/memoryarena_shopping.yaml documents each key."""

    data_dir: str | None = None
    catalogue_path: str | None = None
    catalogue_scope: Literal["auto", "task", "global"] = "auto"
    per_category_limit: int | None = Field(None, ge=1)
    max_steps: int = Field(20, ge=1)
    instruction_in_observation: bool = True
    explain_invalid_actions: bool = False
    llm_attributes: bool = False
    judge_sampling: dict[str, Any] = Field(default_factory=dict)


class BundledShopping(Benchmark):
    task_kinds = {"shopping": "MemoryArena progressive web shopping (catalogue tools, one purchase per turn)"}
    Params = ShoppingParams
    roles = ("judge",)
    metric_specs = (
        MetricSpec(name="SR", table=True),
        MetricSpec(name="PS", table=True),
        MetricSpec(name="soft_reward", table=True),
        MetricSpec(name="PS_soft"),
        MetricSpec(name="SR_soft"),
        MetricSpec(name="average_success_rate"),
        *ma_metrics.DEPTH_SPECS,
    )

    def __init__(
        self,
        *,
        name: str,
        data_dir: str | None = None,
        catalogue_path: str | None = None,
        limit: int | None = None,
        **params: Any,
    ) -> None:
        super().__init__(name=name, data_dir=data_dir, catalogue_path=catalogue_path, limit=limit, **params)
        self.name, self.data_dir, self.limit = name, data_dir, limit
        if catalogue_path == "fixtures":
            catalogue_path = str(FIXTURES / "bundled_shopping" / "catalogue.json")
        self.catalogue_path = catalogue_path
        self._source: CatalogueSource | None = None
        self._prov: dict[str, Any] = {}
        self.sources = TextSources()
        self.policy = shopping_policy(self.sources)

    def load_tasks(self) -> list[TaskSpec]:
        path, self._prov = resolve("bundled_shopping", self.data_dir)
        if self.catalogue_path is None and (path.parent / "catalogue.json").is_file():
            self.catalogue_path = str(path.parent / "catalogue.json")  # a catalogue beside the task file is used
        rows = read_rows(path, required=("id", "questions", "answers"))
        for r in rows:
            if len(r.get("questions", [])) != len(r.get("answers", [])):
                raise ValueError(f"{path}: bundle {r.get('id')} has unaligned questions/answers")
        k = self.params["per_category_limit"]
        if k:  # upstream collect_task_files_from_hf: per prefix, items sorted by number, the first k
            rows = select_per_category(rows, int(k))
        tasks = [TaskSpec(task_id=f"shopping-{r['id']}", payload=r) for r in rows]
        return tasks[: self.limit] if self.limit else tasks

    def source(self) -> CatalogueSource:
        if self._source is None:
            data = load_catalogues(self.catalogue_path) if self.catalogue_path else None
            self._source = CatalogueSource(data, self.params["catalogue_scope"])
        return self._source

    def catalogue(self, row: dict[str, Any]) -> Catalogue:
        return self.source().for_task(row)

    def make_env(self, task: TaskSpec, ctx: EpisodeContext) -> Environment:
        return ShoppingEnv(task, ctx, self.params, self.catalogue(task.payload), self.policy)

    def metrics(self, episodes: list[EpisodeRow]) -> Metrics:
        agg = shopping_score.aggregate([e["scores"]["steps"] for e in episodes])
        out = {k: (100.0 * v if v is not None else None) for k, v in agg.items()}
        out.update(ma_metrics.depth_metrics([e["scores"]["subtask_correct"] for e in episodes]))
        return out

    def notes(self) -> dict[str, Any]:
        mode = catalogue_mode(self.source())
        return {
            "data": self._prov,
            "text_sources": self.sources.as_manifest(),
            "catalogue_mode": mode,
            "reduction": REDUCTION if mode == "reduced catalogue" else None,
            "catalogue": self.catalogue_path or "synthetic per-task (from option lists)",
            "PS_note": (
                "PS = exact-ASIN step match (FlowState reading); soft_reward = upstream compute_reward.py "
                "average_reward"
            ),
        }
