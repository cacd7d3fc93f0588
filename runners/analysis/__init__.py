"""Analysis: everything that reads finished (or running) experiments and never runs a model.

- `cells`: the experiment as data (each cell read into a `CellSummary`; `collect`); every view below reads it.
- `units`: the #Tok unit rule (Tok/task, the paper's #Tok without the `tool` role, the notes).
- `tables`: the experiment's tables (Δ rows, intervals, `(paper)` rows), `runners.aggregate`; its cache `table_cache`.
- `stats`: Wilson and task-level bootstrap intervals, paired bootstrap and sign tests, Holm's correction.
- `papers`: the papers' reported numbers (runners/reference/*.csv), labels (runners/reference/layouts/labels.yaml) and
  table formatting (md, tex).
- `fidelity`: how a cell differs from the paper's setting ([fixture], [subset n/N], [roles≠paper], [paraphrased],
  [mixed]).
- `paper`, `paper_figures`: both papers' tables and figures as printed, from the layouts in runners/reference/layouts
  (`runners.paper`).
- `episodes`: per-episode readers over record dicts (outcome, #Tok, declared per-step series, transcript pieces).
- `report`: the self-contained HTML report (`runners.view`) with its `assets/`.
- `plots`: figures as SVG/PNG files (extra `analysis`).
- `wandb_log`: the experiment as a W&B run (extra `wandb`).

It imports `runners.api`, `runners.records` and configuration helpers, never the engine's run or episode modules.
"""
