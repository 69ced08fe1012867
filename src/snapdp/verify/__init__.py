"""Verification of the snapping mechanism: exact distribution, exact privacy loss, attacks, audit.

DESIGN §6: the certified program is the program that runs — everything here evaluates the core's
pure functions in :mod:`snapdp.snapping` and never re-implements the mechanism. See
docs/verification.md.
"""

from snapdp.verify.audit import AuditResult, audit, clopper_pearson, threshold_events
from snapdp.verify.certify import Certificate, GridPoint, certify
from snapdp.verify.distribution import ExactDistribution, exact_distribution
from snapdp.verify.laplace import TextbookLeak, textbook_leak
from snapdp.verify.loss import PrivacyLoss, privacy_loss

__all__ = [
    "AuditResult",
    "Certificate",
    "ExactDistribution",
    "GridPoint",
    "PrivacyLoss",
    "TextbookLeak",
    "audit",
    "certify",
    "clopper_pearson",
    "exact_distribution",
    "privacy_loss",
    "textbook_leak",
    "threshold_events",
]
