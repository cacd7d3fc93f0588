"""ClinDiag case layouts (docs/pos-benchmarks.md §3.2–§3.4) and the record sections the tools read.

Two layouts are read, per case folder:
- git-history (7 files): initial_information, medical_history, physical_examination,
  laboratory_test, radiographic_test, other_test, diagnosis (.json);
- PoS prepared (4 files): initial_information, medical_history, physical_examination,
  diagnostic_test (.json) in cases/<subset>__<id>/, gold in answer_key/<subset>__<id>.diagnosis.json.
Sections are opaque JSON (types vary: strings, objects, lists). A missing file or key gives the
fixed no-record text. `pos_section_match` reproduces PoS's rule of matching a diagnostic_test
key by its first 12 characters (so git-history `other_tests` does not match `other_examin`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runners.upstream import UpstreamFile, fetch, file_text

ENV_VAR = "CLINDIAG_DATA_DIR"
FIXTURES = Path(__file__).parent / "fixtures"
MISSING = object()

# section → (7-file layout file, accepted keys [harness choice]; canonical PoS key first)
SECTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "history": ("medical_history.json", ("medical_history",)),
    "physical_exam": ("physical_examination.json", ("physical_examinations", "physical_examination")),
    "lab": ("laboratory_test.json", ("laboratory_examinations",)),
    "radiographic": ("radiographic_test.json", ("radiographic_examinations",)),
    "other": ("other_test.json", ("other_examinations", "other_tests")),
}
DIAGNOSTIC = ("lab", "radiographic", "other")  # the sections PoS keeps in diagnostic_test.json


class ClinDiagDataError(ValueError):
    """The ClinDiag data folder is missing or malformed (the message names the fix)."""


def resolve_cases_dir(data_dir: str | os.PathLike | None) -> tuple[Path, str]:
    """The folder holding case folders, and its source label. Accepts the data root (with
    cases/) or the cases folder itself; "fixtures" = the project's fictional fixture."""
    if data_dir == "fixtures":
        return FIXTURES / "cases", "fictional fixture (benchmarks/clindiag/fixtures)"
    raw = data_dir or os.environ.get(ENV_VAR)
    if not raw:
        raise ClinDiagDataError(
            f"ClinDiag data not configured: set benchmark.params.data_dir or ${ENV_VAR} to the folder "
            "holding cases/<case_id>/ (7-file or PoS layout); data_dir=fixtures runs the fictional fixture"
        )
    root = Path(raw).expanduser()
    cases = root / "cases" if (root / "cases").is_dir() else root
    if not cases.is_dir() or not any(is_case(p) for p in cases.iterdir()):
        raise ClinDiagDataError(
            f"no ClinDiag case folders (with initial_information.json) under {cases}; point data_dir "
            "at the folder holding cases/"
        )
    return cases, str(root)


def is_case(p: Path) -> bool:
    return p.is_dir() and (p / "initial_information.json").is_file()


def subset_of(folder: str) -> tuple[str, str]:
    """(subset, id) of a case folder: `<subset>__<id>` (PoS) or by id (rareN, sample_…, else challenging)."""
    if "__" in folder:
        subset, cid = folder.split("__", 1)
        return subset, cid
    if folder.startswith("rare"):
        return "rare", folder
    return ("sample", folder) if folder.startswith("sample") else ("challenging", folder)


UPSTREAM_MANIFEST = UpstreamFile("PoS", "benchmarks/ClinDiag/manifest.txt")
"""The 604 cases upstream PoS evaluates (302 rare + 302 challenging, `<subset>/<id>` per line), pinned by sha256."""


def manifest_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def select_cases(cases: Path, lines: list[str]) -> tuple[list[Path], list[str]]:
    """(case folders of the listed cases that are present, in list order; listed lines not found).
    A line `<subset>/<id>` matches the folder `<subset>__<id>` (PoS layout) or `<id>`."""
    out, missing = [], []
    for line in lines:
        subset, _, cid = line.rpartition("/")
        hit = next((c for c in (cases / f"{subset}__{cid}", cases / cid) if is_case(c)), None)
        if hit is None:
            missing.append(line)
        else:
            out.append(hit)
    return out, missing


def all_cases(cases: Path) -> list[Path]:
    return sorted((p for p in cases.iterdir() if is_case(p)), key=lambda p: p.name)


def case_folders(cases: Path, manifest: str | os.PathLike | None = None) -> list[Path]:
    """Case folders in the order of a local manifest file (lines `<subset>/<id>`; every listed case
    must be present), or sorted when `manifest` is None."""
    if manifest is None:
        return all_cases(cases)
    path = Path(manifest).expanduser()
    if not path.is_file():
        raise ClinDiagDataError(
            f"ClinDiag manifest {path} not found; fix benchmark.params.manifest "
            "(a file, `upstream` for PoS's 604 cases, or `none` for every case folder)"
        )
    out, missing = select_cases(cases, manifest_lines(path.read_text(encoding="utf-8")))
    if missing:
        raise ClinDiagDataError(f"{len(missing)} case(s) of {path} are missing under {cases}: {missing[:5]}")
    return out


