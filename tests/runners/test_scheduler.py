"""One scheduler for every cell of a sweep: cells overlap, the budget stops cleanly and resumes,
progress counts per call, and a locked response cache never stalls the episodes."""

import asyncio
import sqlite3
import time

from runners.config import validate
from runners.progress import Progress, fit, human_tokens
from runners.pool import BackbonePool
from runners.prepare import prepare_cells
from runners.run import Scheduler
from runners.records.store import read_jsonl
from tests.runners.test_config import base


def cells(tmp_path, n=2, latency_s=0.02, **runner):
    out = []
    for bench in ("memoryarena_math", "memoryarena_phys")[:n]:
        raw = base()
        raw["benchmark"]["name"] = bench
        raw["benchmark"]["params"]["config"] = "formal_reasoning_" + bench.rsplit("_", 1)[1]
        raw["benchmark"]["params"]["data_dir"] = "fixtures"
        raw["backbone"]["scripted"]["latency_s"] = latency_s
        raw["runner"].update(output_dir=str(tmp_path), display="none", **runner)
        out.append(validate(raw))
    return out


class Recorder(Progress):
    def __init__(self):
        super().__init__("none")
        self.events = []

    def call(self, cp):
        super().call(cp)
        self.events.append(("call", cp.cell))

    def finish_cell(self, cp):
        self.events.append(("finish", cp.cell))
        super().finish_cell(cp)


def run(tmp_path, cfgs, progress=None, budget=None, pool=None):
    progress = progress or Progress("none")
    pool = pool or BackbonePool(None)

    async def go():
        s = Scheduler(tmp_path, pool, progress, cfgs[0].runner.concurrency, budget)
        try:
            return await s.run(prepare_cells(cfgs)), s
        finally:
            await pool.aclose()

    return asyncio.run(go())


def test_small_cells_overlap_in_one_scheduler(tmp_path):
    cfgs = cells(tmp_path, concurrency=16)
    rec = Recorder()
    reports, _ = run(tmp_path, cfgs, rec)
    assert [(r.ok, r.total) for r in reports] == [(3, 3), (2, 2)]
    first, second = cfgs[0].cell_name, cfgs[1].cell_name
    first_done = rec.events.index(("finish", first))
    assert ("call", second) in rec.events[:first_done]  # the second cell was calling before the first finished
    assert all((tmp_path / c.cell_name / "DONE").exists() for c in cfgs)
    assert all(c.finished is not None and c.calls > 0 and c.tokens > 0 for c in rec.cells)  # counted per call


def test_budget_stops_before_exceeding_and_resumes(tmp_path):
    prices = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}  # USD per 1M tokens: a call costs about $1
    cfgs = cells(tmp_path, n=1, latency_s=0.0, concurrency=1)
    for c in cfgs:
        c.backbone.prices = prices
    full, s_full = run(tmp_path / "ref", cfgs)
    per_episode = s_full.spent / 3
    budget = per_episode * 1.5  # room for one episode, not two
    reports, s = run(tmp_path, cfgs, budget=budget)
    r = reports[0]
    assert r.ok == 1 and r.not_started == 2 and s.budget_reached and s.spent <= budget
    assert not (tmp_path / cfgs[0].cell_name / "DONE").exists()
    again, _ = run(tmp_path, cfgs)  # resume without a budget: only the two missing episodes run
    assert (again[0].skipped, again[0].ok) == (1, 2)
    recs, _ = read_jsonl(tmp_path / cfgs[0].cell_name / "episodes.jsonl")
    assert sorted(x["task_id"] for x in recs) == sorted(
        x["task_id"] for x in read_jsonl(tmp_path / "ref" / cfgs[0].cell_name / "episodes.jsonl")[0]
    )


