"""The toy benchmark: the smallest complete `Benchmark`, the template for a new one (docs/toy-benchmark.md)."""
