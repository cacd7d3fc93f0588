"""PoS (Progression of States; Luo et al., arXiv 2610.01415): an explicit, audited belief state
drives a ReAct policy that never sees raw history. Spec: docs/pos.md.

Modules: `text` (normalisation, gap equivalence), `world` (belief records and deltas), `gaps`
(target stabilisation, stable identities, Active-Gap selection), `projection` (subgraphs),
`health` (progress-health detector + CLI), `recovery` (constraints), `protocols`/`prompts`
(model I/O), `updater` (belief model calls), `sentinel` (consistency audits, progress labels),
`policy` (the no-history policy prompt), `config` (params), `method` (the `PoS` Method)."""
