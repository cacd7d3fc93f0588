"""Benchmark adapters: one subpackage per benchmark (loader, environment/tools, scorer)."""
