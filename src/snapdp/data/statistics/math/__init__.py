"""Exact and floating-point mathematics of the statistics: sums of snapped noises and the
sample variance (docs/data.md)."""
