"""runner.plan=true prints tasks × trials, calls, tokens and $ per role and in total, says where
each estimate comes from, and exits 0 without a single request and without writing results."""

from runners.plan import ASSUMED_OUTPUT_SHARE, paper_reported_tok, task_counts
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import run_sweep

PRICES = "backbone.prices={input: 2.0, cached_input: 0.5, output: 8.0}"


def endpoint(srv):
    return (
        "backbone=openai_compatible",
        "backbone.model=fake-model",
        f"backbone.base_url={srv.base_url}",
        "backbone.base_url_env=null",
        "backbone.api_key_env=null",
        "benchmark.params.data_dir=fixtures",
        "roles.judge=agent",
        "roles.tool=agent",
        "runner.preflight_s=1",
    )


def test_plan_makes_no_request_and_writes_nothing(tmp_path):
    with FakeOpenAI(react_responder) as srv:
        p = run_sweep(
            tmp_path / "out",
            *endpoint(srv),
            PRICES,
            "++experiment.grid.method=[full_context,flowstate]",
            "benchmark=memoryarena_math",
            "experiment.name=planned",
            "runner.limit=2",
            "runner.trials=3",
            "runner.plan=true",
        )
        assert p.returncode == 0, p.stderr[-3000:]
        assert srv.requests == 0  # the endpoint counted no request
    assert not (tmp_path / "out").exists()  # no results, no cache, no experiment folder
    out = p.stdout
    assert "Plan of experiment 'planned': 2 cell(s)" in out
    assert out.count("2 tasks × 3 trial(s) = 6 episodes (tasks: loaded here)") == 2
    assert "unknown (no paper #Tok, no stored run)" in out  # a served model the papers did not run: no estimate
    assert "Total: 12 episodes to run" in out


def test_estimates_come_from_a_stored_run_then_priced_per_role(tmp_path):
    """After a real (non-scripted) run, the plan of the same cells reads calls and tokens per role
    from it, and prices them: tokens × episodes at the backbone's list price."""
    args = ("method=full_context", "benchmark=memoryarena_math", "experiment.name=stored", "runner.limit=2")
    with FakeOpenAI(react_responder) as srv:
        r = run_sweep(tmp_path, *endpoint(srv), PRICES, *args)
        assert r.returncode == 0, r.stderr[-3000:]
        n = srv.requests
        p = run_sweep(tmp_path, *endpoint(srv), PRICES, *args, "runner.plan=true", "runner.trials=2")
        assert p.returncode == 0 and srv.requests == n
    from tests.runners.sweep_helpers import records_under

    recs = records_under(tmp_path / "stored")
    prompt = sum(x["usage_by_role"]["agent"]["prompt_tokens"] for x in recs) / len(recs)
    completion = sum(x["usage_by_role"]["agent"]["completion_tokens"] for x in recs) / len(recs)
    calls = sum(x["calls_by_role"]["agent"] for x in recs) / len(recs)
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("agent (method)"))
    assert "stored run" in line and "same cell" in line and "2 episodes" in line
    assert "= 4 episodes; 2 already done, 2 to run" in p.stdout  # trial 0 is on disk: a run resumes past it
    episodes = 2  # 2 tasks × 2 trials, 2 done
    usd = episodes * (prompt * 2.0 + completion * 8.0) / 1e6
    assert f"calls {calls * episodes:.0f}".replace("calls ", "") in line.split("calls")[1]
    assert (f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}") in line


def test_paper_estimate_is_the_papers_tokens_per_task(tmp_path):
    """FlowState Table 1 reports 40.60 M tokens for Full Context on Math (40 papers): the plan
    estimates 1.015 M per task, split by the stated assumption, and says so."""
    assert paper_reported_tok("full_context", "deepseek_v4_flash", "memoryarena_math") == (40.60, "FlowState Table 1")
    assert paper_reported_tok("full_context", "scripted", "memoryarena_math") is None
    assert task_counts()["memoryarena_math"][0] == 40
    p = run_sweep(
        tmp_path,
        "backbone=deepseek_v4_flash",
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.plan=true",
        "roles.judge=agent",
        "roles.tool=agent",
        env={"DEEPSEEK_API_KEY": ""},
    )
    assert p.returncode == 0, p.stderr[-2000:]
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("agent (method)"))
    n = int(next(ln for ln in p.stdout.splitlines() if "episodes (tasks:" in ln).split(" tasks ×")[0].rsplit(" ", 1)[1])
    assert (
        f"paper: FlowState Table 1 #Tok 40.6M / 40 tasks (assumed {100 - 100 * ASSUMED_OUTPUT_SHARE:.0f}% input" in line
    )
    assert f"{40.60e6 / 40 * n / 1e6:.2f}M" in line and "no price: tokens only" in line
    assert "DEEPSEEK_API_KEY is not set" in p.stdout  # what a run would still need, listed, without failing the plan
    assert not (tmp_path / "default").exists()
