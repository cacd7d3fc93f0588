"""Notebooks written before the records moved into `runners.records` keep working: the old path
imports the same objects and says where they moved."""

import importlib
import sys

import pytest


def test_runners_results_still_imports_open_experiment_with_a_deprecation_note(monkeypatch):
    monkeypatch.delitem(sys.modules, "runners.results", raising=False)
    with pytest.warns(FutureWarning, match=r"runners\.records\.results"):
        old = importlib.import_module("runners.results")
    from runners.records import results

    assert old.open_experiment is results.open_experiment and old.episode_records is results.episode_records
    assert old.Experiment is results.Experiment
