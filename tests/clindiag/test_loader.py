"""ClinDiag loader: the fictional fixture (7-file and PoS 4-file layouts), the real shared
cases (skipped when absent), manifests and clear errors (docs/pos-benchmarks.md §3.2–§3.4)."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.clindiag.benchmark import ClinDiag
from benchmarks.clindiag.data import ENV_VAR, FIXTURES, ClinDiagDataError, load_case, subset_of
from tests.conftest import shared_path, upstream_src


def by_id(tasks):
    return {t.task_id: t.payload for t in tasks}


def test_fixture_cases_and_layouts():
    tasks = by_id(ClinDiag(name="clindiag", data_dir="fixtures").load_tasks())
    assert list(tasks) == ["90000001", "challenging__90000002", "rare900"]
    rare = tasks["rare900"]
    assert (
        rare["subset"] == "rare"
        and rare["present"]["other"] is False
        and rare["sections"]["radiographic"] == "None has been performed."
    )
    assert isinstance(rare["sections"]["physical_exam"][0]["vital_signs"], dict)
    assert isinstance(rare["sections"]["physical_exam"][0]["relevant_findings"], list)
    assert rare["sections"]["lab"][0]["findings"]["changes_over_time"]["hemoglobin_after_iron"] == "10.8 g/dL at week 6"
    assert isinstance(tasks["90000001"]["sections"]["physical_exam"][0]["vital_signs"], str)
    pos = tasks["challenging__90000002"]
    assert (pos["case_id"], pos["subset"]) == ("90000002", "challenging")
    assert pos["present"] == {"history": True, "physical_exam": True, "lab": True, "radiographic": True, "other": True}
    assert pos["sections"]["other"][0]["procedure_name"] == "Kidney biopsy"
    assert pos["gold"]["final_diagnosis"] == "Systemic lupus erythematosus"  # from answer_key/


def test_pos_section_match_reproduces_the_12_char_rule(tmp_path):
    # PoS keeps keys by their first 12 chars: other_examinations matches, git-history other_tests does not (§3.2)
    assert load_case(FIXTURES / "cases" / "challenging__90000002", pos_section_match=True)["present"]["other"] is True
    assert load_case(FIXTURES / "cases" / "90000001", pos_section_match=True)["present"]["other"] is False
    assert load_case(FIXTURES / "cases" / "90000001")["present"]["other"] is True


def test_real_cases_load():
    root = shared_path("clindiag", "cases")
    tasks = by_id(ClinDiag(name="clindiag", data_dir=str(root.parent), manifest="none").load_tasks())
    assert set(tasks) == {"10588413", "10644272", "rare0", "rare1", "sample_24703566"}
    assert tasks["rare1"]["gold"]["final_diagnosis"] == "Laryngotracheoesophageal cleft"
    assert tasks["sample_24703566"]["subset"] == "sample" and tasks["10588413"]["subset"] == "challenging"
    assert tasks["sample_24703566"]["sections"]["radiographic"] == "None has been performed."
    assert isinstance(tasks["10644272"]["sections"]["lab"][0]["findings"], dict)
    rare = ClinDiag(
        name="clindiag", data_dir=str(root), subsets=["rare"], manifest="none"
    ).load_tasks()  # the cases folder works too
    assert [t.task_id for t in rare] == ["rare0", "rare1"]


def test_upstream_manifest_selects_exactly_the_listed_cases(tmp_path):
    """Default: upstream's pinned manifest.txt; the five real shared cases plus the project's fixtures
    give exactly the listed ones, in manifest order, and the manifest says how many were found."""
    real = shared_path("clindiag", "cases")
    upstream = shared_path(
        "upstream-src", "PoS@506558c48565317569e117c40feeb6eb57313305", "benchmarks", "ClinDiag", "manifest.txt"
    )
    cases = tmp_path / "cases"
    for src in [*real.iterdir(), *(FIXTURES / "cases").iterdir()]:
        shutil.copytree(src, cases / src.name)
    shutil.copytree(FIXTURES / "answer_key", tmp_path / "answer_key")
    listed = [line.strip() for line in upstream.read_text().splitlines() if line.strip()]
    bench = ClinDiag(name="clindiag", data_dir=str(tmp_path))
    tasks = bench.load_tasks()
    present = {p.name for p in cases.iterdir()}
    expect = [line.rpartition("/")[2] for line in listed if line.rpartition("/")[2] in present]
    assert [t.task_id for t in tasks] == expect == ["rare0", "rare1", "10588413", "10644272"]
    m = bench.notes()["data"]["manifest"]
    assert (m["listed"], m["found"], m["missing"]) == (604, 4, 600) and m["path"] == "benchmarks/ClinDiag/manifest.txt"
    assert len(listed) == 604 and sum(n.startswith("rare/") for n in listed) == 302
    # every case folder: the unlisted sample case and the fictional fixture cases come back
    every = {t.task_id for t in ClinDiag(name="clindiag", data_dir=str(tmp_path), manifest="none").load_tasks()}
    assert every == present


def test_upstream_manifest_with_no_listed_case_names_the_fix(tmp_path):
    upstream_src()  # without `manifest`, the case list is upstream's benchmarks/ClinDiag/manifest.txt
    shutil.copytree(FIXTURES / "cases", tmp_path / "cases")
    with pytest.raises(ClinDiagDataError, match="manifest: none"):
        ClinDiag(name="clindiag", data_dir=str(tmp_path)).load_tasks()


def test_manifest_order_and_missing_case(tmp_path):
    m = tmp_path / "manifest.txt"
    m.write_text("rare/rare900\nchallenging/90000002\n")
    tasks = ClinDiag(name="clindiag", data_dir="fixtures", manifest=str(m)).load_tasks()
    assert [t.task_id for t in tasks] == ["rare900", "challenging__90000002"]
    m.write_text("rare/rare900\nrare/rare4242\n")
    with pytest.raises(ClinDiagDataError, match="rare4242"):
        ClinDiag(name="clindiag", data_dir="fixtures", manifest=str(m)).load_tasks()


def test_errors_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ClinDiagDataError, match=ENV_VAR):
        ClinDiag(name="clindiag").load_tasks()
    with pytest.raises(ClinDiagDataError, match="no ClinDiag case folders"):
        ClinDiag(name="clindiag", data_dir=str(tmp_path)).load_tasks()
    with pytest.raises(ValueError, match="benchmark 'clindiag': unknown param 'max_turns'.*valid keys: .*max_steps"):
        ClinDiag(name="clindiag", max_turns=3)
    with pytest.raises(ValueError, match="provider must be one of"):
        ClinDiag(name="clindiag", provider="oracle")
    with pytest.raises(ClinDiagDataError, match="not under"):
        ClinDiag(name="clindiag", data_dir="fixtures", case_ids=["nope"]).load_tasks()


def test_bad_case_files_name_the_fix(tmp_path):
    upstream_src()  # without `manifest`, the case list is upstream's benchmarks/ClinDiag/manifest.txt
    case = tmp_path / "cases" / "rare7"
    shutil.copytree(FIXTURES / "cases" / "rare900", case)
    (case / "diagnosis.json").unlink()
    with pytest.raises(ClinDiagDataError, match="no diagnosis for case rare7"):
        ClinDiag(name="clindiag", data_dir=str(tmp_path)).load_tasks()
    (case / "diagnosis.json").write_text(json.dumps({"diagnosis": {"final_diagnosis": ""}}))
    with pytest.raises(ClinDiagDataError, match="final_diagnosis"):
        ClinDiag(name="clindiag", data_dir=str(tmp_path)).load_tasks()
    (case / "diagnosis.json").write_text("{not json")
    with pytest.raises(ClinDiagDataError, match="not valid JSON"):
        ClinDiag(name="clindiag", data_dir=str(tmp_path)).load_tasks()


def test_subset_of():
    assert subset_of("rare__rare12") == ("rare", "rare12")
    assert subset_of("rare3") == ("rare", "rare3")
    assert subset_of("12345678_1") == ("challenging", "12345678_1")
