"""`python -m runners.sweep -m method=a,b benchmark=x,y` as one sweep: Hydra's sweeper expands
the command line into jobs; this launcher receives all of them at once, composes each job's
config, and hands every cell of every job to the one scheduler (`runners.sweep.run_grid`): cells
overlap, one in-flight bound per endpoint, one completeness report, one table. Launchers that
start each job in its own process (hydra/launcher=slurm, slurm_local) are unchanged.

Registered the way Hydra finds launchers: a module of the `hydra_plugins` namespace package
holding a `Launcher` subclass, and a ConfigStore entry `harness_grid` that conf/hydra/launcher/grid.yaml
extends (conf/config.yaml
makes it the default)."""

from collections.abc import Sequence
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, open_dict


@dataclass
class GridLauncherConf:
    _target_: str = "hydra_plugins.harness_grid_launcher.grid_launcher.GridLauncher"


ConfigStore.instance().store(group="hydra/launcher", name="harness_grid", node=GridLauncherConf, provider="harness")


class GridLauncher(Launcher):
    def __init__(self) -> None:
        super().__init__()
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        from runners.sweep import run_grid

        assert self.config is not None and self.hydra_context is not None
        jobs = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(cfg):
                cfg.hydra.job.id = cfg.hydra.job.num = idx
            jobs.append((cfg, list(overrides)))
        rc = run_grid(jobs, sweep_dir=str(self.config.hydra.sweep.dir), cli=list(self.config.hydra.overrides.task))
        out = []
        for cfg, overrides in jobs:
            r = JobReturn(overrides=overrides, cfg=cfg, hydra_cfg=self.config, status=JobStatus.COMPLETED)
            r.return_value = rc  # the sweep's exit code (runners.sweep.main exits with it)
            out.append(r)
        return out
