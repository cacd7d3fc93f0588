"""RCA-100 loader over the §2.2 layout (synthetic fixture) and its errors."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from benchmarks.rca100.benchmark import Rca100
from benchmarks.rca100.data import ENV_VAR, CaseData, RcaDataError


def test_fixture_has_the_exact_layout_and_dtypes(rca_root):
    assert (rca_root / "manifest.txt").read_text().split() == ["t001", "t002", "t003"]
    case = rca_root / "cases" / "t001"
    m, tr = pd.read_parquet(case / "metrics.parquet"), pd.read_parquet(case / "traces.parquet")
    assert (
        str(m["time"].dtype) == "int64"
        and str(tr["startTime"].dtype) == "int64"
        and str(tr["duration"].dtype) == "int64"
    )
    assert set(tr["statusCode"].map(type)) == {str}
    ev = pd.read_parquet(case / "events.parquet")["eventId"]
    assert json.loads(ev.iloc[0])["involvedObject"]["kind"] == "Pod"
    al = pd.read_parquet(case / "alerts.parquet")
    assert "currentValue" in json.loads(al["data"].iloc[0])
    for n in ("metrics", "logs", "traces", "events", "alerts"):
        assert 0 < len(pd.read_parquet(case / f"{n}.parquet")) <= 1000
    key = json.loads((rca_root / "answer_key" / "t001.gt.json").read_text())
    assert key["root_cause_entities"] == ["inventory"] and key["root_cause_types"] == ["memoryPressure"]
    assert json.loads(key["raw_ground_truth"])["outcome"]["expected_fault_id"] == "F001-memoryPressure"


def test_load_tasks_reads_manifest_task_and_key(rca_root):
    tasks = Rca100(name="rca100", data_dir=str(rca_root)).load_tasks()
    assert [t.task_id for t in tasks] == ["t001", "t002", "t003"]
    t2 = tasks[1].payload
    assert "prompt_text" not in t2["task"] and t2["task"]["alert_entity_name"] == "inventory"
    assert t2["gold"]["root_cause_entities"] == ["node-a"] and t2["gold"]["root_cause_types"] == ["nodeCpuHigh"]
    only = Rca100(name="rca100", data_dir=str(rca_root), case_ids=["t003"]).load_tasks()
    assert [t.task_id for t in only] == ["t003"]
    assert len(Rca100(name="rca100", data_dir=str(rca_root), limit=2).load_tasks()) == 2


def test_fixtures_keyword_materialises_the_fixture():
    b = Rca100(name="rca100", data_dir="fixtures")
    assert len(b.load_tasks()) == 3 and b.notes()["data"]["synthetic"] is True


def test_missing_data_dir_names_the_env_var(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(RcaDataError, match=ENV_VAR):
        Rca100(name="rca100").load_tasks()


def test_bad_root_and_unknown_params(tmp_path):
    with pytest.raises(RcaDataError, match="no cases/ folder"):
        Rca100(name="rca100", data_dir=str(tmp_path)).load_tasks()
    with pytest.raises(ValueError, match="benchmark 'rca100': unknown param 'max_step'.*valid keys: .*max_steps"):
        Rca100(name="rca100", data_dir="fixtures", max_step=3)


def test_missing_key_file_and_parquet_are_named(rca_root, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(rca_root, root)
    (root / "answer_key" / "t002.gt.json").unlink()
    with pytest.raises(RcaDataError, match="no answer key .*t002.gt.json"):
        Rca100(name="rca100", data_dir=str(root)).load_tasks()
    (root / "cases" / "t001" / "logs.parquet").unlink()
    with pytest.raises(RcaDataError, match="lacks \\['logs.parquet'\\]"):
        Rca100(name="rca100", data_dir=str(root), case_ids=["t001"]).load_tasks()
    with pytest.raises(RcaDataError, match="not in the data set"):
        Rca100(name="rca100", data_dir=str(root), case_ids=["t999"]).load_tasks()


def test_manifest_with_missing_case(rca_root, tmp_path):
    manifest = tmp_path / "m.txt"
    manifest.write_text("t001\nt050\n")
    with pytest.raises(RcaDataError, match="t050"):
        Rca100(name="rca100", data_dir=str(rca_root), manifest=str(manifest)).load_tasks()


def test_table_without_a_schema_column_is_an_error(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    pd.DataFrame({"entity_name": ["x"], "value": [1.0]}).to_parquet(d / "metrics.parquet")
    with pytest.raises(RcaDataError, match="lacks columns \\['metric', 'time'\\]"):
        CaseData(d).table("metrics")
