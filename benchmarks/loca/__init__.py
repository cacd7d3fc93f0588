"""LOCA-Bench (docs/pos-benchmarks.md §1) as PoS runs it: upstream GEM environments when the optional
LOCA package is installed, else the pure-Python StockAlertLite fixture, through one adapter."""
