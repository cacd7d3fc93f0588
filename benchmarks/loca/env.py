"""One LOCA case as a harness Environment (docs/pos-benchmarks.md §1.4), the same code for upstream GEM
environments and the synthetic fixture (both behind `interface.LocaToolEnv`).

- One request: the env's `user_prompt` (task and first observation). The policy text is the
  role-grouped tool catalog plus the interaction rules; tools = the env's OpenAI schemas.
- One tool call per turn (extra calls are not executed, with a note); a turn without one is spent.
- Budgets: `max_turns` (100) policy turns; `max_tool_uses` (100): at the cap nothing is executed
  and the observation is `[]`, without terminating (upstream `8cd474d`), claim_done included.
- `claim_done_claim_done` ends the case with the env's reward; success = done ∧ reward ≥ 1.
- Unknown tool → upstream "Tool '<name>' not found" (not counted); bad input or a tool exception →
  an error observation, never a crash.
- Adapter additions: artifacts for long JSON results and the workspace output manifest (`artifacts`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from benchmarks.loca import artifacts as art
from benchmarks.loca.capabilities import capability_table
from benchmarks.loca.catalog import build_catalog, policy_text
from runners.upstream import TextSources
from benchmarks.loca.configs import build_env
from benchmarks.loca.interface import LocaSetupError, LocaToolEnv, ToolStep, is_error_text, tool_messages
from benchmarks.one_request import OneRequestEnv
from runners.api import (
    Decision,
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

CLAIM_DONE = "claim_done_claim_done"
DEFAULTS: dict[str, Any] = {
    "max_turns": 100,  # PoS §11: 100 policy turns
    "max_tool_uses": 100,  # PoS §11: loca_max_tool_uses
    "tool_timeout_s": 120.0,  # PoS §11: tool timeout
    "artifacts": dict(art.DEFAULTS),  # §1.4 loca_observation_artifacts
    "workspace_manifest": True,  # §1.4 workspace output manifest
    "keep_workspaces": False,  # harness choice: delete each episode's task dir after scoring
}


class LocaEnv(OneRequestEnv):
    budget_key = "max_turns"

    def __init__(self, task: TaskSpec, ctx: EpisodeContext, params: dict[str, Any], task_dir: Path) -> None:
        self.task, self.ctx, self.task_dir = task, ctx, Path(task_dir)
        self.params = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
        self.params["artifacts"] = {**art.DEFAULTS, **(self.params["artifacts"] or {})}
        self.benchmark = str(params.get("name", "loca"))
        config = task.payload["config"]
        self.env: LocaToolEnv = build_env(
            config,
            self.task_dir,
            max_tool_uses=int(self.params["max_tool_uses"]),
            tool_timeout_s=float(self.params["tool_timeout_s"]),
        )
        self.user_prompt, functions = self.env.reset()
        self.tools = [
            ToolSpec(
                name=f["function"]["name"],
                description=f["function"].get("description") or "",
                parameters=f["function"].get("parameters") or {"type": "object", "properties": {}},
            )
            for f in functions
        ]
        self.names = {t.name for t in self.tools}
        servers = [s for s, c in config["mcp_servers"].items() if c.get("enabled")]
        missing = [s for s in servers if s != "claim_done" and not any(n.startswith(f"{s}_") for n in self.names)]
        if missing or CLAIM_DONE not in self.names:  # §1.4: reset fails unless every server has a tool + claim_done
            raise LocaSetupError(
                f"{task.task_id}: servers without tools {missing}; claim_done present: {CLAIM_DONE in self.names}"
            )
        self.sources = TextSources()
        table = capability_table(self.sources)
        self.capabilities = {
            t.name: table[t.name] for t in self.tools if t.name in table
        }  # upstream attach_loca_capabilities
        self.catalog = build_catalog(self.tools, servers, self.capabilities)
        self.has_python = any(n.startswith("python_execute_") for n in self.names)
        self.workspace = self.env.agent_workspace()
        self.turn = self.tool_uses = 0
        self.done, self.reward = False, 0.0
        self.issues: dict[str, int] = {}
        self.artifact_paths: list[str] = []
        self.manifest: list[dict[str, Any]] = []
        self._script: list[tuple[str, dict[str, Any]]] | None = None

    # ------------------------------------------------------------------ Environment
    def view(self) -> TaskView:
        a = self.params["artifacts"]
        policy = policy_text(
            self.catalog,
            max_turns=int(self.params["max_turns"]),
            max_tool_uses=int(self.params["max_tool_uses"]),
            artifacts=bool(a["enabled"] and self.has_python),
            inline_max=int(a["inline_max_chars"]),
        )
        return TaskView(
            task_id=self.task.task_id,
            benchmark=self.benchmark,
            policy=policy,
            tools=self.tools,
            kind="loca",
            workspace=str(self.task_dir.resolve()),
        )

    async def open_request(self) -> Request:
        return Request(index=0, request_id=f"{self.task.task_id}/q1", text=self.user_prompt)

    def _issue(self, key: str) -> None:
        self.issues[key] = self.issues.get(key, 0) + 1

    async def act(self, decision: Decision) -> Reply:
        if self.done:
            return Reply(request_done=True)
        self.turn += 1
        notes: list[str] = []
        if not decision.tool_calls:
            self._issue("no_action")
            return Reply(
                observation=Observation(
                    note="No tool was called, so this turn was spent. Call one tool per "
                    f"turn and finish with {CLAIM_DONE}."
                )
            )
        call, extra = decision.tool_calls[0], len(decision.tool_calls) - 1
        if extra:
            self._issue("dropped_calls")
            notes.append(f"One tool call per turn: {extra} further call(s) were not executed.")
        call_id = call.id or f"call_{self.turn}"
        content, error = self._execute(call, call_id, notes)
        result = ToolResult(call_id=call_id, name=call.name, content=content, error=error)
        return Reply(
            observation=Observation(tool_results=[result], note="\n".join(notes) or None), request_done=self.done
        )

    def _execute(self, call: ToolCall, call_id: str, notes: list[str]) -> tuple[str, bool]:
        """(observation string, is_error) of one call; the string is the upstream tool-message list."""
        if self.tool_uses >= int(self.params["max_tool_uses"]):  # §1.4: at the cap nothing runs, "[]", no termination
            self._issue("over_tool_cap")
            return "[]", False
        if call.name not in self.names:
            self._issue("unknown_tool")
            return tool_messages(call_id, f"Tool '{call.name}' not found"), True
        self.tool_uses += 1
        before = art.snapshot(self.workspace) if self.params["workspace_manifest"] else {}
        try:
            step = self.env.call_tool(call.name, dict(call.arguments), call_id)
        except LocaSetupError:
            raise  # a broken environment is a harness problem, not the agent's
        except Exception as e:  # agent input must never crash the episode
            self._issue("tool_exception")
            step = ToolStep(f"Error executing tool {call.name}: {type(e).__name__}: {e}")
        error = is_error_text(step.content)
        if error:
            self._issue("error_result")
        if step.done:
            self.done, self.reward = True, float(step.reward)
        content = self._maybe_artifact(call, call_id, step.content)
        if self.params["workspace_manifest"]:
            self._manifest(call.name, before, step.content, notes)
        if self.tool_uses == int(self.params["max_tool_uses"]) and not self.done:
            notes.append("Reached the maximum number of tool uses: further tool calls will not be executed.")
        return tool_messages(call_id, content), error

    def _maybe_artifact(self, call: ToolCall, call_id: str, content: str) -> str:
        if self.workspace is None:
            return content
        transform = (self.capabilities.get(call.name) or {}).get("effect") == "transform"
        found = art.should_save(content, self.params["artifacts"], self.has_python, transform=transform)
        if found is None:
            return content
        ptype, payload = found
        path = art.save_artifact(
            self.workspace,
            case_id=self.task.task_id,
            tool_name=call.name,
            call_id=call_id,
            counter=self.tool_uses,
            payload_type=ptype,
            payload=payload,
            content=content,
        )
        self.artifact_paths.append(str(path))
        return art.compact_view(
            path, self.workspace, ptype, payload, len(content), int(self.params["artifacts"]["preview_items"])
        )

    def _manifest(self, producer: str, before: dict, output: str, notes: list[str]) -> None:
        if self.workspace is None:
            return
        entries = art.changes(before, art.snapshot(self.workspace), producer)
        if producer.startswith("python_execute_"):
            for declared in art.result_manifests(output):
                entry, failure = art.check_manifest(self.workspace, declared, producer)
                entries += [entry] if entry else []
                notes += [failure] if failure else []
        if entries:
            self.manifest += entries
            notes.append("Workspace output manifest: " + json.dumps(entries))

    async def end_request(self, *, truncated: bool, steps: int) -> RequestOutcome:
        assert self.request is not None
        final = json.dumps({"claimed_done": self.done, "reward": self.reward})
        memory = f"{self.request.text}\nclaim_done: {self.done}, reward {self.reward} after {self.turn} turns."
        return RequestOutcome(
            request=self.request, final_response=final, steps=steps, truncated=truncated, memory_text=memory
        )

    async def score_task(self) -> dict[str, Any]:
        success = self.done and self.reward >= 1.0  # §1.4: success = done ∧ score ≥ 1.0
        scores = {
            "success": int(success),
            "reward": self.reward,
            "done": self.done,
            "length": self.task.payload["length"],
            "family": self.task.payload["config"]["name"],
            "turns": self.turn,
            "tool_use_counter": self.tool_uses,
            "artifacts": len(self.artifact_paths),
            "workspace_outputs": len(self.manifest),
            "issues": dict(self.issues),
        }
        self.close()
        return scores

    def close(self) -> None:
        self.env.close()
        if not self.params["keep_workspaces"]:
            shutil.rmtree(self.task_dir, ignore_errors=True)

    def reference(self, role: str, messages: list[Message]) -> Decision | None:
        """Scripted agent: the fixture's solution, one call per turn (upstream envs have none)."""
        if role != "agent" or self.request is None:
            return None
        if self._script is None:
            self._script = self.env.reference_calls() or [(CLAIM_DONE, {})]
        name, args = self._script[min(self.turn, len(self._script) - 1)]
        return Decision(tool_calls=[ToolCall(name=name, arguments=args, id=f"call_{self.turn + 1}")])
