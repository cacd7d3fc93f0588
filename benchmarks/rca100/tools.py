"""RCA-100 read-only tools over one case's tables (docs/pos-benchmarks.md §2.5). Each tool returns a
JSON-able dict; unknown entities/metrics return {"error": …, "hints": […]}. Limits arrive
clamped (`schema.validate`). Times print in Asia/Shanghai."""

from __future__ import annotations

import difflib
import json
from collections import Counter
from typing import Any

from benchmarks.rca100.data import CaseData
from benchmarks.rca100.timefmt import fmt_epoch, fmt_iso

LOG_CHARS, EVENT_CHARS, STATUS_CHARS = 300, 200, 200  # §2.5 cuts
ENTITY_NAMES_PER_METRIC = 10  # [harness choice] entity list per metric in list_metric_names


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else round(f, 4)


def hints(name: str, candidates: list[str], n: int = 5) -> list[str]:
    """Close or containing names, for error messages."""
    low = name.lower()
    subs = [c for c in candidates if low in c.lower() or c.lower() in low]
    close = difflib.get_close_matches(name, candidates, n=n, cutoff=0.5)
    return list(dict.fromkeys(subs + close))[:n]


def _match(name: str, candidates: list[str]) -> str | None:
    if name in candidates:
        return name
    low = {c.lower(): c for c in candidates}
    return low.get(name.strip().lower())


