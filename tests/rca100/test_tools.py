"""RCA-100 tools on the synthetic fixture (docs/pos-benchmarks.md §2.5): outputs, clamped limits,
Asia/Shanghai times, errors with hints, and argument validation."""

from __future__ import annotations

import pytest

from benchmarks.rca100.data import CaseData
from benchmarks.rca100.schema import TOOLS, tool_specs, validate
from benchmarks.rca100.tools import RcaTools


@pytest.fixture
def tools(rca_root):
    return {cid: RcaTools(CaseData(rca_root / "cases" / cid)) for cid in ("t001", "t002", "t003")}


def run(tool: RcaTools, name: str, **args):
    kwargs, err = validate(name, args)
    assert err is None, err
    return tool.call(name, kwargs)


def test_specs_cover_the_ten_tools():
    specs = {s.name: s for s in tool_specs()}
    assert list(specs) == list(TOOLS) and len(specs) == 10
    assert specs["submit_root_cause"].parameters["required"] == ["root_cause_entity", "fault_type"]
    assert len(specs["submit_root_cause"].parameters["properties"]["fault_type"]["enum"]) == 29


def test_overview(tools):
    o = run(tools["t001"], "get_data_overview")
    assert o["tables"]["metrics"]["rows"] == 660 and o["tables"]["traces"]["rows"] == 200
    assert o["tables"]["metrics"]["time_range"][0].endswith("+08:00")
    assert o["topology"]["entities"] == 11 and o["topology"]["entities_by_type"]["apm.service"] == 4


def test_list_entities_and_unknown_type(tools):
    assert run(tools["t001"], "list_entities", entity_type="k8s.node")["entities"] == ["node-a", "node-b"]
    pods = run(tools["t001"], "list_entities", entity_type="K8S.POD", keyword="inv")
    assert pods["entities"] == ["inventory-6f4d8-m2n7"]
    err = run(tools["t001"], "list_entities", entity_type="service")
    assert "error" in err and "apm.service" in err["available_types"]


def test_limits_are_clamped(tools):
    kwargs, err = validate("list_entities", {"entity_type": "k8s.pod", "limit": 1000})
    assert err is None and kwargs["limit"] == 100
    kwargs, _ = validate("query_traces", {"limit": -5})
    assert kwargs["limit"] == 1
    kwargs, _ = validate("get_alerts", {"limit": "7"})
    assert kwargs["limit"] == 7
    assert len(run(tools["t001"], "list_entities", entity_type="k8s.pod", limit=2)["entities"]) == 2


def test_metrics_summary_and_series_show_the_injected_fault(tools):
    summary = run(tools["t002"], "query_metrics", entity_name="node-a")
    assert {r["metric"] for r in summary["metrics"]} == {
        "node_cpu_usage_rate",
        "node_memory_usage_rate",
        "node_ready_status",
    }
    s = run(tools["t002"], "query_metrics", entity_name="node-a", metric="node_cpu_usage_rate", limit=10)
    assert s["minutes"] == 10 and all(p["mean"] > 0.9 for p in s["series"])  # the last 10 minutes are after the fault
    calm = run(tools["t002"], "query_metrics", entity_name="node-b", metric="node_cpu_usage_rate")
    assert calm["overall"]["max"] < 0.5 and calm["minutes"] == 30
    assert s["series"][0]["time"].endswith("+08:00")


def test_metric_errors_have_hints(tools):
    err = run(tools["t001"], "query_metrics", entity_name="inventry")
    assert "error" in err and "inventory" in err["hints"]
    err = run(tools["t001"], "query_metrics", entity_name="inventory", metric="cpu")
    assert "error" in err and "arms_jvm_gc_delta" in err["available_metrics"]
    names = run(tools["t001"], "list_metric_names", keyword="gc")
    assert [m["metric"] for m in names["metrics"]] == ["arms_jvm_gc_delta"] and names["metrics"][0]["entity_count"] == 4


def test_topology(tools):
    top = run(tools["t001"], "get_topology")
    assert top["services"] == ["checkout", "frontend", "inventory", "payment"] and top["nodes"] == ["node-a", "node-b"]
    inv = run(tools["t001"], "get_topology", entity_name="inventory-6f4d8-m2n7")
    assert inv["entity"]["props"]["node_name"] == "node-a"
    runs_on = run(tools["t001"], "get_topology", entity_name="node-a", relation="runs_on")
    assert {e["src"] for e in runs_on["edges"]} == {"frontend-7d9f6-x1k2", "inventory-6f4d8-m2n7"}
    assert "error" in run(tools["t001"], "get_topology", entity_name="nope")


def test_logs_traces_events_alerts(tools):
    logs = run(tools["t003"], "search_logs", pod_name="checkout", keyword="429", limit=5)
    assert logs["total_matches"] > 0 and len(logs["lines"]) == 5 and all("429" in ln["content"] for ln in logs["lines"])
    times = [ln["time"] for ln in logs["lines"]]
    assert times == sorted(times, reverse=True)
    assert "error" in run(tools["t003"], "search_logs", pod_name="zzz")
    errs = run(tools["t003"], "query_traces", service_name="checkout", error_only=True)
    assert errs["stats"]["spans"] == errs["stats"]["error_spans"] > 0
    slow = run(tools["t001"], "query_traces", min_duration_ms=250, limit=3)
    assert len(slow["slowest"]) == 3 and all(s["duration_ms"] >= 250 for s in slow["slowest"])
    assert slow["slowest"][0]["duration_ms"] >= slow["slowest"][-1]["duration_ms"]
    ev = run(tools["t002"], "get_k8s_events", keyword="cpu")
    assert [e["reason"] for e in ev["events"]] == ["NodeCPUPressure"] and ev["events"][0]["time"].endswith("+08:00")
    al = run(tools["t001"], "get_alerts", limit=2)
    assert al["total"] == 4 and [a["current_value"] for a in al["alerts"]] == [1.2, 1.5]


@pytest.mark.parametrize(
    "name,args,fragment",
    [
        ("drop_table", {}, "unknown tool"),
        ("list_entities", {}, "needs `entity_type`"),
        ("list_entities", {"entity_type": "k8s.pod", "limit": "many"}, "must be a number"),
        ("query_traces", {"error_only": "maybe"}, "true or false"),
        ("query_metrics", {"entity_name": ["a"]}, "must be a string"),
        ("get_alerts", {"since": "now"}, "unknown argument"),
        ("get_alerts", "limit=3", "JSON object"),
        ("query_traces", {"min_duration_ms": float("nan")}, "finite"),
    ],
)
def test_bad_arguments_give_error_text(name, args, fragment):
    kwargs, err = validate(name, args)
    assert kwargs == {} and fragment in err
