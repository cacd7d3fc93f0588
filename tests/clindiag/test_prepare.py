"""`python -m benchmarks.clindiag.prepare`: the official archive → PoS layout as upstream's
preparation script (rare kept, challenging drawn with Random(42), unusable diagnoses excluded),
and the validation of a prepared folder. A small archive in the official schema."""

from __future__ import annotations

import json
import random
import zipfile

from benchmarks.clindiag.benchmark import ClinDiag
from benchmarks.clindiag.prepare import ENVIRONMENT_FILES, main
from tests.conftest import upstream_src


def archive(
    path, rare=("rare0", "rare1", "rare2"), challenging=("101", "102", "103", "104", "105"), bad=("rare2", "103")
):
    with zipfile.ZipFile(path, "w") as z:
        for cid in (*rare, *challenging):
            z.writestr(f"{cid}/initial_information.json", json.dumps({"initial_information": f"patient {cid}"}))
            for name in ENVIRONMENT_FILES[1:]:
                z.writestr(f"{cid}/{name}", json.dumps({name[:-5]: f"{name} of {cid}"}))
            final = "Not specified" if cid in bad else f"disease {cid}"
            z.writestr(f"{cid}/diagnosis.json", json.dumps({"diagnosis": {"final_diagnosis": final}}))
    return path


def test_build_selects_as_upstream_and_check_validates(tmp_path, capsys):
    upstream_src()  # compares with upstream's 604-case manifest
    z = archive(tmp_path / "Clindiag_Benchmark.zip")
    out = tmp_path / "prepared"
    rc = main(["build", "--zip", str(z), "--out", str(out), "--sample-size", "2"])
    assert rc == 1  # built, but it is not upstream's 604-case manifest
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["matches_upstream_manifest"] is False and report["upstream_cases"] == 604
    challenging = sorted(random.Random(42).sample(["101", "102", "104", "105"], 2))
    lines = (out / "manifest.txt").read_text().split()
    assert lines == ["rare/rare0", "rare/rare1"] + [f"challenging/{c}" for c in challenging]
    assert sorted(p.name for p in (out / "cases" / "rare__rare0").iterdir()) == sorted(ENVIRONMENT_FILES)
    assert (
        not (out / "cases" / "rare__rare2").exists() and (out / "answer_key" / "rare__rare0.diagnosis.json").is_file()
    )
    assert main(["check", str(out), "--own-manifest"]) == 0
    tasks = ClinDiag(data_dir=str(out), manifest=str(out / "manifest.txt")).load_tasks()
    assert [t.task_id for t in tasks] == [f"{line.split('/')[0]}__{line.split('/')[1]}" for line in lines]
    assert main(["build", "--zip", str(z), "--out", str(out), "--sample-size", "2"]) == 2  # never overwrites
    (out / "answer_key" / "rare__rare1.diagnosis.json").write_text('{"diagnosis": {"final_diagnosis": "none"}}')
    assert main(["check", str(out), "--own-manifest"]) == 1
    assert main(["check", str(out)]) == 1  # against upstream's 604 cases: most are missing here
