"""FlowState (arXiv 2609.34565): persistent execution state with Incremental State Update (ISU)
and Progressive State Access (PSA), plus the two ablations of App. B.5.

Modules: `state` (data model), `repository` (M_k, G_k, S_{k,t}), `isu`, `psa`, `protocol`
(four-block output), `prompts` (rules + Serialize), `method` (Algorithm 1), `ablations`."""

from flowstate.ablations import FlowStateNoISU, FlowStateNoPSA
from flowstate.method import FlowState

__all__ = ["FlowState", "FlowStateNoISU", "FlowStateNoPSA"]
