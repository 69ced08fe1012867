"""The privacy statement a mechanism makes, in words and numbers (DESIGN §2.8)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PrivacyGuarantee"]


@dataclass(frozen=True)
class PrivacyGuarantee:
    """(ε, δ)-differential privacy for a stated neighbouring relation.

    ``delta`` is an upper bound, rounded up, never silently 0: it is exactly 0.0 only when the
    mechanism's parameters put every output's preimage inside the range covered by the ε argument.
    """

    epsilon: float
    delta: float
    relation: str

    def __str__(self) -> str:
        kind = (
            f"ε = {self.epsilon:g}"
            if self.delta == 0
            else f"(ε = {self.epsilon:g}, δ <= {self.delta:.3g})"
        )
        pure = "pure " if self.delta == 0 else ""
        return f"{pure}{kind} differential privacy for inputs with {self.relation}"
