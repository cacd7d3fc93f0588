"""runner.plan=true prints tasks × trials, calls, tokens and $ per role and in total, says where
each estimate comes from, and exits 0 without a single request and without writing results."""

from runners.plan import paper_reported_tok, task_counts
from tests.fake_openai import FakeOpenAI, react_responder
from tests.runners.sweep_helpers import fake_endpoint, run_sweep

PRICES = "backbone.prices={input: 2.0, cached_input: 0.5, output: 8.0}"


def endpoint(srv):
    return (*fake_endpoint(srv), "benchmark.params.data_dir=fixtures")


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


def claim_real_data(experiment_dir):
    """Rewrite the manifests of a stored experiment as if it had run on the benchmark's real data."""
    import json

    for m in experiment_dir.glob("*/manifest.json"):
        d = json.loads(m.read_text())
        d["config"]["benchmark"]["params"]["data_dir"] = "/data/memoryarena"
        (d.get("benchmark_notes") or {}).pop("data", None)
        m.write_text(json.dumps(d))


def test_a_fixture_run_in_a_sibling_experiment_is_never_borrowed(tmp_path):
    """A run on fixture data (here in another experiment folder, same method / benchmark / model)
    says nothing about the real benchmark's cost: the plan passes over it and says so."""
    with FakeOpenAI(react_responder) as srv:
        base = (*endpoint(srv), PRICES, "method=full_context", "benchmark=memoryarena_math", "runner.limit=2")
        r = run_sweep(tmp_path, *base, "experiment.name=sibling")
        assert r.returncode == 0, r.stderr[-3000:]
        p = run_sweep(tmp_path, *base, "experiment.name=planned", "runner.plan=true")
    assert p.returncode == 0, p.stderr[-3000:]
    cell = p.stdout.split("Total:")[0]
    lines = [ln for ln in cell.splitlines() if ln.strip().startswith(("agent (method)", "judge", "tool"))]
    assert len(lines) == 3  # agent, judge and tool, each: no estimate and why
    for ln in lines:
        assert "tokens        ?" in ln and "stored run sibling/" not in ln
        assert "unknown (no paper #Tok, no stored run on real data; passed over: 1 stored run(s) on fixture data)" in ln
    assert "3 role estimate(s) unknown" in p.stdout


def test_estimates_come_from_a_stored_run_then_priced_per_role(tmp_path):
    """After a real (non-scripted) run, the plan of the same cells reads calls and tokens per role
    from it, and prices them: tokens × episodes at the backbone's list price."""
    args = ("method=full_context", "benchmark=memoryarena_math", "experiment.name=stored", "runner.limit=2")
    with FakeOpenAI(react_responder) as srv:
        r = run_sweep(tmp_path, *endpoint(srv), PRICES, *args)
        assert r.returncode == 0, r.stderr[-3000:]
        n = srv.requests
        claim_real_data(tmp_path / "stored")  # the fixture run stands in for a run on the benchmark's data
        p = run_sweep(tmp_path, *endpoint(srv), PRICES, *args, "runner.plan=true", "runner.trials=2")
        assert p.returncode == 0 and srv.requests == n
    from tests.runners.sweep_helpers import records_under

    recs = records_under(tmp_path / "stored")
    prompt = sum(x["usage_by_role"]["agent"]["prompt_tokens"] for x in recs) / len(recs)
    completion = sum(x["usage_by_role"]["agent"]["completion_tokens"] for x in recs) / len(recs)
    calls = sum(x["calls_by_role"]["agent"] for x in recs) / len(recs)
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("agent (method)"))
    assert "stored run stored/" in line and "same cell" in line and "2 episodes" in line and "real data" in line
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
        "paper: FlowState Table 1 #Tok 40.6M / 40 tasks (assumed 95% input" in line  # docs/runner.md: 95 % / 5 %
    )
    assert f"{40.60e6 / 40 * n / 1e6:.2f}M" in line and "no price: tokens only" in line
    assert "DEEPSEEK_API_KEY is not set" in p.stdout  # what a run would still need, listed, without failing the plan
    assert not (tmp_path / "default").exists()


def _paper_plan(tmp_path, *extra):
    return run_sweep(
        tmp_path,
        "backbone=deepseek_v4_flash",
        "method=full_context",
        "benchmark=memoryarena_math",
        "benchmark.params.data_dir=fixtures",
        "runner.plan=true",
        "runner.limit=2",
        *extra,
        env={"DEEPSEEK_API_KEY": ""},
    )


def test_prices_given_on_the_command_line_or_in_a_file_give_the_papers_backbones_a_bill(tmp_path):
    """A paper backbone without list prices: backbone.prices.input/output on the command line, or a
    prices file by model or backbone name, turn the paper's #Tok into dollars; one line names the
    roles still unpriced."""
    tokens = 40.60e6 / 40 * 2  # two tasks at the paper's #Tok per task
    usd = tokens * (0.95 * 0.5 + 0.05 * 2.0) / 1e6  # the stated split at $0.5 in, $2 out
    p = _paper_plan(tmp_path, "backbone.prices.input=0.5", "backbone.prices.output=2")
    assert p.returncode == 0, p.stderr[-2000:]
    agent = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("agent (method)"))
    assert f"${usd:.4f}" in agent or f"${usd:,.2f}" in agent, agent
    assert (
        "Total $ at list prices: $" in p.stdout and "Unpriced roles" not in p.stdout
    )  # judge, tool: gpt_5_mini priced
    prices = tmp_path / "prices.yaml"
    prices.write_text('deepseek-v4-flash: {input: 0.5, output: 2.0, source: "my contract"}\n')
    f = _paper_plan(tmp_path, f"runner.prices_file={prices}")
    assert f.returncode == 0, f.stderr[-2000:]
    assert agent.split("[")[0] in f.stdout and "(my contract)" in f.stdout  # the same bill, its source said
    none = _paper_plan(tmp_path, "roles.judge=agent", "roles.tool=agent")
    unpriced = [ln for ln in none.stdout.splitlines() if ln.startswith("Unpriced roles:")]
    assert len(unpriced) == 1 and "agent (method) (deepseek_v4_flash)" in unpriced[0]
    assert "backbone.prices.input=" in unpriced[0] and "runner.prices_file=" in unpriced[0]
    half = _paper_plan(tmp_path, "backbone.prices.input=0.5")
    assert half.returncode == 2 and "prices need both input and output" in half.stderr
