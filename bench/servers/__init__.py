"""Servers used only by the benchmarks."""
