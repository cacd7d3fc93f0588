"""Role-grouped tool catalog, the PoS LOCA action view (docs/pos-benchmarks.md §1.4 adapter additions):
`{domains: [{name, tool_count}], tools_by_role: {metadata_discovery, evidence_retrieval,
deterministic_compute, side_effect, finish, other}}`. Roles come from name-token rules, the domain
from a leading `[server]` in the description (else the name's server prefix). The token lists are
[inferred]: PoS's exact lists are not in the spec. Declared `x_pos_capability` values are kept."""

from __future__ import annotations

import json
import re
from typing import Any

from runners.api import ToolSpec

ROLES = ("metadata_discovery", "evidence_retrieval", "deterministic_compute", "side_effect", "finish", "other")
# First matching rule wins; tokens are the words of the tool part after the server prefix.
RULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("finish", frozenset({"claim", "done", "finish", "submit"})),
    (
        "side_effect",
        frozenset(
            {
                "send",
                "write",
                "create",
                "update",
                "delete",
                "insert",
                "edit",
                "move",
                "add",
                "remove",
                "upload",
                "set",
                "append",
                "reply",
                "forward",
                "post",
                "put",
                "mark",
                "rename",
            }
        ),
    ),
    ("deterministic_compute", frozenset({"execute", "python", "compute", "calculate", "eval", "run", "formula"})),
    (
        "metadata_discovery",
        frozenset(
            {
                "list",
                "schema",
                "describe",
                "tables",
                "directory",
                "tree",
                "info",
                "metadata",
                "allowed",
                "folders",
                "sheets",
                "datasets",
            }
        ),
    ),
    ("evidence_retrieval", frozenset({"read", "get", "search", "fetch", "query", "find", "view", "download", "open"})),
)
_DOMAIN = re.compile(r"^\s*\[([^\]]+)\]")


def domain_of(tool: ToolSpec, servers: list[str]) -> str:
    m = _DOMAIN.match(tool.description or "")
    if m:
        return m.group(1).strip()
    for s in sorted(servers, key=len, reverse=True):
        if tool.name.startswith(f"{s}_"):
            return s
    return tool.name.split("_", 1)[0]


def role_of(tool: ToolSpec, domain: str) -> str:
    rest = tool.name[len(domain) + 1 :] if tool.name.startswith(f"{domain}_") else tool.name
    tokens = set(re.split(r"[_\W]+", rest.lower())) - {""}
    for role, words in RULES:
        if tokens & words:
            return role
    return "other"


def build_catalog(tools: list[ToolSpec], servers: list[str], declared: dict[str, Any] | None = None) -> dict[str, Any]:
    """`declared`: upstream's capability table entries of these tools (`capabilities.capability_table`)."""
    domains: dict[str, int] = {}
    by_role: dict[str, list[str]] = {r: [] for r in ROLES}
    capabilities: dict[str, Any] = {}
    for t in tools:
        d = domain_of(t, servers)
        domains[d] = domains.get(d, 0) + 1
        by_role[role_of(t, d)].append(t.name)
        if declared and t.name in declared:
            capabilities[t.name] = declared[t.name]
        elif "x_pos_capability" in t.parameters:
            capabilities[t.name] = t.parameters["x_pos_capability"]
    out: dict[str, Any] = {
        "domains": [{"name": n, "tool_count": c} for n, c in domains.items()],
        "tools_by_role": by_role,
    }
    if capabilities:
        out["capabilities"] = capabilities
    return out


def policy_text(
    catalog: dict[str, Any], *, max_turns: int, max_tool_uses: int, artifacts: bool, inline_max: int
) -> str:
    """The policy block methods show: interaction rules and the catalog (harness wording)."""
    lines = [
        "You solve a LOCA-Bench task with the tools listed below. Call exactly one tool per turn; a turn without a "
        "tool call is spent. Tool results come back as a JSON list of tool messages.",
        f"Budgets: {max_turns} turns and {max_tool_uses} tool uses; past the tool-use cap tools return [] and do "
        "nothing.",
        "The task ends only when you call claim_done_claim_done; it is then graded from the final state of the "
        "environment (emails, files, records), not from your messages.",
    ]
    if artifacts:
        lines.append(
            f"Tool results longer than {inline_max} characters are saved to a JSON file in the workspace and "
            "shown as a compact view with the file path; load the file with the Python tool to use all of it."
        )
    lines.append("Tool catalog (grouped by role):\n" + json.dumps(catalog))
    return "\n".join(lines)
