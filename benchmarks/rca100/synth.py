"""Synthetic RCA-100 fixture (docs/pos-benchmarks.md §2.8): three tiny invented incidents in the exact
§2.2 layout and dtypes, generated deterministically from code (no RCA-100 data). Every value is
made up. `write_fixture(root)` writes the layout; `fixture_root()` materialises it once per
source version under the temp folder (so the loader reads real parquet files).

    t001 memoryPressure on service `inventory` (bursty arms_jvm_gc_delta, slower spans)
    t002 nodeCpuHigh on node `node-a` (node_cpu_usage_rate up, co-located pods degrade)
    t003 rateLimiting on service `checkout` (HTTP 429 log lines and error spans)
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

T0_US = 1_773_453_600_000_000  # invented window start (µs epoch); 30 one-minute ticks
MINUTES, FAULT_AT = 30, 15
SERVICES = ("frontend", "checkout", "inventory", "payment")
PODS = {
    "frontend": ("frontend-7d9f6-x1k2", "node-a"),
    "checkout": ("checkout-5c8b7-p9q3", "node-b"),
    "inventory": ("inventory-6f4d8-m2n7", "node-a"),
    "payment": ("payment-8e2a1-z5w6", "node-b"),
}
NODES = ("node-a", "node-b")
CALLS = (("frontend", "checkout"), ("checkout", "inventory"), ("checkout", "payment"))

CASES: dict[str, dict[str, Any]] = {
    "t001": {
        "fault": "memoryPressure",
        "entity": "inventory",
        "alert_entity": "frontend",
        "seed": 11,
        "title": "frontend P95 latency above threshold",
    },
    "t002": {
        "fault": "nodeCpuHigh",
        "entity": "node-a",
        "alert_entity": "inventory",
        "seed": 22,
        "title": "inventory P95 latency above threshold",
    },
    "t003": {
        "fault": "rateLimiting",
        "entity": "checkout",
        "alert_entity": "frontend",
        "seed": 33,
        "title": "frontend error rate above threshold",
    },
}


def topology() -> dict[str, Any]:
    ents = [{"id": f"svc:{s}", "name": s, "type": "apm.service", "props": {"namespace": "shop"}} for s in SERVICES]
    ents += [{"id": f"node:{n}", "name": n, "type": "k8s.node", "props": {"status": "Ready"}} for n in NODES]
    ents += [
        {
            "id": f"pod:{p}",
            "name": p,
            "type": "k8s.pod",
            "props": {"namespace": "shop", "node_name": n, "status": "Running"},
        }
        for p, n in PODS.values()
    ]
    ents.append(
        {"id": "deploy:inventory", "name": "inventory", "type": "k8s.deployment", "props": {"namespace": "shop"}}
    )
    edges = [
        {
            "src": f"svc:{a}",
            "dst": f"svc:{b}",
            "src_type": "apm.service",
            "dst_type": "apm.service",
            "relation": "calls",
        }
        for a, b in CALLS
    ]
    for s, (p, n) in PODS.items():
        edges.append(
            {
                "src": f"svc:{s}",
                "dst": f"pod:{p}",
                "src_type": "apm.service",
                "dst_type": "k8s.pod",
                "relation": "contains",
            }
        )
        edges.append(
            {
                "src": f"pod:{p}",
                "dst": f"node:{n}",
                "src_type": "k8s.pod",
                "dst_type": "k8s.node",
                "relation": "runs_on",
            }
        )
    edges.append(
        {
            "src": "deploy:inventory",
            "dst": f"pod:{PODS['inventory'][0]}",
            "src_type": "k8s.deployment",
            "dst_type": "k8s.pod",
            "relation": "manages",
        }
    )
    return {"entities": ents, "edges": edges}


def _slow(case: dict[str, Any], service: str, minute: int) -> bool:
    """Whether `service` is degraded at `minute` in this case (root cause or co-located victim)."""
    if minute < FAULT_AT:
        return False
    if case["fault"] == "memoryPressure":
        return service in ("inventory", "checkout", "frontend")  # the root cause and its callers
    if case["fault"] == "nodeCpuHigh":
        return PODS[service][1] == case["entity"]
    return False


def _metrics(case: dict[str, Any], rng: random.Random) -> dict[str, list]:
    rows: dict[str, list] = {"entity_name": [], "metric": [], "value": [], "time": []}

    def add(entity: str, metric: str, value: float, minute: int) -> None:
        rows["entity_name"].append(entity)
        rows["metric"].append(metric)
        rows["value"].append(float(round(value, 4)))
        rows["time"].append(T0_US + minute * 60_000_000 + rng.randrange(0, 5_000_000))

    for m in range(MINUTES):
        hot = m >= FAULT_AT
        for n in NODES:
            cpu = (
                rng.uniform(0.92, 0.98)
                if hot and case["fault"] == "nodeCpuHigh" and n == case["entity"]
                else rng.uniform(0.28, 0.42)
            )
            add(n, "node_cpu_usage_rate", cpu, m)
            add(n, "node_memory_usage_rate", rng.uniform(0.45, 0.55), m)
            add(n, "node_ready_status", 1.0, m)
        for s in SERVICES:
            bursty = hot and case["fault"] == "memoryPressure" and s == case["entity"]
            add(s, "request_count", rng.uniform(110, 130) * (1.0 if s != "frontend" else 1.5), m)
            add(
                s,
                "arms_jvm_gc_delta",
                (rng.uniform(14, 22) if m % 3 == 0 else rng.uniform(1, 3)) if bursty else rng.uniform(0, 2),
                m,
            )
            used = rng.uniform(1.6e9, 1.9e9) if bursty and m % 3 == 0 else rng.uniform(0.7e9, 0.9e9)
            add(s, "arms_jvm_mem_used_bytes", used, m)
            add(s, "arms_jvm_mem_max_bytes", 2.0e9, m)
    return rows


def _traces(case: dict[str, Any], rng: random.Random) -> dict[str, list]:
    rows: dict[str, list] = {
        k: [] for k in ("serviceName", "spanName", "startTime", "duration", "statusCode", "statusMessage")
    }
    for i in range(50):
        minute = i * MINUTES // 50
        for s in SERVICES:
            slow = _slow(case, s, minute)
            limited = case["fault"] == "rateLimiting" and s == case["entity"] and minute >= FAULT_AT and i % 2 == 0
            dur_ms = rng.uniform(300, 900) if slow else rng.uniform(15, 60)
            rows["serviceName"].append(s)
            rows["spanName"].append(f"{'GET' if s != 'checkout' else 'POST'} /api/{s}")
            rows["startTime"].append(T0_US * 1000 + minute * 60_000_000_000 + rng.randrange(0, 50_000_000_000))
            rows["duration"].append(int(dur_ms * 1e6))
            rows["statusCode"].append("2" if limited else "1")
            rows["statusMessage"].append("HTTP 429 Too Many Requests: rate limit exceeded" if limited else "")
    return rows


def _stamp(minute: int, second: int) -> str:
    from benchmarks.rca100.timefmt import fmt_epoch

    return fmt_epoch(T0_US + minute * 60_000_000 + second * 1_000_000, "us")[:19] + f".{second * 7 % 1000:03d}"


def _logs(case: dict[str, Any], rng: random.Random) -> dict[str, list]:
    rows: dict[str, list] = {"_pod_name_": [], "content": [], "_time_": []}
    for i in range(120):
        s = SERVICES[i % 4]
        minute = i * MINUTES // 120
        pod = PODS[s][0]
        text = f"INFO handled request id={rng.randrange(10**6):06d} status=200"
        if minute >= FAULT_AT and s == case["entity"] and (i // 4) % 2 == 0:
            if case["fault"] == "memoryPressure":
                text = f"WARN GC pause {rng.randrange(300, 900)}ms, heap usage {rng.randrange(85, 97)}%"
            elif case["fault"] == "rateLimiting":
                text = "WARN request rejected: 429 Too Many Requests (rate limit 100/s exceeded)"
        elif _slow(case, s, minute) and i % 3 == 0:
            text = f"WARN slow request {rng.randrange(400, 1200)}ms on /api/{s}"
        rows["_pod_name_"].append(pod)
        rows["content"].append(text)
        rows["_time_"].append(_stamp(minute, i % 60))
    return rows


def _events(case: dict[str, Any]) -> dict[str, list]:
    evs = []
    for k, (s, (pod, node)) in enumerate(PODS.items()):
        evs.append(
            {
                "lastTimestamp": f"2026-03-14T02:0{k}:00Z",
                "type": "Normal",
                "reason": "Pulled",
                "involvedObject": {"kind": "Pod", "name": pod},
                "count": 1,
                "message": f"Container image for {s} already present on {node}",
            }
        )
    if case["fault"] == "nodeCpuHigh":
        evs.append(
            {
                "eventTime": "2026-03-14T02:16:30Z",
                "type": "Warning",
                "reason": "NodeCPUPressure",
                "involvedObject": {"kind": "Node", "name": case["entity"]},
                "count": 4,
                "message": "node CPU usage above 90% for 5m",
            }
        )
    evs.append(
        {
            "lastTimestamp": "2026-03-14T02:20:00Z",
            "type": "Warning",
            "reason": "Unhealthy",
            "involvedObject": {"kind": "Pod", "name": PODS[case["alert_entity"]][0]},
            "count": 3,
            "message": "Readiness probe took longer than 1s",
        }
    )
    return {"eventId": [json.dumps(e) for e in evs]}


def _alerts(case: dict[str, Any]) -> dict[str, list]:
    rows: dict[str, list] = {"time": [], "status": [], "severity": [], "data": []}
    for k in range(4):
        rows["time"].append(T0_US + (FAULT_AT + 2 + k * 3) * 60_000_000)
        rows["status"].append("firing" if k < 3 else "resolved")
        rows["severity"].append("P2")
        rows["data"].append(json.dumps({"currentValue": round(1.2 + 0.3 * k, 2), "entity": case["alert_entity"]}))
    return rows


def write_case(root: Path, case_id: str) -> None:
    import pandas as pd  # lazy

    case = CASES[case_id]
    rng = random.Random(case["seed"])
    d = root / "cases" / case_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "topology.json").write_text(json.dumps(topology(), indent=1), encoding="utf-8")
    start, end = T0_US // 1_000_000, T0_US // 1_000_000 + MINUTES * 60
    task = {
        "task_version": "synthetic-1",
        "alert_title": case["title"],
        "alert_entity_name": case["alert_entity"],
        "alert_entity_type": "apm.service",
        "alert_trigger_time": start + (FAULT_AT + 2) * 60,
        "time_range_start": start,
        "time_range_end": end,
        "prompt_text": f"(synthetic) Alert: {case['title']}",
    }
    (d / "task.json").write_text(json.dumps(task, indent=1), encoding="utf-8")
    tables = {
        "metrics": _metrics(case, rng),
        "traces": _traces(case, rng),
        "logs": _logs(case, rng),
        "events": _events(case),
        "alerts": _alerts(case),
    }
    dtypes = {"time": "int64", "startTime": "int64", "duration": "int64", "value": "float64"}
    for name, cols in tables.items():
        df = pd.DataFrame(cols)
        df = df.astype({c: t for c, t in dtypes.items() if c in df.columns and not (name == "alerts" and c == "value")})
        df.to_parquet(d / f"{name}.parquet", index=False)
    keys = root / "answer_key"
    keys.mkdir(exist_ok=True)
    fid = f"F{list(CASES).index(case_id) + 1:03d}-{case['fault']}.synth{case_id[1:]}"
    expected = (
        f"F{list(CASES).index(case_id) + 1:03d}-{case['fault']}"  # as upstream's validator reads it (F<n>-<type>)
    )
    raw = {
        "outcome": {
            "expected_fault_id": expected,
            "target_entity_ids": [case["entity"]],
            "target_entities": [
                {
                    "entity_id": case["entity"],
                    "entity_name": case["entity"],
                    "entity_domain": "synthetic",
                    "entity_type": "k8s.node" if case["entity"].startswith("node") else "apm.service",
                }
            ],
            "expected_conclusion": f"(synthetic) {case['fault']} on {case['entity']}",
        },
        "reasoning": {
            "steps": [
                {
                    "step": 1,
                    "title": "invented cause",
                    "step_type": "cause",
                    "target": case["entity"],
                    "fault_id": fid,
                    "description": "synthetic",
                    "required": True,
                    "queryable": True,
                    "observability": [],
                }
            ]
        },
        "metadata": {"synthetic": True},
    }
    key = {
        "incident_id": fid,
        "case_id": fid,
        "workspace": "synthetic",
        "region_id": "nowhere-1",
        "time_range_start": start,
        "time_range_end": end,
        "root_cause_entities": [case["entity"]],
        "root_cause_types": [case["fault"]],
        "alert_title": case["title"],
        "alert_trigger_time": task["alert_trigger_time"],
        "prompt_text": task["prompt_text"],
        "raw_ground_truth": json.dumps(raw),
    }
    (keys / f"{case_id}.gt.json").write_text(json.dumps(key, indent=1), encoding="utf-8")


def write_fixture(root: str | os.PathLike) -> Path:
    """Write the whole fixture (manifest, cases, answer_key, mapping) under `root`."""
    root = Path(root)
    for cid in CASES:
        write_case(root, cid)
    (root / "manifest.txt").write_text("\n".join(CASES) + "\n", encoding="utf-8")
    mapping = {"version": "synthetic", "seed": 42, "task_to_case_id": {c: f"synth-{c}" for c in CASES}}
    (root / "answer_key" / "mapping.json").write_text(json.dumps(mapping, indent=1), encoding="utf-8")
    return root


def fixture_root() -> Path:
    """The fixture folder for `data_dir: fixtures`, written once per version of this file."""
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"stateharness-rca100-synth-{digest}"
    if (root / ".complete").is_file():
        return root
    tmp = Path(tempfile.mkdtemp(prefix="rca100-synth-", dir=tempfile.gettempdir()))
    write_fixture(tmp)
    (tmp / ".complete").write_text("ok", encoding="utf-8")
    try:
        os.replace(tmp, root)  # atomic; a concurrent writer that won leaves its copy in place
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return root
