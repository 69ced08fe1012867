"""snapdp: differentially private releases through Mironov's snapping mechanism.

Public API: :class:`SnappingMechanism` (the exact mechanism of DESIGN §2),
:class:`LaplaceMechanism` (the unsafe textbook baseline), :func:`epsilon_for_accuracy`,
:class:`PrivacyGuarantee` and :class:`ParameterError`. Binary64 helpers are in :mod:`snapdp.ieee`.
"""

from snapdp.accuracy import epsilon_for_accuracy
from snapdp.errors import LedgerError, ParameterError, PrivacyBudgetError
from snapdp.guarantee import PrivacyGuarantee
from snapdp.mechanism import LaplaceMechanism, SnappingMechanism

__all__ = [
    "LaplaceMechanism",
    "LedgerError",
    "ParameterError",
    "PrivacyBudgetError",
    "PrivacyGuarantee",
    "SnappingMechanism",
    "epsilon_for_accuracy",
]

__version__ = "0.1.0"
