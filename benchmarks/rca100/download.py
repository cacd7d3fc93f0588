"""RCA-100 observation download, as upstream PoS's scripts/prepare_benchmarks.py `prepare_rca100`:

    python -m benchmarks.rca100.download --out DIR [--answer-key-dir KEYS] [--base-url URL]

`DIR/manifest.txt` lists the case ids (one `tNNN` per line); the answer keys (evaluator labels,
obtained separately under the data set's terms) must already be in `DIR/answer_key/` or be copied
from `--answer-key-dir`. For every case the seven observation files (task.json, topology.json and
the five parquet tables) are fetched from the authors' public bucket (`--base-url`, default
upstream's `RCA_URL`) into `DIR/cases/<id>/`; finished files are reused, new ones are written to
a `.partial` file and renamed. Then the answer keys are validated (`benchmarks.rca100.validate`).
Exit status 0 iff every file is there and the keys validate."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import urllib.request
from pathlib import Path

from benchmarks.rca100.data import CASE_FILES
from benchmarks.rca100.validate import validate
from runners.upstream import UpstreamFile, py_string

PREPARE = UpstreamFile("PoS", "scripts/prepare_benchmarks.py")
DEFAULT_URL = "https://aiops-benchmark.oss-cn-hongkong.aliyuncs.com/rca/rca100/v1.1/"  # upstream RCA_URL (v1.1)


def base_url() -> str:
    return py_string(PREPARE, "RCA_URL") or DEFAULT_URL


def fetch(url: str, target: Path, timeout: float = 120) -> bool:
    """Download `url` to `target` unless it exists; True when a file was written."""
    if target.is_file():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    try:
        req = urllib.request.Request(url, headers={"User-Agent": "stateharness-data-preparation"})
        with urllib.request.urlopen(req, timeout=timeout) as r, partial.open("wb") as out:
            shutil.copyfileobj(r, out)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return True


def download(out: Path, url: str, answer_key_dir: Path | None = None) -> dict:
    manifest = out / "manifest.txt"
    if not manifest.is_file():
        raise FileNotFoundError(f"{manifest} not found: put the RCA-100 manifest (one case id per line) there first")
    ids = manifest.read_text(encoding="utf-8").split()
    keys = out / "answer_key"
    if answer_key_dir:
        keys.mkdir(parents=True, exist_ok=True)
        for f in sorted(Path(answer_key_dir).glob("*.gt.json")):
            if not (keys / f.name).exists():
                shutil.copy2(f, keys / f.name)
    missing = [c for c in ids if not (keys / f"{c}.gt.json").is_file()]
    if missing:
        raise FileNotFoundError(
            f"answer keys missing for {missing[:5]} ({len(missing)} cases) in {keys}; pass --answer-key-dir"
        )
    written = 0
    for cid in ids:
        for name in CASE_FILES:
            written += fetch(f"{url.rstrip('/')}/cases/{cid}/{name}", out / "cases" / cid / name)
    return {"cases": len(ids), "files_written": written, "base_url": url}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--answer-key-dir", type=Path, default=None)
    ap.add_argument("--base-url", default=None, help="default: upstream's RCA_URL")
    args = ap.parse_args(argv)
    try:
        report = download(args.out, args.base_url or base_url(), args.answer_key_dir)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report["validation"] = validate(str(args.out))
    print(json.dumps(report, indent=1))
    return 0 if not report["validation"]["violations"] else 1


if __name__ == "__main__":
    sys.exit(main())