def upstream_case_folders(cases: Path) -> tuple[list[Path], dict[str, Any]]:
    """The listed cases of upstream's pinned manifest that are present, and what was found
    (listed, found, missing, the manifest's provenance). Missing cases are reported, not fatal
    (a partial download scores the cases it has and says so); none found is an error."""
    text = file_text(UPSTREAM_MANIFEST)
    if text is None:
        _, why = fetch(UPSTREAM_MANIFEST)
        raise ClinDiagDataError(
            f"upstream ClinDiag manifest unavailable ({why}); set $HARNESS_UPSTREAM_DIR to a PoS checkout, "
            "or benchmark.params.manifest to a local manifest.txt, or to `none` for every case folder"
        )
    lines = manifest_lines(text)
    found, missing = select_cases(cases, lines)
    info = {
        **UPSTREAM_MANIFEST.provenance(),
        "listed": len(lines),
        "found": len(found),
        "missing": len(missing),
        "missing_examples": missing[:5],
    }
    if not found:
        raise ClinDiagDataError(
            f"none of the {len(lines)} cases of upstream's ClinDiag manifest is under {cases} "
            f"(e.g. {lines[:2]}); prepare the data set (python -m benchmarks.clindiag.prepare build --zip ... --out "
            "...) or set manifest: none"
        )
    return found, info


def read_json(path: Path) -> Any:
    """A case file through the shared reader (runners/inputs.py): lone surrogates replaced and noted
    for the manifest; bytes that are not UTF-8 or text that is not JSON name the file and line."""
    from runners.inputs import InputError, read_json as read_checked

    try:
        return read_checked(path)
    except InputError as e:
        raise ClinDiagDataError(str(e)) from None


def _key(doc: Any, section: str, pos_match: bool) -> Any:
    if not isinstance(doc, dict):
        return MISSING
    keys = SECTIONS[section][1]
    if pos_match:  # PoS: first 12 characters of the canonical key
        return next((v for k, v in doc.items() if str(k)[:12] == keys[0][:12]), MISSING)
    return next((doc[k] for k in keys if k in doc), MISSING)


WHOLE_FILE = ("history", "physical_exam")
"""Sections the PoS release hands the provider as their whole file (`record_text` without a section)."""


def whole_files(folder: Path) -> dict[str, str]:
    """section → the file's text, verbatim, for the whole-file sections present (the release's
    `ClinDiagCase.record_text(filename)`)."""
    out = {}
    for section in WHOLE_FILE:
        path = folder / SECTIONS[section][0]
        if path.is_file():
            out[section] = path.read_text(encoding="utf-8")
    return out


def read_sections(folder: Path, pos_section_match: bool = False) -> dict[str, Any]:
    """section → record JSON, or MISSING (no file / no key)."""
    out: dict[str, Any] = {}
    diag = folder / "diagnostic_test.json"
    diag_doc = read_json(diag) if diag.is_file() else MISSING
    for section, (fname, _) in SECTIONS.items():
        path = folder / fname
        if section in DIAGNOSTIC and diag_doc is not MISSING and not path.is_file():
            out[section] = _key(diag_doc, section, pos_section_match)
        elif path.is_file():
            out[section] = _key(read_json(path), section, pos_section_match)
        else:
            out[section] = MISSING
    return out


def read_gold(folder: Path) -> dict[str, str]:
    """The reference diagnosis (evaluator only): diagnosis.json, or the PoS answer_key file."""
    path = folder / "diagnosis.json"
    if not path.is_file():
        path = folder.parent.parent / "answer_key" / f"{folder.name}.diagnosis.json"
    if not path.is_file():
        raise ClinDiagDataError(f"no diagnosis for case {folder.name}: expected {folder / 'diagnosis.json'} or {path}")
    doc = read_json(path)
    d = doc.get("diagnosis", doc) if isinstance(doc, dict) else None
    if not isinstance(d, dict) or not str(d.get("final_diagnosis") or "").strip():
        raise ClinDiagDataError(f"{path} has no non-empty `final_diagnosis`")
    return {k: _as_text(d.get(k)) for k in ("final_diagnosis", "differential_diagnosis", "diagnostic_reasoning")}


def _as_text(v: Any) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def load_case(folder: Path, pos_section_match: bool = False) -> dict[str, Any]:
    """A case's payload: id, subset, initial presentation, the five sections, the gold."""
    subset, cid = subset_of(folder.name)
    init = read_json(folder / "initial_information.json")
    text = init.get("initial_information") if isinstance(init, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ClinDiagDataError(f"{folder / 'initial_information.json'} needs a non-empty `initial_information` string")
    sections = read_sections(folder, pos_section_match)
    return {
        "case_id": cid,
        "folder": folder.name,
        "subset": subset,
        "initial_information": text.strip(),
        "initial_raw": text,  # as the file holds it (the PoS release's task shows it unstripped)
        "files": whole_files(folder),
        "sections": {k: (None if v is MISSING else v) for k, v in sections.items()},
        "present": {k: v is not MISSING for k, v in sections.items()},
        "gold": read_gold(folder),
    }
