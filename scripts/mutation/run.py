"""The mutation check: apply each hand-made mutant (scripts/mutation/mutants.py) to a temporary copy of
the tree, one at a time, run the test files that cover its module, and report which mutants the suite
kills (a test fails) and which survive (every test passes: a wrong number nobody would notice).

    python -m scripts.mutation                      # every mutant
    python -m scripts.mutation --only tau_db travel  # mutants whose id starts with these
    python -m scripts.mutation --list                # the mutants, no run
    python -m scripts.mutation --profile short       # the first mutant of every mutated file (CI)
    python -m scripts.mutation --json results/mutation.json

The copy holds the files git tracks plus untracked ones it does not ignore (the working tree as it
is), so the check never edits the checkout. Each test run is `pytest -x -q -p no:xdist` on the
mutant's test files with the copy first on PYTHONPATH. Before the mutants, the same test files run
on the unmutated copy: a test that fails there makes every verdict meaningless, so the check stops.
Exit status: 0 when every mutant is killed or listed in `ACCEPTED` (docs/testing.md), 1 otherwise;
2 when a mutant no longer applies (its file or test files are gone, or its `old` text does not occur
exactly once): every such mutant is named before any test runs, and none is run.
"""

from __future__ import annotations

from typing import Any

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from scripts.mutation.mutants import ACCEPTED, MUTANTS, PROFILES, Mutant

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Verdict:
    id: str
    file: str
    status: str  # killed | survived | timeout | error
    seconds: float
    detail: str = ""


def copy_tree(dest: Path, ref: str | None = None) -> None:
    """The working tree as git sees it (tracked + untracked, not ignored) under `dest`; with `ref`,
    that commit's tree instead (`git archive`)."""
    if ref is not None:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", ref], cwd=REPO, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for rel in filter(None, out.decode().split("\0")):
        src = REPO / rel
        if not src.is_file():  # deleted in the working tree, or a submodule
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


def stale(m: Mutant, root: Path) -> str | None:
    """Why `m` no longer applies to the tree at `root` (its file or test files gone, its `old` text
    absent or ambiguous), or None when it applies."""
    path = root / m.file
    if not path.is_file():
        return f"mutant {m.id}: {m.file} does not exist. Fix: point the mutant at the module's new file"
    missing = [t for t in m.tests if not (root / t).is_file()]
    if missing:
        return f"mutant {m.id}: test file(s) {', '.join(missing)} do not exist. Fix: name the files that test {m.file}"
    n = path.read_text().count(m.old)
    if n != 1:
        return (
            f"mutant {m.id}: {m.old!r} occurs {n} times in {m.file} (need exactly 1). Fix: update `old` to the "
            "code as it reads now (a reformat or a move), or make it longer so it names one place"
        )
    return None


def apply(m: Mutant, root: Path) -> str:
    """Write the mutant into the copy; returns the original text to restore."""
    why = stale(m, root)
    if why is not None:
        raise StaleMutant(why)
    path = root / m.file
    text = path.read_text()
    path.write_text(text.replace(m.old, m.new))
    return text


class StaleMutant(Exception):
    """A mutant that no longer applies: the check would check nothing there, so it stops."""


def pytest(root: Path, tests: tuple[str, ...], timeout: float) -> tuple[int | None, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", *tests]
    try:
        p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, ""
    return p.returncode, (p.stdout + p.stderr)


def first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED", "ERROR")):
            return line[:200]
    return output.strip().splitlines()[-1][:200] if output.strip() else ""


def run_mutants(mutants: list[Mutant], timeout: float, ref: str | None = None, log: Any = print) -> list[Verdict]:
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        root = Path(tmp)
        copy_tree(root, ref)
        # every mutant of the list on the working tree (a subset run still says that the list is stale);
        # against an older commit only the ones to run
        problems = [why for m in (MUTANTS if ref is None else mutants) if (why := stale(m, root)) is not None]
        if problems:
            raise StaleMutant("\n".join(problems))
        files = sorted({t for m in mutants for t in m.tests})
        log(f"baseline: {len(files)} test file(s) on the unmutated tree …")
        rc, out = pytest(root, tuple(files), timeout * 4)
        if rc != 0:
            raise SystemExit(
                f"error: the tests fail without any mutant (rc={rc}): {first_failure(out)}\n"
                "Fix: make them pass first; a mutation verdict needs a green baseline"
            )
        verdicts = []
        for m in mutants:
            original = apply(m, root)
            t0 = time.perf_counter()
            try:
                rc, out = pytest(root, m.tests, timeout)
            finally:
                (root / m.file).write_text(original)
            dt = time.perf_counter() - t0
            if rc is None:
                v = Verdict(m.id, m.file, "timeout", dt, f"no result within {timeout:.0f} s (counted as killed)")
            elif rc == 1:
                v = Verdict(m.id, m.file, "killed", dt, first_failure(out))
            elif rc == 0:
                v = Verdict(m.id, m.file, "survived", dt)
            else:  # 2: interrupted / collection error, 4: usage, 5: no tests
                v = Verdict(m.id, m.file, "error" if rc != 2 else "killed", dt, first_failure(out))
            verdicts.append(v)
            mark = "" if v.status != "survived" else ("  (accepted)" if m.id in ACCEPTED else "  <- SURVIVED")
            log(f"{v.status:8s} {dt:6.1f}s  {m.id:34s} {m.file}{mark}")
        return verdicts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="run the mutants whose id starts with one of these")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--profile", choices=sorted(PROFILES), default=None, help="a named subset (CI runs `short`)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run (default 300)")
    ap.add_argument(
        "--against",
        metavar="REF",
        default=None,
        help="mutate and test the tree of this git commit instead of the working tree (e.g. how many "
        "of today's mutants an older suite kills)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the verdicts here")
    a = ap.parse_args(argv)
    mutants = [m for m in MUTANTS if a.only is None or any(m.id.startswith(p) for p in a.only)]
    if a.profile:
        mutants = [m for m in mutants if m.id in PROFILES[a.profile]]
    if not mutants:
        print(
            f"error: no mutant id starts with {' or '.join(a.only or [])}. "
            "Fix: see `python -m scripts.mutation --list`",
            file=sys.stderr,
        )
        return 2
    if a.list:
        for m in mutants:
            print(f"{m.id:34s} {m.file}: {m.old.strip()!r} -> {m.new.strip()!r}")
        return 0
    try:
        verdicts = run_mutants(mutants, a.timeout, a.against)
    except StaleMutant as e:
        print(f"error: {len(str(e).splitlines())} mutant(s) no longer apply:\n{e}", file=sys.stderr)
        return 2
    killed = sum(v.status in ("killed", "timeout") for v in verdicts)
    survived = [v for v in verdicts if v.status == "survived"]
    errors = [v for v in verdicts if v.status == "error"]
    print(
        f"\n{killed}/{len(verdicts)} killed, {len(survived)} survived"
        f" ({sum(v.id in ACCEPTED for v in survived)} accepted in docs/testing.md), {len(errors)} error(s)"
    )
    for v in survived:
        print(f"  survived: {v.id}" + (f" — accepted: {ACCEPTED[v.id]}" if v.id in ACCEPTED else " — OPEN"))
    for v in errors:
        print(f"  error: {v.id}: {v.detail}")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps([asdict(v) for v in verdicts], indent=1))
    return 0 if not errors and all(v.id in ACCEPTED for v in survived) else 1
