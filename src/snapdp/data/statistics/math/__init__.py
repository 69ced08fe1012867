"""Statistics math: pure functions of public parameters and exact counts."""
