"""The old import path of the run records' reader, kept for notebooks and scripts written before the
records moved into `runners.records` (`from runners.results import open_experiment`): every name of
`runners.records.results`, with a deprecation note that names the new path."""

import warnings
from typing import Any

from runners.records import results as _results
from runners.records.results import *  # noqa: F403  # the public names, as before the move

warnings.warn(
    "`runners.results` is deprecated: import from `runners.records.results` instead "
    "(e.g. `from runners.records.results import open_experiment`); the old path keeps working for now",
    FutureWarning,  # shown by default (a DeprecationWarning is hidden outside __main__), e.g. in a notebook
    stacklevel=2,
)


def __getattr__(name: str) -> Any:  # names `import *` leaves out (underscored helpers)
    return getattr(_results, name)
