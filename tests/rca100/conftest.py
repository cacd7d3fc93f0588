"""A fresh copy of the synthetic RCA-100 fixture per test session (tests may damage copies)."""

from __future__ import annotations

import pytest

from benchmarks.rca100.synth import write_fixture


@pytest.fixture(scope="session")
def rca_root(tmp_path_factory):
    return write_fixture(tmp_path_factory.mktemp("rca_synth"))
