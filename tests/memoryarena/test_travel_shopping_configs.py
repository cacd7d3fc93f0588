"""The benchmark YAMLs instantiate as the sweep does (`Class(name=..., **params)`) and validate."""

import importlib

import pytest
import yaml

from runners.config import CONF_DIR, validate
from tests.conftest import shared_path


def load(group, name):
    return yaml.safe_load((CONF_DIR / group / f"{name}.yaml").read_text())


def build(name, **override):
    cfg = load("benchmark", name)
    mod, cls = cfg["_target_"].rsplit(".", 1)
    return getattr(importlib.import_module(mod), cls)(name=cfg["name"], **{**cfg["params"], **override})


@pytest.mark.parametrize("name", ["memoryarena_travel", "memoryarena_shopping"])
def test_configs_validate_and_load_fixture_tasks(name):
    raw = {
        "method": load("method", "full_context"),
        "backbone": load("backbone", "scripted"),
        "benchmark": load("benchmark", name),
        "runner": load("runner", "default"),
    }
    assert validate(raw).cell_name.startswith(f"full_context__scripted__{name}__")
    extra = {"flights_path": "fixtures"} if name == "memoryarena_travel" else {}
    b = build(name, data_dir="fixtures", **extra)
    assert len(b.load_tasks()) == 1 and b.notes()["data"]["pinned_checksum"] is False


def test_travel_db_dir_from_environment(monkeypatch):
    shared = shared_path("memoryarena-travel-db")
    monkeypatch.setenv("TRAVELPLANNER_DB_DIR", str(shared))
    b = build("memoryarena_travel", data_dir="fixtures")
    assert b.db().db_dir.resolve() == shared.resolve()
    assert b.notes()["ps_pooling"] == "group" and "persons" in b.notes()["PS_note"]
    monkeypatch.delenv("TRAVELPLANNER_DB_DIR")
    with pytest.raises(ValueError, match="TRAVELPLANNER_DB_DIR"):
        build("memoryarena_travel", db_dir=None).db()
