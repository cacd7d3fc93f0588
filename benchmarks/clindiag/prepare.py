"""ClinDiag data preparation and validation as upstream PoS does it (scripts/prepare_benchmarks.py,
prepare_clindiag_dataset.py, validate_clindiag_dataset.py), as project commands:

    python -m benchmarks.clindiag.prepare build --zip Clindiag_Benchmark.zip --out DIR
    python -m benchmarks.clindiag.prepare check DIR

`build` reads the official archive (https://github.com/geteff1/ClinDiag; not redistributable
here), keeps every rare case with a usable diagnosis, draws the challenging subset as upstream
(`random.Random(42).sample` of 302 over the sorted usable ids, then sorted), and writes the PoS
layout: `cases/<subset>__<id>/` with the four environment files, `answer_key/<subset>__<id>.
diagnosis.json`, `manifest.txt` (rare first, then challenging). It never overwrites: the output
folder must not exist. It then compares the manifest with upstream's pinned one (604 cases).
`check` validates a prepared folder: every case of the pinned manifest (or of the folder's own
manifest.txt with `--own-manifest`) has its environment files and a usable answer key.
Exit status 0 iff everything matched."""

from __future__ import annotations

import argparse
import json
import random
import sys
import zipfile
from pathlib import Path

from benchmarks.clindiag.data import UPSTREAM_MANIFEST, manifest_lines
from runners.upstream import file_text

ENVIRONMENT_FILES = (
    "initial_information.json",
    "medical_history.json",
    "physical_examination.json",
    "diagnostic_test.json",
)
SAMPLE_SEED = 42
SAMPLE_SIZE = 302
UNUSABLE = {"", "not specified", "none"}


def _usable(doc: object) -> bool:
    d = doc.get("diagnosis", doc) if isinstance(doc, dict) else None
    final = str((d or {}).get("final_diagnosis", "") if isinstance(d, dict) else "").strip()
    return final.lower() not in UNUSABLE


def diagnosis_usable(archive: zipfile.ZipFile, case_id: str) -> bool:
    try:
        return _usable(json.loads(archive.read(f"{case_id}/diagnosis.json").decode("utf-8")))
    except (KeyError, ValueError):
        return False


def select(archive: zipfile.ZipFile, sample_size: int = SAMPLE_SIZE) -> tuple[list[str], list[str], list[str]]:
    """(rare ids, challenging ids, excluded ids) as upstream selects them."""
    tops = sorted({n.split("/")[0] for n in archive.namelist() if "/" in n})
    rare = [t for t in tops if t.startswith("rare")]
    challenging = [t for t in tops if not t.startswith("rare")]
    rare_ok = [c for c in rare if diagnosis_usable(archive, c)]
    pool = [c for c in challenging if diagnosis_usable(archive, c)]
    if len(pool) < sample_size:
        raise ValueError(
            f"only {len(pool)} usable challenging cases in the archive, {sample_size} needed; "
            "is this the official Clindiag_Benchmark.zip?"
        )
    picked = sorted(random.Random(SAMPLE_SEED).sample(pool, sample_size))
    excluded = sorted(set(rare + challenging) - set(rare_ok) - set(pool))
    return rare_ok, picked, excluded


def build(zip_path: Path, out: Path, sample_size: int = SAMPLE_SIZE) -> list[str]:
    """Write the PoS layout; returns the manifest lines."""
    if out.exists():
        raise FileExistsError(f"{out} exists; choose a new output folder (nothing is overwritten)")
    with zipfile.ZipFile(zip_path) as archive:
        rare, challenging, excluded = select(archive, sample_size)
        lines: list[str] = []
        for subset, ids in (("rare", rare), ("challenging", challenging)):
            for cid in ids:
                if cid in {".", ".."} or "/" in cid or "\\" in cid:
                    raise ValueError(f"unsafe case id {cid!r} in the archive")
                slug = f"{subset}__{cid}"
                case = out / "cases" / slug
                case.mkdir(parents=True)
                for name in ENVIRONMENT_FILES:
                    try:
                        (case / name).write_bytes(archive.read(f"{cid}/{name}"))
                    except KeyError:
                        continue
                keys = out / "answer_key"
                keys.mkdir(exist_ok=True)
                (keys / f"{slug}.diagnosis.json").write_bytes(archive.read(f"{cid}/diagnosis.json"))
                lines.append(f"{subset}/{cid}")
    (out / "manifest.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"built": str(out), "rare": len(rare), "challenging": len(challenging), "excluded": excluded}))
    return lines


def check(root: Path, lines: list[str]) -> list[str]:
    """Problems of a prepared folder for the listed cases (empty = valid)."""
    problems = []
    for line in lines:
        subset, _, cid = line.rpartition("/")
        slug = f"{subset}__{cid}"
        case = root / "cases" / slug
        if not (case / "initial_information.json").is_file():
            problems.append(f"{line}: {case}/initial_information.json missing")
            continue
        key = root / "answer_key" / f"{slug}.diagnosis.json"
        try:
            if not _usable(json.loads(key.read_text(encoding="utf-8"))):
                problems.append(f"{line}: {key} has no usable final_diagnosis")
        except (OSError, ValueError) as e:
            problems.append(f"{line}: answer key unreadable ({e})")
    return problems


def upstream_lines() -> list[str] | None:
    text = file_text(UPSTREAM_MANIFEST)
    return None if text is None else manifest_lines(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="archive → PoS layout")
    b.add_argument("--zip", required=True, type=Path)
    b.add_argument("--out", required=True, type=Path)
    b.add_argument("--sample-size", type=int, default=SAMPLE_SIZE, help=argparse.SUPPRESS)  # tests use small archives
    c = sub.add_parser("check", help="validate a prepared folder")
    c.add_argument("root", type=Path)
    c.add_argument(
        "--own-manifest", action="store_true", help="check the folder's manifest.txt instead of upstream's pinned one"
    )
    args = ap.parse_args(argv)
    pinned = upstream_lines()
    if args.cmd == "build":
        try:
            lines = build(args.zip, args.out, args.sample_size)
        except (OSError, ValueError, zipfile.BadZipFile) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        if pinned is None:
            print("upstream manifest unavailable: set $HARNESS_UPSTREAM_DIR to compare", file=sys.stderr)
            return 1
        same = lines == pinned
        print(
            json.dumps(
                {
                    "matches_upstream_manifest": same,
                    "cases": len(lines),
                    "upstream_cases": len(pinned),
                    "only_here": [x for x in lines if x not in set(pinned)][:5],
                    "only_upstream": [x for x in pinned if x not in set(lines)][:5],
                }
            )
        )
        return 0 if same else 1
    if args.own_manifest:
        lines = manifest_lines((args.root / "manifest.txt").read_text(encoding="utf-8"))
    elif pinned is None:
        print("error: upstream manifest unavailable; set $HARNESS_UPSTREAM_DIR or pass --own-manifest", file=sys.stderr)
        return 2
    else:
        lines = pinned
    problems = check(args.root, lines)
    print(json.dumps({"cases": len(lines), "problems": len(problems), "examples": problems[:10]}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
