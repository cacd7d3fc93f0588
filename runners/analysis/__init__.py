"""Analysis: everything that reads finished (or running) experiments and never runs a model.

- `tables`: per-cell summaries, the experiment's tables (Δ rows, intervals, `(paper)` rows), `runners.aggregate`.
- `stats`: task-level bootstrap intervals, paired bootstrap and sign tests.
- `papers`: the papers' reported numbers (runners/reference/*.csv), labels and table formatting (md, tex).
- `episodes`: per-episode readers over record dicts (outcome, #Tok, declared per-step series, transcript pieces).
- `report`: the self-contained HTML report (`runners.view`) with its `assets/`.
- `plots`: figures as SVG/PNG files (extra `analysis`).
- `wandb_log`: the experiment as a W&B run (extra `wandb`).

It imports `runners.api`, `runners.records` and configuration helpers, never the engine's run or episode modules.
"""
