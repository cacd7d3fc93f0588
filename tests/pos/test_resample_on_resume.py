"""A case that ended in a case error (PoS: no buildable belief on a non-terminal step) is rerun on
resume with fresh samples, bypassing the cached replies that caused it, a bounded number of times
(`runner.case_error_resamples`), as upstream PoS reruns a failed case. Real HTTP server on
127.0.0.1, real SQLite response cache."""

from __future__ import annotations

import asyncio
from typing import Any

import yaml

from pos.prompts import DELTA_SYSTEM
from runners.config import validate
from runners.progress import Progress
from runners.pool import BackbonePool
from runners.prepare import prepare_cell
from runners.run import run_cell
from runners.records.store import read_jsonl
from tests.fake_openai import FakeOpenAI
from tests.pos.helpers import LoopEnv
from tests.pos.test_request_settings import REPO, responder
from tests.runners.test_config import base


class FlakyDeltas:
    """Valid minimal replies, except that the first `bad` delta calls get prose instead of JSON."""

    def __init__(self, bad: int) -> None:
        self.bad, self.deltas = bad, 0

    def __call__(self, body: dict[str, Any]) -> str:
        if body["messages"][0]["content"].startswith(DELTA_SYSTEM[:40]):
            self.deltas += 1
            if self.deltas <= self.bad:
                return "I think the belief is fine as it is."
        return responder(body)


def _cell(srv: FakeOpenAI, tmp_path, resamples: int):
    raw = base()
    raw["method"] = yaml.safe_load((REPO / "conf/method/pos.yaml").read_text())
    raw["method"]["params"]["belief_prompts"] = (
        "project"  # the responder tells calls apart by the project's system prompts
    )
    raw["backbone"] = {
        "name": "ep",
        "kind": "openai",
        "model": "m",
        "base_url": srv.base_url,
        "api_key_env": None,
        "sampling": {"temperature": 0},
    }
    raw["benchmark"] = yaml.safe_load((REPO / "conf/benchmark/rca100.yaml").read_text())  # no role backbones of its own
    raw["benchmark"]["params"]["data_dir"] = "fixtures"
    raw["runner"].update(limit=1, case_error_resamples=resamples, display="none")
    prep = prepare_cell(validate(raw))
    prep.bench.make_env = lambda task, ctx: LoopEnv(budget=3)
    return prep


def _run(prep, tmp_path) -> Any:
    pool = BackbonePool(tmp_path / "cache.sqlite")
    try:
        return asyncio.run(run_cell(prep, tmp_path, pool, Progress("none")))
    finally:
        if pool.cache is not None:
            pool.cache.close()


def test_case_error_is_rerun_with_fresh_samples(tmp_path):
    with FakeOpenAI(responder=FlakyDeltas(bad=2)) as srv:
        prep = _cell(srv, tmp_path, resamples=2)
        first = _run(prep, tmp_path)
        assert (first.ok, first.harness_error) == (0, 1)
        errs, _ = read_jsonl(tmp_path / prep.cfg.cell_name / "errors.jsonl")
        assert errs[0]["case_error"] is True and "ContextFailure" in errs[0]["error"] and errs[0]["resample"] == 0
        second = _run(prep, tmp_path)  # resume: the cached garbage deltas are not replayed
    assert (second.ok, second.harness_error) == (1, 0)
    recs, _ = read_jsonl(tmp_path / prep.cfg.cell_name / "episodes.jsonl")
    assert recs[0]["resample"] == 1 and recs[0]["cache_hits"] == 0


def test_resamples_are_bounded(tmp_path):
    with FakeOpenAI(responder=FlakyDeltas(bad=10**6)) as srv:
        prep = _cell(srv, tmp_path, resamples=1)
        for _ in range(3):
            _run(prep, tmp_path)
        errs, _ = read_jsonl(tmp_path / prep.cfg.cell_name / "errors.jsonl")
    assert [e["resample"] for e in errs] == [0, 1, 1]
    assert errs[2]["cache_hits"] > 0 and errs[2]["cache_hits"] == sum(
        errs[2]["calls_by_role"].values()
    )  # replayed, no new calls
