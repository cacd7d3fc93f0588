"""The harness, in layers; each imports only the layers above it.

    runners.api        the contracts: Backbone, Benchmark, Method, Environment, Task, Decision, roles
        ↓
    runners.records    the run record: schema, store, transcripts, results (open_experiment), wire
        ↓
    engine             config, prepare (cells checked and loaded), pool (the sweep's backbones), episode
                       (the loop), run (the scheduler in this process, signals), launch (here or worker
                       processes: procs), ray_exec, cache, backbones/, progress, secrets, cost, budget
                       (the experiment's total), access (key and model before any work), prune (failed
                       tries), tokens, upstream, netcheck, inputs, interrupts
        ↓
    runners.analysis   cells, units, tables (+ table_cache), stats, papers, fidelity, paper (+ paper_figures),
                       episodes, report (HTML), plots, wandb_log; never imports the engine's modules that
                       run (run, launch, pool, prepare, procs, episode, sweep, backbones)
        ↓
    CLI                runners.sweep (run a grid), runners.aggregate (tables), runners.view (report),
                       runners.paper (the papers' tables and figures as printed)

Methods and benchmarks (flowstate/, pos/, baselines/, benchmarks/) import `runners.api` and the
declared public helpers (`runners.tokens`, `runners.upstream`, `runners.netcheck`, `runners.inputs`,
`runners.records.results`); the toolkit kit/ only `runners.api` and `runners.tokens`; see
docs/contracts.md §1. tests/test_import_graph.py checks these arrows.
"""
