"""`python -m benchmarks.rca100.validate`: upstream's answer-key checks on the synthetic fixture
(valid as written) and on damaged copies (each check fires)."""

from __future__ import annotations

import json
import shutil

from benchmarks.rca100.validate import main, validate


def test_fixture_keys_are_valid(rca_root, capsys):
    assert main(["--data", str(rca_root)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cases"] >= 3 and not report["violations"] and "UNRESOLVED" not in report["entity_levels"]


def test_each_check_fires(rca_root, tmp_path):
    root = tmp_path / "rca"
    shutil.copytree(rca_root, root)
    keys = sorted((root / "answer_key").glob("*.gt.json"))
    k0, k1, k2 = (json.loads(p.read_text()) for p in keys[:3])
    k0["root_cause_entities"] = ["no-such-service"]
    k1["root_cause_types"] = ["cosmicRay"]
    raw = json.loads(k2["raw_ground_truth"])
    raw["outcome"]["expected_fault_id"] = "F9-nodeDown" if k2["root_cause_types"][0] != "nodeDown" else "F9-fullGC"
    k2["raw_ground_truth"] = json.dumps(raw)
    for p, k in zip(keys, (k0, k1, k2)):
        p.write_text(json.dumps(k))
    v = "\n".join(validate(str(root))["violations"])
    assert "not in its own topology.json" in v and "outside the 29-type catalog" in v and "!= expected_fault_id" in v
    assert "differ from raw_ground_truth target_entities" in v
    assert main(["--data", str(root)]) == 1
