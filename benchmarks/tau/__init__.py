"""τ³-bench (tau2-bench v1.0.1 @ fc0055d) Airline and Retail, carried natively (the official
package needs Python ≥ 3.12 and is not on PyPI). Spec: docs/tau-bench.md.

Modules, by role:
- `data`        pinned files: local dir / $TAU2_DATA_DIR / download, sha256-checked; splits
- `toolkit`     tool decorator + schemas, dispatch (`tool(**arguments)`), output JSON, DB hash,
                `calculate`, `transfer_to_human_agents`
- `airline`, `retail` (+ `*_models`)  the domain tools and their record shapes
- `user_sim`    simulated user (role `user_sim`) and the scripted user
- `env`         one episode on the harness contract (steps, errors, termination reasons)
- `evaluation`, `judge`, `metrics`    DB / COMMUNICATE / ACTION / NL_ASSERTION, reward, pass^k
- `benchmark`   `TauBenchmark` (conf/benchmark/tau_airline.yaml, tau_retail.yaml)
- `replay`      `python -m benchmarks.tau.replay --domain airline --data-dir DIR --split base`
"""
