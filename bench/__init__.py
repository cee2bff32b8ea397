"""Benchmarks: each script prints one JSON line with a baseline measured in the same run (README)."""
