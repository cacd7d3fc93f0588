"""ALFWorld (Shridhar et al., ICLR 2021) played as text through the TextWorld PDDL engine:
the 134 `valid_unseen` games, as in ReAct and Reflexion (docs/alfworld.md).

Modules: `data` (loader, task types, manifest check), `text` (pure observation clean-ups and
command matching), `engine` (lazy TextWorld wrapper), `env` (the harness Environment and
Benchmark), `metrics`, `replay` (walkthrough command). Importing this package never imports
`alfworld` or `textworld`; only `engine` does, inside its functions.
"""
