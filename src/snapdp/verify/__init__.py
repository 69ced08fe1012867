"""Verification of the snapping mechanism: exact distribution, exact privacy loss, attacks, audit.

DESIGN §6: the certified program is the program that runs — everything here evaluates the core's
pure functions in :mod:`snapdp.snapping` and never re-implements the mechanism.
"""

from snapdp.verify.distribution import ExactDistribution, exact_distribution

__all__ = ["ExactDistribution", "exact_distribution"]
