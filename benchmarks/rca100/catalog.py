"""The closed fault catalog (docs/pos-benchmarks.md §2.4; PoS `benchmarks/RCA100/info.py` order) and
the normalisers the scorer uses (§2.7). Definitions are our own wording: the fallback when upstream
`benchmarks/RCA100/info.py` (FAULT_TYPES_INFO, loaded at run time by `prompts.task_info`) is unavailable."""

from __future__ import annotations

import re

FAULT_TYPES: tuple[str, ...] = (
    "nodeDown",
    "threadExhaustion",
    "trafficHotspot",
    "messageQueueBacklog",
    "trafficSurge",
    "memoryPressure",
    "cacheBreakdown",
    "slowSQL",
    "codeDefect",
    "cpuDeadLoop",
    "httpError5xx",
    "rateLimiting",
    "dbNetworkLatency",
    "loadBalancerFailure",
    "fullGC",
    "nullPointerException",
    "diskIOHigh",
    "nodeCpuHigh",
    "redisUnavailable",
    "nodeMemoryOOM",
    "slowResource",
    "cpuFullLoad",
    "replicaScaleDown",
    "resourceLimitMisconfig",
    "podCrashLoop",
    "podPendingUnschedulable",
    "podRestartFlapping",
    "networkPolicyIsolation",
    "dnsResolutionFailure",
)

DEFINITIONS: dict[str, str] = {
    "nodeDown": "a whole node stops being Ready; every pod on it becomes unreachable at once",
    "threadExhaustion": (
        "a service's worker/thread pool is used up; requests queue and time out while CPU stays moderate"
    ),
    "trafficHotspot": "load concentrates on one instance or key while siblings stay idle",
    "messageQueueBacklog": "consumers fall behind; queue depth and end-to-end delay grow",
    "trafficSurge": "request volume rises sharply across a service's instances, latency follows the volume",
    "memoryPressure": (
        "memory use nears its limit and GC runs often in BURSTS (spiky gc deltas), the service slows "
        "but is not OOM-killed"
    ),
    "cacheBreakdown": (
        "cache misses flood the backing store; the database load jumps after a cache key expires or fails"
    ),
    "slowSQL": "specific database statements become slow; spans touching the DB dominate latency",
    "codeDefect": "a code-path bug produces wrong results or exceptions for some operations, not resource exhaustion",
    "cpuDeadLoop": "one thread spins: about ONE core saturated in one service's container",
    "httpError5xx": (
        "a service answers with HTTP 5xx errors but nothing points to a more specific mechanism; the "
        "catch-all when the evidence stops at 'it returns 5xx'"
    ),
    "rateLimiting": (
        "a dependency throttles or rejects requests to protect itself (usually HTTP 429, at times a 403 "
        "that says it is throttling)"
    ),
    "dbNetworkLatency": (
        "the network path to a dependency (the database or another critical service) adds delay, "
        "jitter or loss; remote calls slow down although the dependency itself is not busy"
    ),
    "loadBalancerFailure": (
        "the balancer misroutes or drops traffic; some backends get none, clients see connection errors"
    ),
    "fullGC": "SUSTAINED full garbage collection: GC time stays high continuously and heap stays near its maximum",
    "nullPointerException": "NullPointerException stack traces in a service's logs with error spans",
    "diskIOHigh": "disk read/write wait on a node or volume is high; I/O-bound operations slow down",
    "nodeCpuHigh": "CPU usage of a whole NODE is high; all pods co-located on that node degrade",
    "redisUnavailable": "the Redis/cache service refuses or drops connections; callers log connection errors",
    "nodeMemoryOOM": "a node runs out of memory; the kernel OOM-kills pods on it",
    "slowResource": (
        "static front-end resources or a service's responses get markedly slower; frequently a service "
        "that only passes on a bottleneck further upstream"
    ),
    "cpuFullLoad": "MANY cores of one service's containers are saturated (not node-wide, not one thread)",
    "replicaScaleDown": (
        "a deployment is scaled to ZERO replicas: every pod goes away, the service has no endpoints "
        "left and its traffic stops entirely"
    ),
    "resourceLimitMisconfig": "container CPU/memory limits set too low; throttling or OOM kills at normal load",
    "podCrashLoop": "a pod restarts repeatedly (CrashLoopBackOff) right after start",
    "podPendingUnschedulable": "pods stay Pending; the scheduler cannot place them",
    "podRestartFlapping": "pods restart intermittently over time, with healthy periods between",
    "networkPolicyIsolation": (
        "a network policy blocks traffic between services; calls fail fast with connection errors"
    ),
    "dnsResolutionFailure": "name resolution fails; callers log unknown-host / DNS errors",
}

_CANON = {t.lower(): t for t in FAULT_TYPES}
_PREFIX = re.compile(r"^[Ff]\d+-")


def norm_entity(value: object) -> str:
    """§2.7: strip, collapse inner whitespace, lowercase."""
    return " ".join(str(value if value is not None else "").split()).lower()


def norm_type(value: object) -> str | None:
    """§2.7: strip, drop a leading `F<digits>-`, lowercase, map case-insensitively to the catalog
    ID; None when it is not in the catalog."""
    text = _PREFIX.sub("", str(value if value is not None else "").strip()).lower()
    return _CANON.get(text)


def catalog_text() -> str:
    """One line per fault type, catalog order (for the system prompt)."""
    return "\n".join(f"- {t}: {DEFINITIONS[t]}" for t in FAULT_TYPES)
