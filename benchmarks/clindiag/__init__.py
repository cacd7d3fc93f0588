"""ClinDiag (geteff1/ClinDiag, Apache-2.0): interactive clinical diagnosis as PoS runs it
(docs/pos-benchmarks.md §3). Real cases come from a data folder ($CLINDIAG_DATA_DIR); `data_dir:
fixtures` is our fictional fixture under `fixtures/`."""