class RcaTools:
    def __init__(self, case: CaseData) -> None:
        self.case = case

    def call(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        return getattr(self, name)(**kwargs)

    # ---------------------------------------------------------------- overview and topology
    def get_data_overview(self) -> dict[str, Any]:
        m, lg, tr, ev, al = (self.case.table(t) for t in ("metrics", "logs", "traces", "events", "alerts"))
        topo = self.case.topology

        def span(series: Any, unit: str | None) -> list[str] | None:
            s = series.dropna()
            if s.empty:
                return None
            if unit == "str":
                return [str(s.astype(str).min()), str(s.astype(str).max())]
            return [fmt_epoch(s.min(), unit), fmt_epoch(s.max(), unit)]

        return {
            "tables": {
                "metrics": {"rows": len(m), "time_range": span(m["time"], "us")},
                "logs": {"rows": len(lg), "time_range": span(lg["_time_"], "str")},
                "traces": {"rows": len(tr), "time_range": span(tr["startTime"], "ns")},
                "events": {"rows": len(ev)},
                "alerts": {"rows": len(al), "time_range": span(al["time"], None)},
            },
            "metric_names": int(m["metric"].nunique()),
            "metric_entities": int(m["entity_name"].nunique()),
            "trace_services": int(tr["serviceName"].nunique()),
            "topology": {
                "entities": len(topo["entities"]),
                "edges": len(topo["edges"]),
                "entities_by_type": dict(sorted(Counter(e.get("type", "") for e in topo["entities"]).items())),
            },
        }

    def _names_of(self, etype: str) -> list[str]:
        return sorted(str(e.get("name", "")) for e in self.case.topology["entities"] if e.get("type") == etype)

    def list_entities(self, entity_type: str, keyword: str | None, limit: int) -> dict[str, Any]:
        types = sorted({str(e.get("type", "")) for e in self.case.topology["entities"]})
        etype = _match(entity_type, types)
        if etype is None:
            return {"error": f"unknown entity_type '{entity_type}'", "available_types": types}
        names = [n for n in self._names_of(etype) if not keyword or keyword.lower() in n.lower()]
        return {"entity_type": etype, "total": len(names), "entities": names[:limit]}

    def get_topology(self, entity_name: str | None, relation: str | None, limit: int) -> dict[str, Any]:
        topo = self.case.topology
        if entity_name is None:
            return {
                "entities_by_type": dict(sorted(Counter(e.get("type", "") for e in topo["entities"]).items())),
                "edges_by_relation": dict(sorted(Counter(e.get("relation", "") for e in topo["edges"]).items())),
                "services": self._names_of("apm.service"),
                "nodes": self._names_of("k8s.node"),
                "hint": "pass entity_name for an entity's properties and edges",
            }
        by_id = {str(e.get("id")): e for e in topo["entities"]}
        names = {str(e.get("name")): e for e in topo["entities"]}
        key = _match(entity_name, list(names))
        ent = names[key] if key else by_id.get(entity_name)
        if ent is None:
            return {"error": f"unknown entity '{entity_name}'", "hints": hints(entity_name, list(names))}
        eid = str(ent.get("id"))
        label = lambda i: str(by_id.get(str(i), {}).get("name", i))  # noqa: E731
        edges = [
            e
            for e in topo["edges"]
            if eid in (str(e.get("src")), str(e.get("dst")))
            and (relation is None or str(e.get("relation", "")).lower() == relation.lower())
        ]
        return {
            "entity": {"id": eid, "name": ent.get("name"), "type": ent.get("type"), "props": ent.get("props", {})},
            "total_edges": len(edges),
            "edges": [
                {
                    "src": label(e.get("src")),
                    "dst": label(e.get("dst")),
                    "src_type": e.get("src_type"),
                    "dst_type": e.get("dst_type"),
                    "relation": e.get("relation"),
                }
                for e in edges[:limit]
            ],
        }

    # ---------------------------------------------------------------- metrics
    def _metric_entity(self, entity_name: str) -> tuple[str | None, dict[str, Any] | None]:
        ents = sorted(self.case.table("metrics")["entity_name"].astype(str).unique())
        found = _match(entity_name, ents)
        if found is None:
            return None, {"error": f"no metrics for entity '{entity_name}'", "hints": hints(entity_name, ents)}
        return found, None

    def list_metric_names(self, entity_name: str | None, keyword: str | None, limit: int) -> dict[str, Any]:
        df = self.case.table("metrics")
        if entity_name is not None:
            ent, err = self._metric_entity(entity_name)
            if err:
                return err
            df = df[df["entity_name"].astype(str) == ent]
        if keyword:
            df = df[df["metric"].astype(str).str.contains(keyword, case=False, regex=False)]
        groups = df.groupby(df["metric"].astype(str))["entity_name"].agg(lambda s: sorted(s.astype(str).unique()))
        rows = [
            {"metric": k, "entity_count": len(v), "entities": v[:ENTITY_NAMES_PER_METRIC]} for k, v in groups.items()
        ]
        return {"total_metrics": len(rows), "metrics": rows[:limit]}

    def query_metrics(self, entity_name: str, metric: str | None, limit: int) -> dict[str, Any]:
        ent, err = self._metric_entity(entity_name)
        if err:
            return err
        df = self.case.table("metrics")
        df = df[df["entity_name"].astype(str) == ent]
        names = sorted(df["metric"].astype(str).unique())
        if metric is None:
            g = df.groupby(df["metric"].astype(str))["value"].agg(["count", "min", "mean", "max"])
            rows = [
                {
                    "metric": k,
                    "count": int(r["count"]),
                    "min": _num(r["min"]),
                    "mean": _num(r["mean"]),
                    "max": _num(r["max"]),
                }
                for k, r in g.iterrows()
            ]
            return {"entity_name": ent, "total_metrics": len(rows), "metrics": rows[:60]}
        found = _match(metric, names)
        if found is None:
            return {"error": f"entity '{ent}' has no metric '{metric}'", "available_metrics": names[:60]}
        s = df[df["metric"].astype(str) == found]
        minute = (s["time"].astype("int64") // 60_000_000) * 60_000_000
        series = s["value"].astype(float).groupby(minute).mean().sort_index().tail(limit)
        vals = s["value"].astype(float)
        return {
            "entity_name": ent,
            "metric": found,
            "minutes": len(series),
            "series": [{"time": fmt_epoch(t, "us"), "mean": _num(v)} for t, v in series.items()],
            "overall": {
                "min": _num(vals.min()),
                "mean": _num(vals.mean()),
                "max": _num(vals.max()),
                "points": len(vals),
            },
        }

    # ---------------------------------------------------------------- logs, traces, events, alerts
    def search_logs(self, pod_name: str | None, keyword: str | None, limit: int) -> dict[str, Any]:
        df = self.case.table("logs")
        pods = df["_pod_name_"].astype(str)
        if pod_name is not None:
            mask = pods.str.lower().str.startswith(pod_name.lower())
            if not mask.any():
                return {
                    "error": f"no logs for a pod starting with '{pod_name}'",
                    "hints": hints(pod_name, sorted(pods.unique())),
                }
            df = df[mask]
        if keyword:
            df = df[df["content"].astype(str).str.contains(keyword, case=False, regex=False)]
        latest = df.assign(_t=df["_time_"].astype(str)).sort_values("_t", ascending=False).head(limit)
        return {
            "total_matches": len(df),
            "lines": [
                {"time": str(r["_time_"]), "pod": str(r["_pod_name_"]), "content": str(r["content"])[:LOG_CHARS]}
                for _, r in latest.iterrows()
            ],
        }

    def query_traces(
        self, service_name: str | None, error_only: bool, min_duration_ms: float | None, limit: int
    ) -> dict[str, Any]:
        df = self.case.table("traces")
        if service_name is not None:
            services = sorted(df["serviceName"].astype(str).unique())
            svc = _match(service_name, services)
            if svc is None:
                return {"error": f"no spans for service '{service_name}'", "hints": hints(service_name, services)}
            df = df[df["serviceName"].astype(str) == svc]
        if error_only:
            df = df[df["statusCode"].astype(str) == "2"]  # §2.2: statusCode "2" = error
        if min_duration_ms is not None:
            df = df[df["duration"].astype(float) >= min_duration_ms * 1e6]
        ms = df["duration"].astype(float) / 1e6
        stats: dict[str, Any] = {"spans": len(df), "error_spans": int((df["statusCode"].astype(str) == "2").sum())}
        if len(df):
            stats["duration_ms"] = {
                "mean": _num(ms.mean()),
                "p50": _num(ms.quantile(0.5)),
                "p95": _num(ms.quantile(0.95)),
                "max": _num(ms.max()),
            }
        slow = df.assign(_d=df["duration"].astype(float)).sort_values("_d", ascending=False).head(limit)
        return {
            "stats": stats,
            "slowest": [
                {
                    "start": fmt_epoch(r["startTime"], "ns"),
                    "service": str(r["serviceName"]),
                    "span": str(r["spanName"]),
                    "duration_ms": _num(float(r["duration"]) / 1e6),
                    "status_code": str(r["statusCode"]),
                    "status_message": str(r["statusMessage"] or "")[:STATUS_CHARS],
                }
                for _, r in slow.iterrows()
            ],
        }

    def get_k8s_events(self, keyword: str | None, limit: int) -> dict[str, Any]:
        rows, unreadable = [], 0
        for raw in self.case.table("events")["eventId"]:
            try:
                ev = json.loads(raw) if isinstance(raw, str) else dict(raw)
            except (TypeError, ValueError):
                unreadable += 1
                continue
            obj = ev.get("involvedObject") or {}
            row: dict[str, Any] = {
                "time": fmt_iso(ev.get("lastTimestamp") or ev.get("eventTime")),
                "type": ev.get("type"),
                "reason": ev.get("reason"),
                "object": f"{obj.get('kind', '')}/{obj.get('name', '')}",
                "count": ev.get("count"),
                "message": str(ev.get("message") or "")[:EVENT_CHARS],
            }
            text = " ".join(str(row[k]) for k in ("reason", "object", "message")) + " " + str(ev.get("message") or "")
            if not keyword or keyword.lower() in text.lower():
                rows.append(row)
        rows.sort(key=lambda r: r["time"], reverse=True)
        out: dict[str, Any] = {"total_matches": len(rows), "events": rows[:limit]}
        if unreadable:
            out["unreadable_events"] = unreadable
        return out

    def get_alerts(self, limit: int) -> dict[str, Any]:
        df = self.case.table("alerts").sort_values("time").head(limit)
        out = []
        for _, r in df.iterrows():
            try:
                data = json.loads(r["data"]) if isinstance(r["data"], str) else (r["data"] or {})
            except ValueError:
                data = {}
            out.append(
                {
                    "time": fmt_epoch(r["time"]),
                    "status": r["status"],
                    "severity": r["severity"],
                    "current_value": data.get("currentValue") if isinstance(data, dict) else None,
                }
            )
        return {"total": len(self.case.table("alerts")), "alerts": out}
