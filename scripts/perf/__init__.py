"""Performance measurements (`make perf` runs them all)."""