def test_a_resume_counts_what_the_stored_records_spent(tmp_path):
    """The budget is the experiment's: a second run with the same budget starts nothing once the
    stored records have spent it (per run it would spend it again)."""
    prices = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}
    cfgs = cells(tmp_path, n=1, latency_s=0.0, concurrency=1)
    for c in cfgs:
        c.backbone.prices = prices
    _, s_full = run(tmp_path / "ref", cfgs)
    budget = s_full.spent / 3 * 1.5
    first, s1 = run(tmp_path, cfgs, budget=budget)
    assert first[0].ok == 1
    again, s2 = run(tmp_path, cfgs, budget=budget)
    assert abs(s2.spent_before - s1.spent) < 1e-9 and s2.spent == 0.0 and again[0].ok == 0
    assert again[0].not_started == 2


def test_a_call_is_refused_at_the_cap_mid_episode(tmp_path):
    """Nothing known about costs: the first episode runs alone, and the call that would start past
    the cap is refused (the episode ends as an infra error, run again on resume): the run spends
    at most one call past a budget smaller than one episode."""
    from runners.cost import call_usd
    from runners.records.schema import EpisodeRecord, episode_calls

    prices = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}
    cfgs = cells(tmp_path, n=1, latency_s=0.0, concurrency=1)
    for c in cfgs:
        c.backbone.prices = prices
    _, s_full = run(tmp_path / "ref", cfgs)
    recs = read_jsonl(tmp_path / "ref" / cfgs[0].cell_name / "episodes.jsonl")[0]
    calls = [call_usd(c.role, c.usage, {"*": prices}) or 0.0 for r in recs for c in episode_calls(EpisodeRecord(**r))]
    assert len(calls) > len(recs)  # several calls per episode
    budget = min(s_full.spent / 3, min(sum(calls[:2]), max(calls))) * 0.9  # below one episode's cost
    reports, s = run(tmp_path, cfgs, budget=budget)
    assert reports[0].ok == 0 and s.cut_short == 1 and reports[0].not_started == 2
    assert s.spent <= budget + max(calls), (s.spent, budget)


def test_locked_cache_does_not_stall_the_sweep(tmp_path, caplog):
    """A real SQLite file held EXCLUSIVE by another connection: every lookup is a miss after one
    warning, episodes run at endpoint speed (not 30 s of busy timeout per call)."""
    from tests.fake_openai import FakeOpenAI

    cache = tmp_path / "responses.sqlite"
    holder = sqlite3.connect(cache, isolation_level=None)
    holder.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, payload TEXT NOT NULL, created REAL NOT NULL)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        from tests.fake_openai import react_responder

        with FakeOpenAI(react_responder) as srv:
            cfgs = cells(tmp_path, n=1, concurrency=4)
            for c in cfgs:
                c.backbone = c.backbone.model_validate(
                    {
                        "name": "ep",
                        "kind": "openai",
                        "model": "m",
                        "base_url": srv.base_url,
                        "api_key_env": None,
                        "timeout_s": 5,
                        "max_retries": 0,
                    }
                )
            t0 = time.perf_counter()
            reports, _ = run(tmp_path, cfgs, pool=BackbonePool(cache))
            wall = time.perf_counter() - t0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert reports[0].ok == 3 and reports[0].cache_hits == 0 and wall < 10
    assert len([r for r in caplog.records if "response cache" in r.getMessage()]) == 1


def test_names_fit_and_tokens_read_well():
    assert (
        fit("full_context__deepseek_v4_flash__memoryarena_math__1b0209407c", 24) == "full_context…_1b0209407c"
    )  # 12 + … + 11
    assert len(fit("x" * 100, 30)) == 30 and fit("short", 30) == "short"
    assert (human_tokens(950), human_tokens(12_340), human_tokens(4_560_000)) == ("950", "12.3k", "4.56M")


