"""The method kit: the machinery every method shares (FlowState, PoS and the baselines import
it; it imports only the contracts in `runners.api` and the token counter `runners.tokens`).

- `kit.agent`      SingleCallMethod: one model call per step, bounded repair turns (or re-samples)
- `kit.asking`     ask_until: the one bounded ask-again loop (the agent step and the LLM judges use it)
- `kit.reader`     the one tolerant reader of model output (thinking, repeated blocks, fences, JSON
                   repair, the LaTeX backslash rule); every tolerance recorded (docs/robustness.md)
- `kit.react`      ReactProtocol: the tagged-block output format of the ReAct-style methods
- `kit.blocks`     total parsing of tagged JSON blocks and JSON objects in model text
- `kit.prompting`  rendering of tool catalogues and shared prompt pieces
- `kit.trajectory` the step/request history records methods keep
- `kit.overrides`  per-task-kind overrides of method settings
"""
