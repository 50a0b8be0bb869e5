"""Synthetic feed generators (deterministic for a seed), used by tests and benchmarks."""