def test_shards_cover_every_task_once_and_aggregate_exactly(tmp_path):
    """runner.shard=i/n runs a contiguous task range into <cell>/shard-i-of-n/; the aggregate of
    the shards equals the aggregate of one unsharded run."""
    from runners.analysis.cells import collect
    from runners.run import shard_tasks

    assert [shard_tasks(list(range(7)), i, 3) for i in range(3)] == [[0, 1], [2, 3], [4, 5, 6]]
    ref = cells(tmp_path / "whole", latency_s=0.0, trials=2)
    run(tmp_path / "whole", ref)
    for i in range(3):
        shard = cells(tmp_path / "sharded", latency_s=0.0, trials=2, shard=f"{i}/3")
        reports, _ = run(tmp_path / "sharded", shard)
        assert all("shard" in r.cell for r in reports)
    assert sorted(p.name for p in (tmp_path / "sharded" / ref[0].cell_name).iterdir()) == [
        "shard-0-of-3",
        "shard-1-of-3",
        "shard-2-of-3",
    ]
    whole = {c.cell: (c.n_episodes, c.n_tasks, c.metrics, c.partial) for c in collect(tmp_path / "whole")}
    parts = {c.cell: (c.n_episodes, c.n_tasks, c.metrics, c.partial) for c in collect(tmp_path / "sharded")}
    assert parts == whole and not any(v[3] for v in parts.values())
    one_shard = cells(tmp_path / "one", latency_s=0.0, trials=2, shard="0/3")
    run(tmp_path / "one", one_shard)
    assert all(c.partial for c in collect(tmp_path / "one"))  # a missing shard shows as partial


def test_budget_without_prices_or_with_ray_fails_before_work(tmp_path):
    import pytest

    from runners.config import ConfigError
    from runners.run import check_budget

    cfgs = cells(tmp_path, n=1, budget_usd=1.0)
    with pytest.raises(ConfigError, match="no prices.*prices: \\{input"):
        check_budget(cfgs)
    cfgs[0].backbone.prices = {"input": 1.0, "cached_input": 0.5, "output": 2.0}
    check_budget(cfgs)
    ray_cells = cells(tmp_path, n=1, executor="ray", budget_usd=1.0)
    ray_cells[0].backbone.prices = cfgs[0].backbone.prices
    with pytest.raises(ConfigError, match="not supported with runner.executor=ray"):
        check_budget(ray_cells)


def test_cost_of_a_call_and_of_an_episode():
    from runners.cost import episode_usd, role_prices, usd

    p = {"input": 2.0, "cached_input": 0.5, "output": 8.0}  # USD per 1M tokens
    u = {"prompt_tokens": 1_000_000, "cached_prompt_tokens": 400_000, "completion_tokens": 250_000}
    assert usd(u, p) == 0.6 * 2.0 + 0.4 * 0.5 + 0.25 * 8.0 == 3.4
    assert usd(u, None) is None and usd(u, {"input": 1.0, "output": 1.0}) == 1.25  # cached_input defaults to input
    prices = role_prices({"backbone": {"prices": p}, "roles": {"judge": {"prices": {"input": 0.0, "output": 0.0}}}})
    rec = {"usage_by_role": {"agent": u, "judge": u}}
    assert episode_usd(rec, prices) == 3.4  # the judge's own backbone is free here


def test_cost_of_a_cell_without_episodes_reads_blank_not_zero(tmp_path):
    """A priced cell whose sweep stopped before its first episode finished has no cost to show:
    its USD is "–" in the tables and empty in metrics.csv, while the other cell's cost is shown."""
    import csv

    from runners.aggregate import main as aggregate_main
    from runners.analysis.cells import collect
    from runners.analysis.tables import build_tables

    cfgs = cells(tmp_path, latency_s=0.0)
    for c in cfgs:
        c.backbone.prices = {"input": 1.0, "cached_input": 0.5, "output": 2.0}
    run(tmp_path, cfgs)
    from runners.records.store import uncompact

    empty = tmp_path / cfgs[1].cell_name
    uncompact(empty).write_text("")  # the finished cell's records (compacted) back in the plain file, then none
    (empty / "DONE").unlink()
    by = {c.cell: c for c in collect(tmp_path)}
    assert by[cfgs[0].cell_name].metrics["USD"] > 0
    e = by[cfgs[1].cell_name]
    assert e.n_episodes == 0 and e.metrics["USD"] is None and "USD" in e.table_metrics
    header, rows, _ = build_tables(list(by.values()), "full_context", with_paper=False, resamples=0)
    assert rows[0][header.index("memoryarena_phys:USD")] == "–"
    assert rows[0][header.index("memoryarena_math:USD")].startswith("$")
    assert aggregate_main([str(tmp_path), "--bootstrap", "0"]) == 0
    usd = {
        r["benchmark"]: r["value"]
        for r in csv.DictReader((tmp_path / "tables" / "metrics.csv").open())
        if r["metric"] == "USD"
    }
    assert usd["memoryarena_phys"] == "" and float(usd["memoryarena_math"]) > 0


