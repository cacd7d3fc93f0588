"""The harness, in layers; each imports only the layers above it.

    runners.api        the contracts: Backbone, Benchmark, Method, Environment, Task, Decision, roles
        ↓
    runners.records    the run record: schema, store, transcripts, results (open_experiment), wire
        ↓
    engine             config, episode (the loop), run (scheduler, pool, signals, budget), cache,
                       backbones/, progress, secrets, cost, budget (the experiment's total), access (key
                       and model before any work), prune (failed tries), tokens, upstream, netcheck,
                       inputs, interrupts, procs (runner.processes: worker processes), ray_exec
        ↓
    runners.analysis   tables, stats, papers, fidelity, paper (+ paper_figures), episodes, report (HTML),
                       plots, wandb_log; never imports the engine's run, episode, sweep or backbones modules
        ↓
    CLI                runners.sweep (run a grid), runners.aggregate (tables), runners.view (report),
                       runners.paper (the papers' tables and figures as printed)

Methods and benchmarks (flowstate/, pos/, baselines/, benchmarks/) import `runners.api` and the
declared public helpers (`runners.tokens`, `runners.upstream`, `runners.netcheck`, `runners.inputs`,
`runners.records.results`); the toolkit kit/ only `runners.api` and `runners.tokens`; see
docs/contracts.md §1. tests/test_import_graph.py checks these arrows.
"""
