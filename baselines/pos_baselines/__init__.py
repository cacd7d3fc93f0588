"""The PoS comparison baselines as harness methods (docs/pos-baselines.md).

| paper name            | harness method                                   | conf/method            |
|-----------------------|--------------------------------------------------|------------------------|
| Raw Trajectory        | baselines.full_context.FullContext               | full_context           |
| ACON                  | baselines.pos_baselines.acon.Acon                | acon                   |
| PACE                  | baselines.pos_baselines.pace.Pace                | pace                   |
| HiAgent               | baselines.pos_baselines.hiagent.HiAgent          | hiagent                |
| LongHorizon-Harness   | baselines.pos_baselines.lhh.LongHorizonHarness   | longhorizon_harness    |

Raw = `full_context` with its defaults: the whole trajectory in one two-message request, no
assistant turns replayed, no compression, `max_resamples: 2` (= Raw's `max_json_retries: 2`).
No setting differs, so there is no `raw.yaml`; on the PoS benchmarks `full_context` sends the
release's `build_prompt` with `json.dumps(trajectory, indent=2)` (`policy_prompt: release`).

All four share Raw's loop (§0.1: system prompt, tools, reply format, re-samples; the benchmark's
caps and forced-submission directive come with its observations). On the PoS benchmarks that is the
PoS release's ReAct interface (pos/release_react.py; `policy_prompt: project` = the project's ReAct
blocks). Only the context builder differs. Auxiliary calls use role "memory" (ACON compressors, PACE
summaries, HiAgent subgoal summaries: context compression) or "state" (LH-Harness manager and
auditor: they maintain the task state), so their tokens are reported apart from the policy's ("agent") — §0.3.
"""
