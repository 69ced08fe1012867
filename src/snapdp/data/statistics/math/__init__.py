"""Statistics math: pure functions of public parameters and exact counts (sums of snapped
noises, the sample variance, quantile trees and grids; docs/data.md)."""
