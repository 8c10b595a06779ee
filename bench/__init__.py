"""Benchmarks of issue 4: see bench/README.md."""
