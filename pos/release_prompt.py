"""PoS's policy prompt as the release builds it (`prompts/react_prompt.py`: `react_system_prompt`
and `build_belief_prompt`), on the PoS benchmarks (ALFWorld, LOCA, RCA-100, ClinDiag), with every
sentence read at run time from the pinned release files (runners/upstream.py), never written here:

- system: `SYSTEM_PROMPT` (ALFWorld), `LOCA_BENCH_SYSTEM_PROMPT`, the RCA-100 prompt
  (`RCA100_SYSTEM_PROMPT_HEADER`, the single- or multi-action format by `max_actions_per_turn`,
  `RCA100_SYSTEM_PROMPT_RULES`, then `benchmarks/RCA100/info.py`'s four infos) and the ClinDiag
  prompt (`CLINDIAG_SYSTEM_PROMPT`, then `benchmarks/ClinDiag/info.py`'s four infos), joined as
  the release joins them;
- user: `build_belief_prompt`'s own template (format example, current observation, Belief Text,
  the Goal and Active-Gap subgraph, the Active Gap, `FRONTIER_ACTION_SELECTION_CONTRACT`, the
  recovery constraint and runtime workspace sections, the available action schemas, the closing
  instruction), its fields filled with this step's values;
- the last turn of RCA-100 and ClinDiag: the release's final-turn directive appended as
  `append_final_turn_directive` does.

When any piece is unavailable the project's own layout (pos/policy.py) is used and each missing
piece is listed as paraphrased in the manifest. LOCA's action view is the release's role-grouped
catalog (`build_loca_tool_catalog`, pos/release_catalog.py); without it, the list of tool schemas."""

from __future__ import annotations

import ast
import json
from typing import Any, cast

from pos import release_catalog
from pos.projection import frontier_subgraph
from pos.world import Belief
from runners.api import Message, TaskView
from runners.upstream import TextSources, UpstreamFile, file_text, fill_parts, parse_python, py_fstring_parts

REACT_PROMPT = UpstreamFile("PoS", "prompts/react_prompt.py")
CLINDIAG_INFO = UpstreamFile("PoS", "benchmarks/ClinDiag/info.py")
RCA_INFO = UpstreamFile("PoS", "benchmarks/RCA100/info.py")
RELEASE_KINDS = ("alfworld", "loca", "rca", "clindiag")
"""Task kinds of the PoS benchmarks, where the release's ReAct interface applies."""

_INFOS = {
    "clindiag": (
        CLINDIAG_INFO,
        ("ROLE_CONTRACT_INFO", "CLINICAL_WORKFLOW_INFO", "QUESTIONING_DISCIPLINE_INFO", "SUBMIT_CONTRACT_INFO"),
    ),
    "rca": (RCA_INFO, ("FAULT_TYPES_INFO", "ENTITY_STANDARD_INFO", "DIAGNOSTIC_METHOD_INFO", "SUBMIT_CONTRACT_INFO")),
}
_FINAL = {"rca": "RCA100_FINAL_TURN_DIRECTIVE", "clindiag": "CLINDIAG_FINAL_TURN_DIRECTIVE"}
_EXAMPLES = {
    "alfworld": "ALFWORLD_EXAMPLE",
    "loca": "LOCA_BENCH_EXAMPLE",
    "clindiag": "CLINDIAG_EXAMPLE",
}  # RCA: none in the belief prompt


def _s(sources: TextSources, f: UpstreamFile, symbol: str) -> str | None:
    where = "" if f is REACT_PROMPT else f.path.split("/")[1] + "."  # ClinDiag.SUBMIT_CONTRACT_INFO vs RCA100.…
    return sources.string(f"pos.release.{where}{symbol}", f, symbol, None)  # type: ignore[arg-type]


def system_prompt(kind: str, max_actions: int | None, sources: TextSources) -> str | None:
    """The release's `react_system_prompt` for a task kind (None when a piece is unavailable)."""
    if kind == "alfworld":
        return _s(sources, REACT_PROMPT, "SYSTEM_PROMPT")
    if kind == "loca":
        return _s(sources, REACT_PROMPT, "LOCA_BENCH_SYSTEM_PROMPT")
    f, names = _INFOS[kind]
    infos = [_s(sources, f, n) for n in names]
    if kind == "clindiag":
        head = _s(sources, REACT_PROMPT, "CLINDIAG_SYSTEM_PROMPT")
        return None if head is None or None in infos else f"{head}\n" + "\n\n".join(infos)  # type: ignore[arg-type]
    k = int(max_actions or 1)
    header, rules = (
        _s(sources, REACT_PROMPT, "RCA100_SYSTEM_PROMPT_HEADER"),
        _s(sources, REACT_PROMPT, "RCA100_SYSTEM_PROMPT_RULES"),
    )
    fmt = _s(sources, REACT_PROMPT, "RCA100_MULTI_ACTION_FORMAT" if k > 1 else "RCA100_SINGLE_ACTION_FORMAT")
    if None in (header, rules, fmt) or None in infos:
        return None
    return f"{header}{fmt.format(k=k) if k > 1 else fmt}{rules}\n" + "\n\n".join(infos)  # type: ignore[union-attr,arg-type]


