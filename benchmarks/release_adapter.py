"""What the PoS release's adapter (`benchmarks/adapter.py`) hands every method at the start of a
case, on the PoS benchmarks (`adapter: release`, the default; docs/pos-benchmarks.md, docs/texts.md):

| benchmark | `state["task"]` (`Request.text`)                          | first observation (`Request.observation`) |
|-----------|-----------------------------------------------------------|-------------------------------------------|
| ALFWorld  | the sentence after "Your task is to:"                      | the reset observation, raw                |
| LOCA      | the environment's user prompt                              | the same user prompt                      |
| RCA-100   | `task.json` minus `prompt_text`, `json.dumps(indent=2)`     | a fixed sentence (`_RCA100.reset`)        |
| ClinDiag  | `{case_id: "<subset>/<id>", subset, initial_presentation}` | a fixed sentence (`_ClinDiag.reset`)      |

The two fixed sentences are read at run time from the pinned `benchmarks/adapter.py` (the string
assigned to `observation` in the reset method), never written here; without the file the
benchmark's own notice is used, recorded as paraphrased. `adapter: project` keeps the project's
wrappers (a labelled task, the notice after it, the task as the first observation)."""

from __future__ import annotations

import json
from typing import Any

from runners.upstream import TextSources, UpstreamFile, py_local_string

ADAPTER = UpstreamFile("PoS", "benchmarks/adapter.py")
ADAPTERS = ("release", "project")
_RESET = {"rca": "_RCA100.reset", "clindiag": "_ClinDiag.reset"}


def check(adapter: Any) -> str:
    """The adapter setting, or a clear error naming the fix."""
    if adapter not in ADAPTERS:
        raise ValueError(
            f"adapter must be one of {', '.join(ADAPTERS)}, got {adapter!r}. Fix: set benchmark.params.adapter=release "
            "(the PoS release's task and first observation) or project (the project's wrappers)"
        )
    return str(adapter)


def first_observation(kind: str, sources: TextSources, fallback: str) -> str:
    """The release adapter's first observation of an RCA-100 or ClinDiag case (recorded as
    `adapter.first_observation.<kind>`); `fallback` when unavailable."""
    text = py_local_string(ADAPTER, _RESET[kind], "observation")
    return sources.use(
        f"adapter.first_observation.{kind}", ADAPTER, text, fallback, symbol=f"{_RESET[kind]}.observation"
    )


def task_json(task: dict[str, Any]) -> str:
    """`state["task"]` of RCA-100 and ClinDiag: the task object as the release dumps it."""
    return json.dumps(task, ensure_ascii=False, indent=2)
