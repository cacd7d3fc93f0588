"""What every method is told about RCA-100 (docs/pos-benchmarks.md §2.4–§2.6): the policy (role, the
upstream rules and task information — fault catalog, entity standard, diagnostic method,
submission contract — and this harness's turn limits) and the fixed notice that follows the task.

Upstream's text is read at run time from the pinned PoS files (`benchmarks/RCA100/info.py`:
FAULT_TYPES_INFO, ENTITY_STANDARD_INFO, DIAGNOSTIC_METHOD_INFO, SUBMIT_CONTRACT_INFO, joined as
upstream's `rca100_task_info()`; `prompts/react_prompt.py`: RCA100_SYSTEM_PROMPT_RULES, as
upstream's `benchmark_protocol_info`), never copied here. Without them the policy uses our own
wording below and the manifest says so (`TextSources`: "paraphrase")."""

from __future__ import annotations

import json
from typing import Any

from benchmarks.rca100.catalog import catalog_text
from benchmarks.rca100.schema import SUBMIT
from runners.upstream import TextSources, UpstreamFile

INFO = UpstreamFile("PoS", "benchmarks/RCA100/info.py")
REACT = UpstreamFile("PoS", "prompts/react_prompt.py")

NOTICE = (
    "Notice: the incident data (metrics, logs, traces, Kubernetes events, alerts, topology) can be read only "
    "through the tools. The alerting entity shows the symptom and is often NOT the root cause: follow the "
    f"dependencies to where the problem starts. Submit exactly once with `{SUBMIT}`."
)

ROLE = (
    "You are an on-call site-reliability engineer finding the root cause of an incident in a Kubernetes "
    "microservice shop."
)

# ---- our own wording (fallbacks) -------------------------------------------------------------
RULES = (
    "Tool names must match an offered tool exactly and arguments must follow its schema; the tool list is "
    "complete. The observability data is not in the task: read it through the tools, starting at the alerting "
    "entity and its neighbours, then check metrics, logs, traces and events inside the alert window. A tool call "
    "proves nothing by itself: the returned observation is the evidence. If a result is cut, narrow the query "
    "rather than repeating it. The alerting entity is usually where the symptom shows, not where it starts: follow "
    f"the propagation upstream. Call {SUBMIT} exactly once, with the best-supported entity and fault type."
)


def _catalog() -> str:
    return "Fault type catalog (answer with exactly one ID from this closed set):\n" + catalog_text()


ENTITY_STANDARD = """Answer standard:
- Name exactly ONE root-cause entity, verbatim as the data spells it, at service level (apm.service) or node level \
(k8s.node).
- Pods, containers, instances and operations are wrong answers: name the service or node they belong to.
- The alerting entity is only where the symptom surfaced; investigate before you answer."""

METHOD = """Method:
1. Scope the incident: alert, time window, the alerting entity; get the data overview once.
2. Read the topology around it: callers, callees, the pods and the nodes they run on; list entity names.
3. Discover which metric names exist (list them, optionally by keyword) before querying; never guess a name.
4. Measure each suspect against its own earlier behaviour: set the alert-window values beside the calm period \
preceding them, and conclude only from a clear, quantified shift.
5. Confirm with a second modality (logs, traces, Kubernetes events).
6. Separate the origin from propagation: the root cause degrades first and is not explained by its own dependencies.
7. Check the infrastructure layer before settling on a service: the suspect's pods and node (node CPU, memory and disk \
usage rates, node readiness, running pod count) with the events. Several unrelated pods degrading on one node point to \
the node; one workload alone stays at service level.
8. Discriminate inside the catalog: list the types that fit the symptom and check the signal that tells each apart, \
e.g. one hot core (cpuDeadLoop) vs. even multi-core load (cpuFullLoad) vs. a node-wide rise (nodeCpuHigh) vs. a \
matching request rise (trafficSurge, trafficHotspot); continuous GC with long pauses (fullGC) vs. GC bursts \
(memoryPressure) vs. host OOM kills (nodeMemoryOOM) vs. a too-low container limit (resourceLimitMisconfig); \
429/throttling (rateLimiting) vs. a null-dereference stack (nullPointerException) vs. plain 5xx (httpError5xx); slow \
queries (slowSQL) vs. a slow network path (dbNetworkLatency) vs. failing cache calls (redisUnavailable) vs. misses \
flooding the backend (cacheBreakdown); zero replicas (replicaScaleDown) vs. CrashLoopBackOff (podCrashLoop) vs. \
periodic restarts (podRestartFlapping) vs. Pending pods (podPendingUnschedulable) vs. an unreachable node (nodeDown); \
blocked service pairs (networkPolicyIsolation) vs. name-resolution errors (dnsResolutionFailure) vs. broken Service \
endpoints (loadBalancerFailure).
9. Use the turn budget: having a plausible answer early is no reason to submit; spend turns confirming the deciding \
signal of your type and ruling out its closest alternative (a wrong type scores like a wrong entity), and submit once \
that evidence is in hand, before the budget runs out."""

SUBMIT_CONTRACT = f"""Submission: call {SUBMIT} exactly once with root_cause_entity (one entity name), fault_type \
(one catalog ID) and analysis (brief evidence). A valid submission ends the case; an invalid one (unknown fault_type, \
empty entity) is rejected, costs a step, and can be fixed and sent again."""


def without_format_lines(rules: str) -> str:
    """Upstream's rules minus the lines about the reply's format (JSON object, Markdown fences):
    the output format is the method's protocol, stated by the method, not by the benchmark."""
    return "\n".join(line for line in rules.splitlines() if "JSON" not in line and "Markdown" not in line)


def task_info(sources: TextSources) -> str:
    """Upstream `rca100_task_info()`: fault types, entity standard, diagnostic method, submission contract."""
    parts = [
        sources.string("rca100.fault_types", INFO, "FAULT_TYPES_INFO", _catalog()),
        sources.string("rca100.entity_standard", INFO, "ENTITY_STANDARD_INFO", ENTITY_STANDARD),
        sources.string("rca100.diagnostic_method", INFO, "DIAGNOSTIC_METHOD_INFO", METHOD),
        sources.string("rca100.submit_contract", INFO, "SUBMIT_CONTRACT_INFO", SUBMIT_CONTRACT),
    ]
    return "\n\n".join(parts)


def policy(max_steps: int, max_actions: int | None, obs_chars: int, sources: TextSources | None = None) -> str:
    """Role, upstream's RCA rules and task information (`benchmark_protocol_info`), then this
    harness's limits. `sources` records where each part came from."""
    sources = sources if sources is not None else TextSources()
    rules = sources.string("rca100.rules", REACT, "RCA100_SYSTEM_PROMPT_RULES", RULES)
    per_turn = f"at most {max_actions} tool calls per turn" if max_actions else "any number of tool calls per turn"
    limits = (
        f"Limits: {per_turn}; {SUBMIT} goes alone in its turn and ends the case once valid. "
        f"You have {max_steps} turns. "
        f"Tool results longer than {obs_chars} characters are cut: narrow the query. Never try to read answer keys."
    )
    return f"{ROLE}\n\n{without_format_lines(rules).strip()}\n\n{task_info(sources)}\n\n{limits}"


def request_text(task: dict[str, Any]) -> str:
    """The task JSON (task.json minus prompt_text, §2.6) followed by the fixed notice."""
    return f"Incident task:\n{json.dumps(task, indent=2, ensure_ascii=False)}\n\n{NOTICE}"