def _sections() -> tuple[str | None, list[tuple[str, str]] | None]:
    """(the recovery section's heading, the runtime section's template) as `build_belief_prompt`
    writes them inline: `"<heading>" + json.dumps(recovery …) if … else ""` and `f"…{runtime}…" if … else ""`."""
    src = file_text(REACT_PROMPT)
    if src is None:
        return None, None
    fn = next(
        (n for n in parse_python(src).body if isinstance(n, ast.FunctionDef) and n.name == "build_belief_prompt"), None
    )
    heading = None
    for node in ast.walk(fn) if fn else ():
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
            and isinstance(node.right, ast.Call)
            and any(isinstance(a, ast.Name) and a.id == "recovery" for a in node.right.args)
        ):
            heading = node.left.value
    runtime: list[tuple[str, str]] | None = None
    for node in ast.walk(fn) if fn else ():
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "runtime_section" for t in node.targets)
            and isinstance(node.value, ast.IfExp)
            and isinstance(node.value.body, ast.JoinedStr)
        ):
            runtime = []
            for v in node.value.body.values:
                runtime.append(
                    ("text", str(v.value))
                    if isinstance(v, ast.Constant)
                    else ("field", ast.unparse(cast(ast.FormattedValue, v).value))
                )
    return heading, runtime


def release_texts(
    kind: str, max_actions: int | None, sources: TextSources, *, example: bool = True
) -> dict[str, Any] | None:
    """Every release text the policy prompt of `kind` needs, or None (then the project's layout)."""
    system = system_prompt(kind, max_actions, sources)
    user = sources.use(
        "pos.release.build_belief_prompt",
        REACT_PROMPT,
        py_fstring_parts(REACT_PROMPT, "build_belief_prompt", "user_prompt"),
        None,
        symbol="build_belief_prompt.user_prompt",
    )
    heading, runtime = _sections()
    sources.use(
        "pos.release.recovery_section", REACT_PROMPT, heading, None, symbol="build_belief_prompt.recovery_section"
    )
    sources.use(
        "pos.release.runtime_section",
        REACT_PROMPT,
        None if runtime is None else "(template)",
        None,
        symbol="build_belief_prompt.runtime_section",
    )
    contract = _s(sources, REACT_PROMPT, "FRONTIER_ACTION_SELECTION_CONTRACT")
    final = _s(sources, REACT_PROMPT, _FINAL[kind]) if kind in _FINAL else ""
    ex = _s(sources, REACT_PROMPT, _EXAMPLES[kind]) if example and kind in _EXAMPLES else ""
    if None in (system, user, heading, runtime, contract, final, ex):
        return None
    return {
        "system": system,
        "user": user,
        "recovery_heading": heading,
        "runtime": runtime,
        "contract": contract,
        "final_turn": final,
        "example": ex,
        "catalog": release_catalog.record_catalog(sources, REACT_PROMPT) if kind == "loca" else None,
    }


def release_messages(
    texts: dict[str, Any],
    *,
    task: TaskView,
    observation: str,
    belief: Belief,
    belief_text: str,
    recovery: dict[str, Any] | None,
    actions: list[str] | None,
    final_turn: bool,
) -> list[Message]:
    """The release's `build_belief_prompt` messages (then `append_final_turn_directive` on the last turn)."""
    gap = belief.frontier_gap()
    action_view: Any = list(actions) if actions is not None else [t.openai_schema() for t in task.tools]
    action_view = release_catalog.view(texts.get("catalog"), action_view)
    values = {
        "example_section": f"{texts['example']}\n" if texts["example"] else "",
        "state['observation']": observation,
        "belief_context['belief_text']": belief_text,
        "json.dumps(structured, ensure_ascii=False)": json.dumps(
            {"goal": belief.goal, "world": frontier_subgraph(belief.world, gap)}, ensure_ascii=False
        ),
        "json.dumps(primary_frontier, ensure_ascii=False)": json.dumps(gap, ensure_ascii=False),
        "FRONTIER_ACTION_SELECTION_CONTRACT": texts["contract"],
        "recovery_section": ""
        if recovery is None
        else texts["recovery_heading"] + json.dumps(recovery, ensure_ascii=False),
        "runtime_section": fill_parts(texts["runtime"], {"runtime": task.workspace}) if task.workspace else "",
        "json.dumps(action_view, ensure_ascii=False)": json.dumps(action_view, ensure_ascii=False),
    }
    user = fill_parts(texts["user"], values)
    if final_turn and texts["final_turn"]:
        user = f"{user}\n{texts['final_turn']}\n"
    return [{"role": "system", "content": texts["system"]}, {"role": "user", "content": user}]
