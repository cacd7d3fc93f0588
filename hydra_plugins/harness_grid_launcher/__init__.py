"""The project's Hydra launcher for `-m` (conf/hydra/launcher/grid.yaml, the default): all jobs as
one grid in one scheduler (runners.sweep.run_grid)."""
