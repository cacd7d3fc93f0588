"""Comparison methods: Full Context, memory systems, state trackers, PoS's baselines."""
