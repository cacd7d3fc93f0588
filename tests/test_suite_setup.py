"""The default test profile does what `make test` promises on a fresh clone: no verdict that
depends on the machine's load, skip reasons printed."""

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO


@settings(max_examples=5)
@given(st.integers())
def _decorated(n):
    pass


def test_hypothesis_profile_has_no_timing_checks():
    # the profile tests/conftest.py loads, and what a test's own @settings(...) inherits from it
    for s in (settings.default, _decorated._hypothesis_internal_use_settings):
        assert s.deadline is None
        assert HealthCheck.too_slow in s.suppress_health_check


def test_make_test_prints_skip_reasons():
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe and "pytest" in recipe.group(1) and "-rs" in recipe.group(1).split()


def test_make_test_compiles_the_project_and_lets_pytest_keep_its_rewritten_tests():
    """The sweeps the suite starts load the project's bytecode instead of compiling it each (where
    PYTHONDONTWRITEBYTECODE is set), and pytest may keep its assertion-rewritten test modules."""
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no test recipe"
    lines = recipe.group(1).splitlines()
    packages = re.search(r"^PACKAGES = (.*)$", (REPO / "Makefile").read_text(), re.M)
    assert packages and {"runners", "tests"} <= set(packages.group(1).split())
    assert [i for i, x in enumerate(lines) if "compileall" in x] < [i for i, x in enumerate(lines) if "pytest" in x]
    assert any(x.strip().startswith("PYTHONDONTWRITEBYTECODE= ") and "pytest" in x for x in lines)


def test_license_is_an_spdx_expression_the_build_backend_reads():
    # a TOML table (`{ text = "MIT" }`) is deprecated: setuptools warned three times per install
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    (req,) = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(req.split(">=")[1].split(".")[0]) >= 77  # the first setuptools that reads SPDX expressions


def test_xdist_gives_each_worker_a_contiguous_share_unless_told_otherwise():
    # `-n 2` alone: worksteal (a module's tests, and the fixtures they share, stay on one worker); an explicit
    # --dist (or -d, xdist's shortcut for load) is kept; without xdist nothing changes
    from tests.conftest import default_dist

    assert default_dist("load", ["-q", "-n", "2"]) == "worksteal"
    assert default_dist("load", ["-n", "2", "--dist", "load"]) == "load"
    assert default_dist("load", ["-n", "2", "--dist=load"]) == "load"
    assert default_dist("load", ["-n", "2", "-d"]) == "load"
    assert default_dist("loadfile", ["-n", "2", "--dist", "loadfile"]) == "loadfile"
    assert default_dist("no", ["-q"]) == "no"
