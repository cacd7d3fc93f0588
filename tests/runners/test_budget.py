"""runner.budget_usd is the experiment's total, counted from its stored records: running the same
command again never spends it again, a run stops within one call's cost of the cap, rounds keep
every cell of a benchmark on the same tasks, and absurd usage counts cannot blow through it.
Every run goes through the sweep CLI against a real loopback endpoint (tests/fake_openai.py)."""

import json

from runners.budget import BUDGET, record_spend
from runners.cost import call_usd
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import fake_endpoint, records_under, run_sweep

PRICES = {"input": 2.0, "cached_input": 2.0, "output": 8.0}
GRID = (
    "++experiment.grid.method=[full_context,flowstate,bm25]",
    "benchmark=memoryarena_math",
    "benchmark.params.data_dir=fixtures",
    "experiment.name=budgeted",
    "runner.limit=4",
    "runner.concurrency=1",
)


def endpoint(srv, prices=PRICES):
    return (
        *fake_endpoint(srv),
        "backbone.prices={" + ", ".join(f"{k}: {v}" for k, v in prices.items()) + "}",
    )


def all_records(root):
    """Every stored record (finished and failed) under the experiment folder."""
    out = []
    for f in list(root.rglob("episodes.jsonl")) + list(root.rglob("errors.jsonl")):
        out += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    from tests.runners.sweep_helpers import unzstd

    for f in root.rglob("episodes.jsonl.zst"):
        out += [json.loads(line) for line in unzstd(f).decode().splitlines() if line.strip()]
    return out


def spent_and_max_call(root):
    by_role = {"*": PRICES}
    recs = all_records(root)
    calls = [
        call_usd(c["role"], c["usage"], by_role) or 0.0
        for r in recs
        for q in r.get("requests", [])
        for s in q.get("steps", [])
        for c in s.get("calls", [])
        if not c.get("cached")
    ]
    return sum(record_spend(r, by_role) for r in recs), max(calls or [0.0])


def task_sets(root):
    sets = {}
    for r in records_under(root):
        sets.setdefault(r["cell"], set()).add((r["task_id"], r["trial"]))
    return sets


def started_sets(root):
    """Each cell's episodes finished or cut short by the cap (a refused call ends the episode as an
    infra error, which a resume with budget left runs first): the rounds a budget admits are whole."""
    started = {c: set(v) for c, v in task_sets(root).items()}
    for r in all_records(root):
        if r.get("status", "ok") != "ok" and "budget" in str(r.get("error", "")).lower():
            started.setdefault(r["cell"], set()).add((r["task_id"], r["trial"]))
    return started


def test_budget_is_the_experiments_total_across_resumes_and_keeps_cells_on_the_same_tasks(tmp_path):
    """Budget $0.01 over 3 cells, the same command run 4 times (the last without runner.budget_usd:
    the recorded budget holds): the stored records spent at most one call past $0.01 in all (per
    run it was spent again each time), every cell holds the same tasks, and a higher budget
    continues where it stopped."""
    exp = tmp_path / "budgeted"
    with FakeOpenAI(react_responder) as srv:
        outs = []
        for budget in ("runner.budget_usd=0.01",) * 3 + ("runner.trials=1",):  # the first run and three resumes
            p = run_sweep(tmp_path, *GRID, *endpoint(srv), budget)
            assert p.returncode in (0, 1), p.stderr[-3000:]
            outs.append(p.stdout)
        spent, one_call = spent_and_max_call(exp)
        assert 0 < spent <= 0.01 + one_call, (spent, one_call)  # not 0.01 per run: the experiment's total
        assert "recorded with the experiment" in outs[-1]  # the last run was given no budget
        assert "spent by the experiment in all" in outs[-1] and "Finishing the experiment would cost" in outs[-1]
        assert json.loads((exp / BUDGET).read_text())["budget_usd"] == 0.01
        done = task_sets(exp)
        # Every round was admitted whole: each cell holds the same tasks, finished or cut short by the cap
        # (an episode a refused call ended is an infra error that a resume with budget left runs first).
        started = started_sets(exp)
        assert len(started) == 3 and len({frozenset(v) for v in started.values()}) == 1, (done, started)
        assert all(v <= max(started.values(), key=len) for v in done.values())
        n_done = sum(map(len, done.values()))
        assert n_done < 3 * 3  # the budget stopped it part-way (3 fixture tasks per cell)
        p = run_sweep(tmp_path, *GRID, *endpoint(srv), "runner.budget_usd=0.03")  # raised: it continues
        spent3, one_call = spent_and_max_call(exp)
        assert spent < spent3 <= 0.03 + one_call, p.stdout[-2000:]
        later = task_sets(exp)
        assert sum(map(len, later.values())) > n_done and len({frozenset(v) for v in started_sets(exp).values()}) == 1
        n = srv.requests
        plan = run_sweep(tmp_path, *GRID, *endpoint(srv), "runner.plan=true")  # the recorded budget, what is left
        assert plan.returncode == 0 and srv.requests == n, plan.stderr[-2000:]
        line = next(ln for ln in plan.stdout.splitlines() if ln.startswith("Budget: "))
        assert "$0.03 for the experiment" in line and f"${spent3:.4f} spent by its stored records" in line, line


def test_an_absurd_usage_count_is_estimated_and_the_budget_sees_the_estimate(tmp_path):
    """prompt_tokens 2^63-1 (10^26 and others: tests/test_openai_backbone.py): treated as missing,
    estimated and warned; the record reads back, the table counts the episode, a resume finds it
    done and the $5 budget is not declared spent."""
    for big in (2**63 - 1,):
        out = tmp_path / str(len(str(big)))
        usage = lambda body, text: {"prompt_tokens": big, "completion_tokens": 3}  # noqa: E731
        prices = {"input": 2.0, "cached_input": 2.0, "output": 8.0}
        args = ("method=full_context", *GRID[1:], "runner.limit=1")
        with FakeOpenAI(react_responder, usage=usage) as srv:
            p = run_sweep(out, *args, *endpoint(srv, prices), "runner.budget_usd=5")
            again = run_sweep(out, *args, *endpoint(srv, prices))
        assert p.returncode == 0, p.stderr[-3000:]
        assert "1/1 episodes done" in p.stdout and "unusable usage" in p.stdout
        assert "set aside" not in p.stdout + p.stderr and "[partial]" not in p.stdout
        recs = records_under(out / "budgeted")
        assert len(recs) == 1 and recs[0]["usage_by_role"]["agent"]["source"] == "estimated"
        spent, _ = spent_and_max_call(out / "budgeted")
        assert spent < 0.1
        assert "Nothing to run" in again.stdout and "set aside" not in again.stdout + again.stderr


def test_a_stored_record_costs_its_calls_not_served_from_the_cache():
    call = {"role": "agent", "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}
    record = {
        "task_id": "t",
        "trial": 0,
        "requests": [{"steps": [{"calls": [call, {**call, "cached": True}]}]}],
        "unfinished_calls": [{**call, "role": "judge"}],
        "usage_by_role": {"agent": {"prompt_tokens": 2000, "completion_tokens": 200}},
    }
    by_role = {"*": PRICES}
    assert abs(record_spend(record, by_role) - 2 * (1000 * 2.0 + 100 * 8.0) / 1e6) < 1e-12
    stored_only = {"task_id": "t", "trial": 0, "usage_by_role": record["usage_by_role"]}  # a storage failure
    assert abs(record_spend(stored_only, by_role) - (2000 * 2.0 + 200 * 8.0) / 1e6) < 1e-12
