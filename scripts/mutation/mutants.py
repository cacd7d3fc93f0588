"""Hand-made mutants over the modules whose mistakes become wrong published numbers: benchmark
metrics and scorers, FlowState, PoS health, the engine's cell key, the statistics and the reply
reader. Each mutant is one plausible slip (a threshold, an off-by-one, a swapped field, a dropped
case); `old` must occur exactly once in `file`. `tests` are the test files that cover the module
(the check runs only those). A mutant that survives is either a gap to close with a test or listed
in `ACCEPTED` with the reason it cannot change a result (docs/testing.md, "Mutation check")."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


TRAVEL = ("tests/memoryarena/test_travel_score.py",)
TAU = ("tests/tau/test_evaluation.py",)
STATS = ("tests/runners/test_stats.py",)
PAPERS = ("tests/runners/test_report.py", "tests/runners/test_tok_roles.py")
FLOWSTATE = ("tests/flowstate/test_method.py", "tests/flowstate/test_repository.py", "tests/flowstate/test_isu.py",
             "tests/flowstate/test_psa.py", "tests/flowstate/test_invariants.py")
HEALTH = ("tests/pos/test_health.py",)
CONFIG = ("tests/runners/test_config.py",)
READER = ("tests/test_reader.py",)

MUTANTS: list[Mutant] = [
    # ------------------------------------------------------------------ MemoryArena travel scorer
    Mutant("travel_threshold_0.6", "benchmarks/memoryarena/travel_score.py", "THRESHOLD = 0.7", "THRESHOLD = 0.6", TRAVEL),
    Mutant("travel_no_attraction_slot", "benchmarks/memoryarena/travel_score.py",
           'SLOTS = ("breakfast", "lunch", "dinner", "accommodation", "transportation", "attraction")',
           'SLOTS = ("breakfast", "lunch", "dinner", "accommodation", "transportation")', TRAVEL),
    # ------------------------------------------------------------------ τ metrics
    Mutant("tau_db_reads_success", "benchmarks/tau/metrics.py",
           '"DB": pct(bool(s.get("db_match"))', '"DB": pct(bool(s.get("success"))', TAU),
    # ------------------------------------------------------------------ statistics and Δ
    Mutant("stats_interval_90_as_95", "runners/analysis/stats.py", "a = (1 - level) / 2", "a = (1 - level)", STATS),
    Mutant("papers_tok_no_tool_delta_absolute", "runners/analysis/papers.py",
           'RELATIVE_METRICS = {"Tok", "Tok_no_tool", "USD"}', 'RELATIVE_METRICS = {"Tok", "USD"}', PAPERS),
    # ------------------------------------------------------------------ FlowState ablations
    Mutant("flowstate_no_psa_shows_raw_nodes", "flowstate/ablations.py",
           "for node in self.repo.historical_states():", "for node in self.repo.nodes.values():", FLOWSTATE),
    # ------------------------------------------------------------------ PoS health
    Mutant("health_epsilon_0.2", "pos/health.py", "recurrence_epsilon: float = Field(0.15,",
           "recurrence_epsilon: float = Field(0.2,", HEALTH),
    Mutant("health_static_half_epsilon", "pos/health.py",
           "if len(worlds) >= 2 and world_distance(worlds[-1], worlds[-2]) <= cfg.recurrence_epsilon:",
           "if len(worlds) >= 2 and world_distance(worlds[-1], worlds[-2]) <= cfg.recurrence_epsilon / 2:", HEALTH),
    # ------------------------------------------------------------------ engine: the cell key
    Mutant("config_key_ignores_seed", "runners/config.py", '            "seed": self.runner.seed,\n', "", CONFIG),
    # ------------------------------------------------------------------ reply reader
    Mutant("reader_first_block", "kit/reader.py", "        return matches[-1].group(1)\n",
           "        return matches[0].group(1)\n", READER),
    Mutant("reader_first_block_set", "kit/reader.py", "for _, tag, content in reversed(found):",
           "for _, tag, content in found:", READER),
    Mutant("reader_beta_as_backspace", "kit/reader.py", 'if nxt in "fb" and i + 2 < len(src)',
           'if nxt in "f" and i + 2 < len(src)', READER),
]

ACCEPTED: dict[str, str] = {}
"""Mutant id → why its survival cannot change a result (kept in step with docs/testing.md)."""
