"""Shared test fixtures. Real benchmark data lives outside the project (../shared/data, or
$HARNESS_SHARED_DATA); tests that need it skip with a reason when it is absent."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_path(*parts: str) -> Path:
    """Path under the shared data folder, or skip the test naming what is missing."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared benchmark data not found at {p} (set HARNESS_SHARED_DATA to the shared data folder)")
    return p


@pytest.fixture
def shared_data() -> Path:
    return shared_path()


# The offline demo's seeded noise (conf/experiment/default.yaml `scripted_noise`) is off in tests,
# which check the noiseless scripted backbone's exact outcomes; tests/runners/test_demo.py turns it on.
os.environ.setdefault("HARNESS_DEMO_NOISE", "0")

# Upstream text (runners.upstream): tests read the shared pinned copies and never download.
UPSTREAM_SRC = SHARED_DATA / "upstream-src"
os.environ.setdefault("HARNESS_UPSTREAM_OFFLINE", "1")
if UPSTREAM_SRC.is_dir():
    os.environ.setdefault("HARNESS_UPSTREAM_DIR", str(UPSTREAM_SRC))
# FlowState App. B.3 (kit/b3.py) would be found beside the shared upstream sources (paper-text/); tests run on
# the project's wording unless they point $HARNESS_FLOWSTATE_B3 at the transcription themselves.
os.environ.setdefault("HARNESS_FLOWSTATE_B3", "off")


def upstream_src() -> Path:
    """The shared upstream-src folder, or skip naming what is missing."""
    return shared_path("upstream-src")


# Hypothesis: no timing-dependent verdicts in the default profile. Its `too_slow` health check and
# per-example deadline measure wall time, which a loaded 2-core machine (or xdist workers sharing
# it) stretches: a property that holds failed as "too slow". The properties themselves are unchanged.
# HYPOTHESIS_PROFILE=timed restores Hypothesis' own timing checks.
try:
    from hypothesis import HealthCheck, settings

    settings.register_profile("harness", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("timed")
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "harness"))
except ImportError:  # hypothesis comes with the dev extra; the tests that use it import it themselves
    pass


# pytest-xdist: `-n N` alone distributes with `--dist load`, which hands out tests one by one in turn, so a module's
# tests land on every worker and each worker builds the module's shared fixtures (a sweep, a report, a browser)
# again. `worksteal` gives each worker a contiguous half of the suite (a module's tests stay together) and moves
# work only when a worker runs dry. An explicit `--dist` on the command line is kept.
def default_dist(dist: str | None, args: list[str]) -> str | None:
    """The xdist mode to use: `worksteal` in place of the implicit `load`; otherwise `dist` unchanged."""
    explicit = any(a == "-d" or a.startswith("--dist") for a in args)
    return "worksteal" if dist == "load" and not explicit else dist


def pytest_configure(config: pytest.Config) -> None:
    dist = getattr(config.option, "dist", None)  # absent under -p no:xdist
    if dist is not None:
        args = [str(a) for a in config.invocation_params.args]
        args += shlex.split(os.environ.get("PYTEST_ADDOPTS", "")) + list(config.getini("addopts"))
        config.option.dist = default_dist(dist, args)
