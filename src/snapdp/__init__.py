"""snapdp: differentially private releases through Mironov's snapping mechanism.

Public API: :class:`SnappingMechanism` (the exact mechanism of DESIGN §2),
:class:`LaplaceMechanism` (the unsafe textbook baseline), :func:`epsilon_for_accuracy`,
:class:`PrivacyGuarantee` and :class:`ParameterError`. Binary64 helpers are in :mod:`snapdp.ieee`.

The names are imported when first used (PEP 562), so that importing a submodule (the
``snapdp`` command's, say) does not import the mechanism, numpy and gmpy2 before it needs them
(docs/performance.md, "Fresh run").
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Public name → the module defining it.
_HOMES: dict[str, str] = {
    "LaplaceMechanism": "snapdp.mechanism",
    "LedgerError": "snapdp.errors",
    "ParameterError": "snapdp.errors",
    "PrivacyBudgetError": "snapdp.errors",
    "PrivacyGuarantee": "snapdp.guarantee",
    "SnappingMechanism": "snapdp.mechanism",
    "epsilon_for_accuracy": "snapdp.accuracy",
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the package (PEP 562)."""
    home = _HOMES.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"snapdp.{name}") is not None:
        # A submodule, as `import snapdp; snapdp.mechanism` gave when the package imported it.
        value = importlib.import_module(f"snapdp.{name}")
    else:
        raise AttributeError(f"module 'snapdp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
