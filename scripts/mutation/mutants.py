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
FLOWSTATE = (
    "tests/flowstate/test_method.py",
    "tests/flowstate/test_repository.py",
    "tests/flowstate/test_isu.py",
    "tests/flowstate/test_psa.py",
    "tests/flowstate/test_invariants.py",
)
HEALTH = ("tests/pos/test_health.py",)
CONFIG = ("tests/runners/test_config.py",)
READER = ("tests/test_reader.py",)
ARENA = ("tests/memoryarena/test_formal_metrics.py",)
SHOPPING = ("tests/memoryarena/test_shopping_score.py",)
ALFWORLD = ("tests/alfworld/test_metrics.py",)
CELLS = ("tests/runners/test_cell_counts.py", "tests/runners/test_report.py")
PLAN = ("tests/runners/test_plan_estimates.py",)
INPUTS = ("tests/test_inputs.py",)
# the fast store tests first: with -x a killed mutant stops there, before the resume tests it would stall
STORE = ("tests/runners/test_store_counts.py", "tests/runners/test_store.py")
BUDGET = ("tests/runners/test_budget_spend.py",)

MUTANTS: list[Mutant] = [
    # ------------------------------------------------------------------ MemoryArena travel scorer
    Mutant(
        "travel_threshold_0.6", "benchmarks/memoryarena/travel_score.py", "THRESHOLD = 0.7", "THRESHOLD = 0.6", TRAVEL
    ),
    Mutant(
        "travel_no_attraction_slot",
        "benchmarks/memoryarena/travel_score.py",
        'SLOTS = ("breakfast", "lunch", "dinner", "accommodation", "transportation", "attraction")',
        'SLOTS = ("breakfast", "lunch", "dinner", "accommodation", "transportation")',
        TRAVEL,
    ),
    # ------------------------------------------------------------------ τ metrics
    Mutant(
        "tau_db_reads_success",
        "benchmarks/tau/metrics.py",
        '"DB": pct(bool(s.get("db_match"))',
        '"DB": pct(bool(s.get("success"))',
        TAU,
    ),
    # ------------------------------------------------------------------ statistics and Δ
    Mutant("stats_interval_90_as_95", "runners/analysis/stats.py", "a = (1 - level) / 2", "a = (1 - level)", STATS),
    Mutant(
        "cells_tok_no_tool_delta_absolute",
        "runners/analysis/cells.py",
        'MetricSpec(name="Tok_no_tool", kind="tokens"',
        'MetricSpec(name="Tok_no_tool", kind="count"',
        PAPERS,
    ),
    Mutant(
        "papers_cost_delta_absolute",
        "runners/analysis/papers.py",
        'RELATIVE_KINDS = ("tokens", "cost")',
        'RELATIVE_KINDS = ("tokens",)',
        PAPERS,
    ),
    # ------------------------------------------------------------------ FlowState ablations
    Mutant(
        "flowstate_no_psa_shows_raw_nodes",
        "flowstate/ablations.py",
        "for node in self.repo.historical_states():",
        "for node in self.repo.nodes.values():",
        FLOWSTATE,
    ),
    # ------------------------------------------------------------------ PoS health
    Mutant(
        "health_epsilon_0.2",
        "pos/health.py",
        "recurrence_epsilon: float = Field(0.15,",
        "recurrence_epsilon: float = Field(0.2,",
        HEALTH,
    ),
    Mutant(
        "health_static_half_epsilon",
        "pos/health.py",
        "if len(worlds) >= 2 and world_distance(worlds[-1], worlds[-2]) <= cfg.recurrence_epsilon:",
        "if len(worlds) >= 2 and world_distance(worlds[-1], worlds[-2]) <= cfg.recurrence_epsilon / 2:",
        HEALTH,
    ),
    # ------------------------------------------------------------------ engine: the cell key
    Mutant("config_key_ignores_seed", "runners/config.py", '            "seed": self.runner.seed,\n', "", CONFIG),
    # ------------------------------------------------------------------ reply reader
    Mutant(
        "reader_first_block",
        "kit/reader.py",
        "        return matches[-1][1]\n",
        "        return matches[0][1]\n",
        READER,
    ),
    Mutant(
        "reader_first_block_set",
        "kit/reader.py",
        "for _, tag, content in reversed(found):",
        "for _, tag, content in found:",
        READER,
    ),
    Mutant(
        "reader_beta_as_backspace",
        "kit/reader.py",
        'if nxt in "fb" and i + 2 < len(src)',
        'if nxt in "f" and i + 2 < len(src)',
        READER,
    ),
    # ------------------------------------------------------------------ more slips of the same kinds
    Mutant(
        "travel_prefix_max",
        "benchmarks/memoryarena/travel_score.py",
        "m = min(len(a), len(b))",
        "m = max(len(a), len(b))",
        TRAVEL,
    ),
    Mutant(
        "travel_dash_dash_zero",
        "benchmarks/memoryarena/travel_score.py",
        'if a == "-" and b == "-":\n        return 1.0',
        'if a == "-" and b == "-":\n        return 0.0',
        TRAVEL,
    ),
    Mutant(
        "travel_repeated_day_last",
        "benchmarks/memoryarena/travel_score.py",
        'out.setdefault(d["day"], d)',
        'out[d["day"]] = d',
        TRAVEL,
    ),
    Mutant(
        "travel_sr_any",
        "benchmarks/memoryarena/travel_score.py",
        'return bool(rated) and all(p["full_pass"] for p in rated)',
        'return bool(rated) and any(p["full_pass"] for p in rated)',
        TRAVEL,
    ),
    Mutant(
        "travel_constraint_strict_gt",
        "benchmarks/memoryarena/travel_score.py",
        'got[d].get(s, "-"), prefix_only=prefix_only) >= threshold\n',
        'got[d].get(s, "-"), prefix_only=prefix_only) > threshold\n',
        TRAVEL,
    ),
    Mutant(
        "tau_pass_hat_k_denominator",
        "benchmarks/tau/metrics.py",
        "return comb(success_count, k) / comb(num_trials, k)",
        "return comb(success_count, k) / comb(num_trials, 1)",
        TAU,
    ),
    Mutant(
        "tau_pass_hat_kmax_max",
        "benchmarks/tau/metrics.py",
        "kmax = min(len(v) for v in successes_by_task.values())",
        "kmax = max(len(v) for v in successes_by_task.values())",
        TAU,
    ),
    Mutant(
        "tau_action_pooled_as_mean",
        "benchmarks/tau/metrics.py",
        "return 100.0 * sum(c for c, _ in checks) / sum(n for _, n in checks)",
        "return 100.0 * sum(c / n for c, n in checks) / len(checks)",
        TAU,
    ),
    Mutant(
        "tau_infra_counted_by_default",
        "benchmarks/tau/metrics.py",
        "            if not count_infra_as_failures:\n                continue\n",
        "",
        TAU,
    ),
    Mutant(
        "arena_ps_pooled",
        "benchmarks/memoryarena/metrics.py",
        "fr = [sum(c) / len(c) for c in correct if len(c)]\n    return 100.0 * sum(fr) / len(fr) if fr else None",
        "fr = [sum(c) / len(c) for c in correct if len(c)]\n"
        "    return 100.0 * sum(map(sum, correct)) / sum(map(len, correct)) if fr else None",
        ARENA,
    ),
    Mutant(
        "arena_acc_depth_all_tasks",
        "benchmarks/memoryarena/metrics.py",
        "having = [c for c in correct if len(c) >= k]",
        "having = [c for c in correct if len(c) > k]",
        ARENA,
    ),
    Mutant(
        "arena_nauc_trapezoid_sum",
        "benchmarks/memoryarena/metrics.py",
        "return sum((r[a] + r[b]) / 2 for a, b in zip(ks, ks[1:])) / (len(ks) - 1)",
        "return sum((r[a] + r[b]) / 2 for a, b in zip(ks, ks[1:])) / len(ks)",
        ARENA,
    ),
    Mutant(
        "arena_dr_sign",
        "benchmarks/memoryarena/metrics.py",
        "return -sum((k - kbar) * (r[k] - rbar) for k in ks) / den",
        "return sum((k - kbar) * (r[k] - rbar) for k in ks) / den",
        ARENA,
    ),
    Mutant(
        "shopping_ps_pooled",
        "benchmarks/memoryarena/shopping_score.py",
        '"PS": sum(sum(bool(s["match"]) for s in b) / len(b) for b in bundles) / n,',
        '"PS": sum(bool(s["match"]) for s in steps) / len(steps),',
        SHOPPING,
    ),
    Mutant(
        "shopping_type_threshold",
        "benchmarks/memoryarena/shopping_score.py",
        "r = 1.0 if (cat >= 0.5 or name > 0.2) else 0.5",
        "r = 1.0 if (cat > 0.5 or name > 0.2) else 0.5",
        SHOPPING,
    ),
    Mutant(
        "shopping_price_not_in_den",
        "benchmarks/memoryarena/shopping_score.py",
        "den = len(attributes) + (1 if price_ok is not None else 0)",
        "den = len(attributes)",
        SHOPPING,
    ),
    Mutant(
        "alfworld_infra_counted",
        "benchmarks/alfworld/metrics.py",
        'if e.get("status") == "infra_error":\n            continue',
        'if e.get("status") == "infra_error":\n            pass',
        ALFWORLD,
    ),
    Mutant(
        "stats_sign_test_one_sided",
        "runners/analysis/stats.py",
        "return min(1.0, 2 * _binomial_head(n, k) / 2**n)",
        "return min(1.0, _binomial_head(n, k) / 2**n)",
        STATS,
    ),
    Mutant(
        "stats_sign_test_off_by_one",
        "runners/analysis/stats.py",
        "    for i in range(k + 1):\n        total += term",
        "    for i in range(k):\n        total += term",
        STATS,
    ),
    Mutant(
        "stats_paired_reversed",
        "runners/analysis/stats.py",
        'diff = v["a", k] - v["r", k]',
        'diff = v["r", k] - v["a", k]',
        STATS,
    ),
    Mutant(
        "stats_resample_ids_merge",
        "runners/analysis/stats.py",
        'c["task_id"] = f"{e.get(\'task_id\')}~{tag}.{j}"',
        'c["task_id"] = f"{e.get(\'task_id\')}~{tag}"',
        STATS,
    ),
    Mutant(
        "stats_trial_bootstrap",
        "runners/analysis/stats.py",
        "groups = list(by_task(episodes).values())\n    if len(groups) < 2",
        "groups = [[e] for e in episodes]\n    if len(groups) < 2",
        STATS,
    ),
    Mutant(
        "stats_sign_ties_as_wins",
        "runners/analysis/stats.py",
        "wins = sum(x > y for x, y in pairs)",
        "wins = sum(x >= y for x, y in pairs)",
        STATS,
    ),
    Mutant(
        "health_persistence_last_denominator",
        "pos/health.py",
        "return len(common) / len(first), [i for i in first if i in common]",
        "return len(common) / len(set(id_lists[-1]) or first), [i for i in first if i in common]",
        HEALTH,
    ),
    Mutant(
        "health_window_first_k",
        "pos/health.py",
        'return [s for s in snapshots if is_label(s.get("progress"))][-k:]',
        'return [s for s in snapshots if is_label(s.get("progress"))][:k]',
        HEALTH,
    ),
    Mutant("health_world_distance_over_2", "pos/health.py", "for k in KINDS) / 3", "for k in KINDS) / 2", HEALTH),
    Mutant("health_ties_larger_lag", "pos/health.py", "if rates[lag] > best:", "if rates[lag] >= best:", HEALTH),
    Mutant(
        "health_score_min",
        "pos/health.py",
        "return 1.0 - max(p_e, p_a) * max(s, r)",
        "return 1.0 - max(p_e, p_a) * min(s, r)",
        HEALTH,
    ),
    Mutant(
        "health_trapped_strict",
        "pos/health.py",
        "return self.window_ready and self.health_score <= self.health_threshold",
        "return self.window_ready and self.health_score < self.health_threshold",
        HEALTH,
    ),
    Mutant(
        "health_cycle_period_one",
        "pos/health.py",
        "if r >= cfg.cycle_threshold and period is not None and period > 1:",
        "if r >= cfg.cycle_threshold and period is not None and period >= 1:",
        HEALTH,
    ),
    Mutant(
        "health_gap_ties_achievement",
        "pos/health.py",
        "return max(cands, key=lambda c: c[0])[1]",
        "return max(reversed(cands), key=lambda c: c[0])[1]",
        HEALTH,
    ),
    Mutant(
        "health_threshold_0.3",
        "pos/health.py",
        "health_threshold: float = Field(0.25,",
        "health_threshold: float = Field(0.3,",
        HEALTH,
    ),
    Mutant(
        "pos_yaml_epsilon_0.2", "conf/method/pos.yaml", "recurrence_epsilon: 0.15", "recurrence_epsilon: 0.2", HEALTH
    ),
    Mutant(
        "pos_yaml_threshold_0.3", "conf/method/pos.yaml", "health_threshold: 0.25 ", "health_threshold: 0.3 ", HEALTH
    ),
    Mutant(
        "config_key_ignores_roles",
        "runners/config.py",
        '            "roles": {r: (b.key_dict() if b else None) '
        'for r, b in self.roles.items() if b is not None or r != "tool"},\n',
        "",
        CONFIG,
    ),
    Mutant(
        "config_key_keeps_latency",
        "runners/config.py",
        'k: v for k, v in d["scripted"].items() if k != "latency_s"',
        'k: v for k, v in d["scripted"].items()',
        CONFIG,
    ),
    Mutant(
        "flowstate_index_lists_raw",
        "flowstate/repository.py",
        '{"state_id": i, "summary": self.nodes[i].summary} for i in self.by_request.get(r.query_id, [])',
        '{"state_id": n.state_id, "summary": n.summary} for n in self.nodes.values() if n.request == r.query_id',
        FLOWSTATE,
    ),
    Mutant(
        "flowstate_persist_keeps_dangling",
        "flowstate/repository.py",
        "                elif r.state_id in kept or r.state_id in self.nodes:\n",
        "                elif True:\n",
        FLOWSTATE,
    ),
    Mutant("reader_think_kept", "kit/reader.py", "    out = THINK_RE.sub(cut, text)\n", "    out = text\n", READER),
    Mutant(
        "reader_unicode_escape_doubled",
        "kit/reader.py",
        'return (None, 6) if re.match(r"[0-9a-fA-F]{4}", src[i + 2 : i + 6]) else ("invalid_escape", 1)',
        'return ("latex", 1)',
        READER,
    ),
    # ------------------------------------------------------------------ what a cell counts (the experiment read)
    Mutant(
        "cells_tok_per_task_over_tasks",
        "runners/analysis/units.py",
        "return tok / c.n_episodes if tok is not None and c.n_episodes else None",
        "return tok / c.n_tasks if tok is not None and c.n_tasks else None",
        CELLS,
    ),
    Mutant(
        "cells_count_tasks_not_asked_for",
        "runners/analysis/cells.py",
        'if 0 <= r["trial"] < trials and (ids is None or r["task_id"] in ids)]',
        'if 0 <= r["trial"] < trials]',
        CELLS,
    ),
    # ------------------------------------------------------------------ the plan's estimates
    Mutant(
        "plan_trial_beyond_trials_done",
        "runners/plan.py",
        "if 0 <= k < cfg.runner.trials and (ids is None or t in ids)",
        "if 0 <= k <= cfg.runner.trials and (ids is None or t in ids)",
        PLAN,
    ),
    Mutant(
        "plan_method_roles_agent_only",
        "runners/plan.py",
        'METHOD_ROLES_ON_AGENT = ("agent", "state", "memory", "sentinel")',
        'METHOD_ROLES_ON_AGENT = ("agent",)',
        PLAN,
    ),
    Mutant(
        "plan_cached_from_completion",
        "runners/plan.py",
        "est.cached = est.prompt * cache",
        "est.cached = est.completion * cache",
        PLAN,
    ),
    Mutant(
        "plan_assumed_output_share_0.1",
        "runners/plan.py",
        "ASSUMED_OUTPUT_SHARE = 0.05",
        "ASSUMED_OUTPUT_SHARE = 0.1",
        PLAN,
    ),
    # ------------------------------------------------------------------ data files and their manifest notes
    Mutant(
        "inputs_bom_kept",
        "runners/inputs.py",
        'return text[1:] if text.startswith("\\ufeff") else text',
        "return text",
        INPUTS,
    ),
    Mutant(
        "inputs_note_counts_lines",
        "runners/inputs.py",
        'entry["lone_surrogates_replaced"] += replaced',
        'entry["lone_surrogates_replaced"] += 1',
        INPUTS,
    ),
    Mutant(
        "inputs_notes_since_total",
        "runners/inputs.py",
        '"lone_surrogates_replaced": v["lone_surrogates_replaced"] - old}',
        '"lone_surrogates_replaced": v["lone_surrogates_replaced"]}',
        INPUTS,
    ),
    # ------------------------------------------------------------------ the store: what is finished
    Mutant(
        "store_no_dedup_on_load",
        "runners/records/store.py",
        'if r.get("status") == "ok" and k not in seen:',
        'if r.get("status") == "ok":',
        STORE,
    ),
    Mutant(
        "store_errored_counted_finished",
        "runners/records/store.py",
        'int(r.get("trial") or 0)) for r in records if r.get("status") == "ok"}',
        'int(r.get("trial") or 0)) for r in records}',
        STORE,
    ),
    # ------------------------------------------------------------------ the budget: what is spend (runner.budget_usd)
    Mutant(
        "budget_cache_hits_spent",
        "runners/run.py",
        "cost = 0.0 if log.cached else listed",
        "cost = listed",
        BUDGET,
    ),
    # ------------------------------------------------------------------ the budget (runners/budget.py, Scheduler)
    Mutant(
        "budget_counts_cache_hits",
        "runners/budget.py",
        'for c in calls if not c.get("cached")',
        "for c in calls",
        ("tests/runners/test_budget.py",),
    ),
    Mutant(
        "budget_per_run_not_stored",
        "runners/run.py",
        "self.spent_before = sum(c.spent for c in self.stored.values())",
        "self.spent_before = 0.0",
        ("tests/runners/test_scheduler.py",),
    ),
    Mutant(
        "budget_round_sweep_mean",  # a fair round's need from the sweep's mean cost, not each cell's own
        "runners/run.py",
        "        if run.costs:\n            return run.cost_total / len(run.costs)\n",
        "",
        ("tests/runners/test_scheduler.py", "tests/runners/test_budget_spend.py"),
    ),
    Mutant(
        "budget_guard_never_refuses",
        "runners/run.py",
        "if self.budget is None or self.total_spent + flying < self.budget:",
        "if True:",
        ("tests/runners/test_scheduler.py",),
    ),
]

PROFILES: dict[str, tuple[str, ...]] = {
    # CI's step (.ci/run): the first mutant of every mutated file, so a stale list or a test file that no
    # longer covers its module fails CI in about a minute; the full list runs with `python -m scripts.mutation`
    "short": tuple({m.file: m.id for m in reversed(MUTANTS)}.values()),
}
"""Named subsets of MUTANTS (`--profile NAME`)."""

ACCEPTED: dict[str, str] = {}
"""Mutant id → why its survival cannot change a result (kept in step with docs/testing.md)."""
