"""docs/environment.md lists every environment variable the harness reads: a variable added to the
code (or to a backbone config) without a line there fails here."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("runners", "kit", "benchmarks", "flowstate", "pos", "baselines", "hydra_plugins")
# read: os.environ.get("X"), os.environ["X"], os.getenv("X"), environ.setdefault("X", ...); a module
# constant naming a variable (ENV = "X", ENV_VAR = "X", ENV_DIR = ..., ENV_FILE = ...)
READ = re.compile(
    r"""(?:environ\.get\(|environ\[|getenv\(|environ\.setdefault\()\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|^\s*ENV(?:_[A-Z]+)?\s*=\s*["']([A-Z][A-Z0-9_]+)["']""",
    re.M,
)
NOT_OURS = {"PATH", "PYTHONPATH", "HYDRA_FULL_ERROR"}  # the system's, or set (not read) by the harness


def read_variables() -> dict[str, str]:
    found: dict[str, str] = {}
    for pkg in PACKAGES:
        for f in sorted((REPO / pkg).rglob("*.py")):
            for m in READ.finditer(f.read_text(encoding="utf-8")):
                found.setdefault(m.group(1) or m.group(2), str(f.relative_to(REPO)))
    for f in sorted((REPO / "tests").rglob("*.py")):  # the suite's own switches (HARNESS_*)
        for m in READ.finditer(f.read_text(encoding="utf-8")):
            name = m.group(1) or m.group(2)
            if name.startswith("HARNESS_"):
                found.setdefault(name, str(f.relative_to(REPO)))
    for f in sorted((REPO / "conf" / "backbone").glob("*.yaml")):
        raw = yaml.safe_load(f.read_text()) or {}
        for key in ("api_key_env", "base_url_env"):
            if raw.get(key):
                found.setdefault(str(raw[key]), str(f.relative_to(REPO)))
    return {k: v for k, v in found.items() if k not in NOT_OURS}


def test_every_variable_the_code_reads_is_documented():
    found = read_variables()
    # the scan sees the variables it must: a key, a data folder, a measurement switch, a test hook
    assert {
        "OPENAI_API_KEY",
        "TAU2_DATA_DIR",
        "HARNESS_TRANSCRIPT_MMAP_MB",
        "HARNESS_SIGNAL_AT",
        "HARNESS_REALMODEL",
    } <= set(found)
    doc = (REPO / "docs" / "environment.md").read_text()
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)(?:=[^`]*)?`", doc))
    missing = {k: v for k, v in found.items() if k not in listed}
    assert not missing, f"read by the code but not in docs/environment.md: {missing}"
