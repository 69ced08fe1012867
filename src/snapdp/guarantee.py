"""The privacy statement a mechanism makes, in words and numbers (DESIGN §2.8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from snapdp._rational import format_rational

__all__ = ["PrivacyGuarantee"]


@dataclass(frozen=True)
class PrivacyGuarantee:
    """(ε, δ)-differential privacy for a stated neighbouring relation.

    ``delta`` is an upper bound, rounded up, never silently 0: it is exactly 0.0 only when the
    mechanism's parameters put every output's preimage inside the range covered by the ε argument.
    ``epsilon`` is the nearest double to ``epsilon_exact``, the exact rational the mechanism was
    built with (docs/mechanism.md, "Exact ε"), when it is known; ``str()`` shows the exact one.
    """

    epsilon: float
    delta: float
    relation: str
    epsilon_exact: Fraction | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        eps = f"{self.epsilon:g}" if self.epsilon_exact is None else _short(self.epsilon_exact)
        kind = f"ε = {eps}" if self.delta == 0 else f"(ε = {eps}, δ <= {self.delta:.3g})"
        pure = "pure " if self.delta == 0 else ""
        return f"{pure}{kind} differential privacy for inputs with {self.relation}"


def _short(x: Fraction) -> str:
    """The exact decimal or p/q if short, else the nearest double to 6 digits (marked ≈)."""
    text = format_rational(x)
    return text if len(text) <= 24 else f"≈{float(x):.6g}"
