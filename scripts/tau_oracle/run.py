"""The τ differential oracle: the official tau2-bench v1.0.1, built from its pinned source, against
the project's native engine on generated cases (docs/tau-fidelity.md, "Differential oracle").

    python -m scripts.tau_oracle --data-dir ../shared/data/tau2 --source https://github.com/sierra-research/tau2-bench
    python -m scripts.tau_oracle --data-dir ../shared/data/tau2 --venv .cache/tau2-oracle/venv   # venv already built

Steps: (1) unless `--venv` already has tau2, build it: `git archive` of the pinned commit
(runners/upstream_pins.json) from `--source` (a clone URL or a local clone), its pinned files
checked against their sha256, then `<python> -m venv` and `pip install <that folder>` with a
Python 3.12 (`--python`, default `python3.12`; tau2 requires 3.12 or 3.13). Never `pip install
tau2` by name: that PyPI name is an unrelated package. (2) generate the cases
(scripts/tau_oracle/cases.py) and run them in that venv (scripts/tau_oracle/official.py) and
natively. (3) write the fixture (`--out`, default tests/tau/fixtures/official_oracle.json): the
official results as digests, which tests/tau/test_official_oracle.py replays natively against
the documented deviations (`DEVIATIONS` there). Exit 0 when only documented deviations differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.tau.data import DataError, load_domain
from scripts.tau_oracle.cases import DEVIATIONS, cases, compare, digest, native_result

REPO = Path(__file__).resolve().parents[2]
PINS = REPO / "runners" / "upstream_pins.json"
FIXTURE = REPO / "tests" / "tau" / "fixtures" / "official_oracle.json"
# what `pip install` needs of the source tree (the data comes from --data-dir, not the package)
SOURCE_PATHS = ("src", "pyproject.toml", "README.md", "LICENSE")


def pin() -> dict:
    return json.loads(PINS.read_text())["tau2-bench"]


def has_tau2(venv: Path) -> bool:
    py = venv / "bin" / "python"
    return py.exists() and subprocess.run([str(py), "-c", "import tau2"], capture_output=True).returncode == 0


def build(venv: Path, source: str, python: str) -> None:
    """The official package, from the pinned commit of `source`, installed into a new venv."""
    p = pin()
    with tempfile.TemporaryDirectory(prefix="tau2-src-") as tmp:
        src = Path(tmp) / "tau2-bench"
        if Path(source, ".git").exists() or Path(source, "HEAD").exists():
            git_dir = source  # a local clone (or a bare mirror)
        else:
            git_dir = str(Path(tmp) / "clone")
            subprocess.run(
                ["git", "clone", "--quiet", "--filter=blob:none", "--no-checkout", source, git_dir], check=True
            )
        src.mkdir()
        archive = subprocess.run(
            ["git", "-C", git_dir, "archive", "--format=tar", p["commit"], *SOURCE_PATHS],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
        for rel, sha in p["files"].items():
            got = hashlib.sha256((src / rel).read_bytes()).hexdigest()
            if got != sha:
                raise SystemExit(f"error: {rel} of {source}@{p['commit'][:8]} has sha256 {got}, pinned {sha}")
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(src)], check=True)
    if not has_tau2(venv):
        raise SystemExit(f"error: {venv} has no importable tau2 after the install")


def official(venv: Path, data_dir: Path, all_cases: list[dict]) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="tau2-oracle-") as tmp:
        cin, cout = Path(tmp) / "cases.json", Path(tmp) / "results.json"
        cin.write_text(json.dumps(all_cases))
        env = {**os.environ, "TAU2_DATA_DIR": str(data_dir), "LOGURU_LEVEL": "ERROR"}
        script = Path(__file__).with_name("official.py")
        subprocess.run([str(venv / "bin" / "python"), str(script), str(cin), str(cout)], env=env, check=True)
        results = json.loads(cout.read_text())
    for r in results:  # digests only: no upstream text in the fixture
        r["outputs"] = [{"sha": digest(o.pop("content")), **o} for o in r["outputs"]]
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.tau_oracle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True, help="the τ² data folder (holding tau2/domains/...)")
    ap.add_argument("--venv", type=Path, default=REPO / ".cache" / "tau2-oracle" / "venv", help="the official's venv")
    ap.add_argument(
        "--source", default="https://github.com/sierra-research/tau2-bench", help="clone URL or local clone"
    )
    ap.add_argument("--python", default="python3.12", help="a Python 3.12 or 3.13 for the official's venv")
    ap.add_argument("--out", type=Path, default=FIXTURE, help="the fixture to write")
    ap.add_argument("--only", nargs="*", default=None, help="only the cases whose id starts with one of these")
    ap.add_argument(
        "--upstream-dir",
        type=Path,
        default=None,
        help="the pinned upstream files for the native side's upstream texts (HARNESS_UPSTREAM_DIR; "
        "default: that variable, else the download cache or a download)",
    )
    a = ap.parse_args(argv)
    if a.upstream_dir is not None:
        os.environ["HARNESS_UPSTREAM_DIR"] = str(a.upstream_dir)
    if not has_tau2(a.venv):
        build(a.venv, a.source, a.python)
    try:
        data = {d: load_domain(d, str(a.data_dir)) for d in ("airline", "retail")}
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    all_cases = [c for d in data.values() for c in cases(d) if a.only is None or c["id"].startswith(tuple(a.only))]
    ref = official(a.venv, a.data_dir, all_cases)
    version = subprocess.run(
        [
            str(a.venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('tau2'), m.version('pydantic'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    fixture = {
        "official": {"repo": pin()["repo"], "commit": pin()["commit"], "version": version[0], "pydantic": version[1]},
        "generated_by": "python -m scripts.tau_oracle",
        "cases": ref,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(fixture, separators=(",", ":")) + "\n")
    tasks = {d: {t["id"]: t for t in data[d].split("base")} for d in data}
    by_id = {c["id"]: c for c in all_cases}
    differ = {}
    for r in ref:
        c = by_id[r["id"]]
        got = compare(r, native_result(data[c["domain"]], c, tasks[c["domain"]]))
        if got:
            differ[r["id"]] = got
    n_out = sum(len(r["outputs"]) for r in ref)
    print(
        f"{len(ref)} cases, {n_out} tool outputs; official tau2 {version[0]} (pydantic {version[1]}); fixture {a.out}"
    )
    for cid, parts in differ.items():
        print(f"  differs: {cid}: {', '.join(parts)}")
    undocumented = {k: v for k, v in differ.items() if DEVIATIONS.get(k, (None,))[0] != v}
    print(f"{len(differ)} case(s) differ, {len(undocumented)} not in the documented deviations")
    return 1 if undocumented else 0
