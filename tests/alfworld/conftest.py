"""ALFWorld test fixtures: the shared 134-game copy and an engine-availability mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.alfworld import engine
from tests.conftest import shared_path

needs_engine = pytest.mark.skipif(
    not engine.available(), reason=f"alfworld engine not importable; {engine.INSTALL_HINT}"
)


@pytest.fixture(scope="session")
def alf_root() -> Path:
    """The shared ALFWorld data root (skips when absent)."""
    return shared_path("alfworld", "json_2.1.1", "valid_unseen").parents[1]
