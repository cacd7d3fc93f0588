"""Config problems that only show when a backbone or method is built fail before any work, and a
per-task setup failure is a recorded harness error, not a crash of the whole sweep."""

import asyncio

import pytest

from runners.config import ConfigError, validate
from runners.progress import Progress
from runners.pool import BackbonePool
from runners.prepare import prepare_cell, probe_method
from runners.run import run_cell
from runners.records.store import read_jsonl
from tests.runners.test_config import base


def test_missing_api_key_variable_fails_before_any_episode(monkeypatch, tmp_path):
    monkeypatch.delenv("REVIEW_TEST_KEY", raising=False)
    raw = base()
    raw["backbone"] = {
        "name": "ep",
        "kind": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "REVIEW_TEST_KEY",
    }
    with pytest.raises(ConfigError, match="REVIEW_TEST_KEY"):
        BackbonePool(None).prepare([validate(raw)])


def test_bad_scripted_option_is_a_config_error():
    raw = base()
    raw["backbone"]["scripted"] = {"no_such_option": 1}
    with pytest.raises(ConfigError, match="backbone 'scripted'"):
        BackbonePool(None).prepare([validate(raw)])


def test_method_param_rejected_by_the_constructor_names_the_yaml():
    raw = base()
    raw["method"]["params"]["on_context_overflow"] = "explode"
    with pytest.raises(ConfigError, match=r"conf/method/full_context\.yaml"):
        probe_method(validate(raw))


def test_env_setup_failure_is_a_harness_error_for_that_task_only(tmp_path):
    raw = base()
    raw["benchmark"]["params"]["data_dir"] = "fixtures"
    raw["runner"]["limit"] = 2
    prep = prepare_cell(validate(raw))
    bad = prep.tasks[0].task_id
    make_env = prep.bench.make_env

    def flaky(task, ctx):
        if task.task_id == bad:
            raise RuntimeError("adapter bug")
        return make_env(task, ctx)

    prep.bench.make_env = flaky
    rep = asyncio.run(run_cell(prep, tmp_path, BackbonePool(None), Progress("none")))
    assert (rep.ok, rep.harness_error) == (len(prep.tasks) - 1, 1)
    errs, _ = read_jsonl(tmp_path / prep.cfg.cell_name / "errors.jsonl")
    assert [e["task_id"] for e in errs] == [bad] and "adapter bug" in errs[0]["error"]


def _prep(limit=3, latency_s=0.0):
    raw = base()
    raw["backbone"]["scripted"]["latency_s"] = latency_s
    raw["benchmark"]["params"]["data_dir"] = "fixtures"
    raw["runner"]["limit"] = limit
    raw["runner"]["concurrency"] = 1
    return prepare_cell(validate(raw))


def test_duplicate_task_ids_fail_before_any_work(monkeypatch):
    from benchmarks.memoryarena.formal import FormalReasoning
    from runners.config import FatalRunError

    load = FormalReasoning.load_tasks
    monkeypatch.setattr(FormalReasoning, "load_tasks", lambda self: (lambda ts: [*ts, ts[0]])(load(self)))
    with pytest.raises(FatalRunError, match="duplicate task ids"):
        _prep()


def test_unexpected_error_stops_sibling_episodes_before_the_store_closes(tmp_path):
    class Broken(Progress):
        def episode(self, *a, **kw):
            raise OSError("disk full")

    prep = _prep(latency_s=0.02)  # episodes yield, so siblings are still queued when the first one fails

    async def go():
        with pytest.raises(OSError, match="disk full"):
            await run_cell(prep, tmp_path, BackbonePool(None), Broken("none"))
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(go()) == []  # no orphan episode left writing to a closed file


def test_misspelled_method_param_is_rejected():
    from baselines.full_context import FullContext
    from runners.backbones.scripted import ScriptedBackbone
    import pytest as _pytest

    with _pytest.raises(ValueError, match="unknown method params \\['max_resample'\\]"):
        FullContext(ScriptedBackbone(), max_resample=5)