def test_budget_spends_in_fair_order_so_every_cell_ran_the_same_tasks(tmp_path):
    """Two methods on one benchmark and budgets that stop the run part-way: in cell order the
    first method would take every task before the second starts; in fair order both cells ran
    the same tasks (a prefix of the task list) whatever the budget."""
    import yaml

    from tests.runners.test_config import CONF_DIR

    prices = {"input": 1000.0, "cached_input": 1000.0, "output": 1000.0}

    def two_methods(out):
        cfgs = []
        for method in ("full_context", "flowstate"):
            raw = base()
            raw["method"] = yaml.safe_load((CONF_DIR / "method" / f"{method}.yaml").read_text())
            raw["benchmark"]["params"]["data_dir"] = "fixtures"
            raw["backbone"]["prices"] = prices
            raw["runner"].update(output_dir=str(out), display="none", concurrency=1)
            cfgs.append(validate(raw))
        return cfgs

    ref_cfgs = two_methods(tmp_path / "ref")
    reports, ref = run(tmp_path / "ref", ref_cfgs)
    assert all(r.ok == r.total == 3 for r in reports)
    order = [t.task_id for t in prepare_cells(ref_cfgs[:1])[0].tasks]
    partial = 0
    for k, share in enumerate((0.2, 0.45, 0.7)):  # of the full run's cost
        cfgs = two_methods(tmp_path / f"run{k}")
        reports, s = run(tmp_path / f"run{k}", cfgs, budget=share * ref.spent)
        ran = [
            sorted(x["task_id"] for x in read_jsonl(tmp_path / f"run{k}" / c.cell_name / "episodes.jsonl")[0])
            for c in cfgs
        ]
        if ran != [order[:1], []]:  # else: nothing was known about costs; the first episode ran alone, and
            # the budget left could not cover the round (a resume with more budget gives the other cell task 1)
            assert ran[0] == ran[1] == sorted(order[: len(ran[0])]), (share, ran)  # the same tasks, the first ones
        # a round starts only when it fits; a call is refused at the cap (concurrency 1: one call over at most)
        assert s.budget_reached and s.spent <= share * ref.spent + ref.spent / 6, (share, s.spent)
        partial += 0 < len(ran[0]) < len(order)
    assert partial >= 1  # some budget stopped the run part-way with work done in both cells


def test_fair_order_is_task_by_task_across_cells_of_different_sizes():
    from types import SimpleNamespace as NS

    from runners.run import fair_order

    def run(name, n, trials, done=()):
        tasks = [NS(task_id=f"{name}{i}") for i in range(n)]
        todo = [(i, k) for k in range(trials) for i, t in enumerate(tasks) if (t.task_id, k) not in done]
        return NS(name=name, tasks=tasks, todo=todo, prep=None)

    a, b = run("a", 3, 2, done={("a0", 0)}), run("b", 1, 2)  # a resumed, b smaller
    got = [(r.name, r.tasks[i].task_id, trial) for r, i, trial, _ in fair_order([a, b])]
    assert got == [
        ("b", "b0", 0),
        ("a", "a1", 0),
        ("a", "a2", 0),  # trial 0 of every task first
        ("a", "a0", 1),
        ("b", "b0", 1),
        ("a", "a1", 1),
        ("a", "a2", 1),
    ]
