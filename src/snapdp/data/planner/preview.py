"""The planner's answer, before anything is spent (docs/plans.md): each query's
:class:`Allocation` (its ε and the ± it will have), the whole :class:`PlanPreview`, and the
usefulness flags a caller shows beside it. Built by
:func:`snapdp.data.planner.epsilons.plan_epsilons`; read by ``snapdp plan``, the page, the API and
the release's report."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from msgspec import Struct

from snapdp.data.model.schema import Schema
from snapdp.data.model.workload import PlannedQuery, alpha_of
from snapdp.data.planner.search import eps_text as _eps_text
from snapdp.data.planner.search import fraction_text as _text
from snapdp.data.planner.search import num as _num
from snapdp.data.planner.two_phase import TwoPhase

__all__ = ["AccuracyAt", "Allocation", "PlanPreview", "usefulness_flags"]

#: The accuracy a planned query would have at an exact ε, at its confidence (and, for ratio
#: statistics, its reference group size); must be non-increasing in ε. Never reads data.
AccuracyAt = Callable[[PlannedQuery, Fraction], float]


def usefulness_flags(schema: Schema, allocation: Allocation) -> list[str]:
    """Warnings about a planned query's usefulness (``snapdp.usefulness.flags`` of each of its
    mechanisms at its planned ε), from public parameters only; one plain sentence each."""
    from snapdp import usefulness
    from snapdp.data import statistics
    from snapdp.mechanism import SnappingMechanism

    pq = allocation.planned
    compiled = statistics.compile_query(pq.query, schema, allocation.epsilon)
    alpha = alpha_of(pq.confidence)
    out: list[str] = []
    for noise in statistics.calibrate(compiled):
        if noise.part.source == "exponential":  # no snapping: its flags do not apply
            continue
        mech = SnappingMechanism(
            noise.epsilon, noise.sensitivity, noise.part.lower, noise.part.upper
        )
        for flag in usefulness.flags(mech, alpha):
            text = f"{noise.part.name}: {flag.message}"
            if text not in out:
                out.append(text)
    return out


# -- the planner ------------------------------------------------------------------------------
class Allocation(Struct, frozen=True):
    """One query's planned ε and the ± it will have (at its confidence; for ratio statistics,
    for its declared ``group_size``). ``accuracy`` is None when the ± depends on a private size
    and no ``group_size`` is declared (``text`` then says how). A two-phase query
    (``two_phase``) may spend less than ``epsilon``, its cap."""

    planned: PlannedQuery
    epsilon: Fraction
    accuracy: float | None
    text: str = ""
    two_phase: TwoPhase | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        pq = self.planned
        out: dict[str, Any] = {
            "query": pq.query.label,
            "statistic": pq.query.statistic,
            "how": pq.how,
            "epsilon": _text(self.epsilon),
            "accuracy": self.accuracy,
            "confidence": pq.confidence,
        }
        if self.accuracy is None:
            out["accuracy_text"] = self.text
        if pq.accuracy is not None:
            out["target"] = float(pq.accuracy)
        if pq.weight is not None:
            out["weight"] = _text(pq.weight)
        if pq.group_size is not None:
            out["group_size"] = pq.group_size
        tp = self.two_phase
        if tp is not None:
            out["two_phase"] = {
                "cap": _text(tp.cap),
                "phase1_epsilon": _text(tp.phase1),
                "target_met_from_rows": tp.floor,
                "example_rows": tp.rows,
                "example_epsilon": None if tp.example is None else _text(tp.example),
            }
        return out

    def epsilon_text(self) -> str:
        """The ε column: exact, or for a two-phase query "≤ X (cap); ε for groups of ≥ N rows:
        Y"."""
        tp = self.two_phase
        if tp is None:
            return _eps_text(self.epsilon)
        text = f"≤ {_eps_text(tp.cap)} (cap)"
        if tp.rows is not None and tp.example is not None:
            text += f"; ε for groups of ≥ {tp.rows:,} rows: {_eps_text(tp.example)}"
        return text

    def accuracy_text(self) -> str:
        """The ± column."""
        pq = self.planned
        if self.two_phase is not None:
            floor = self.two_phase.floor
            where = "never" if floor is None else f"for groups of ≥ {floor:,} rows"
            return f"±{_num(float(pq.accuracy or 0))} {where} ({pq.confidence:g})"
        if self.accuracy is None:
            return f"{self.text} ({pq.confidence:g})"
        return f"±{_num(self.accuracy)} ({pq.confidence:g})"


class PlanPreview(Struct, frozen=True):
    """The planner's answer, before anything is spent: per query its ε and ±, the total (at
    most, with two-phase queries), and the assumptions the ± rest on."""

    allocations: tuple[Allocation, ...]
    total: Fraction
    total_epsilon: Fraction | None
    assumptions: tuple[str, ...] = ()
    delta: Fraction | None = None  # groups from the data: the δ of their selections

    @property
    def epsilons(self) -> list[Fraction]:
        """The per-query exact ε (a two-phase query's cap), in plan order."""
        return [a.epsilon for a in self.allocations]

    @property
    def at_most(self) -> bool:
        """Whether the total is a cap (some query is two-phase)."""
        return any(a.two_phase is not None for a in self.allocations)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (ε as exact decimal or p/q strings)."""
        return {
            "queries": [a.as_dict() for a in self.allocations],
            "total_epsilon_used": _text(self.total),
            "total_is_cap": self.at_most,
            "total_epsilon": None if self.total_epsilon is None else _text(self.total_epsilon),
            "assumptions": list(self.assumptions),
            **({} if self.delta is None else {"delta": _text(self.delta)}),
        }

    def describe(self) -> str:
        """A plain-text table."""
        rows = [("query", "how", "epsilon", "± (confidence)")]
        for a in self.allocations:
            pq = a.planned
            how = {
                "epsilon": "fixed ε",
                "accuracy": f"target ±{_num(float(pq.accuracy or 0))}",
                "weight": f"weight {_text(pq.weight or Fraction(0))}",
            }[pq.how]
            if a.two_phase is not None:
                how += ", two-phase"
            rows.append((pq.query.label, how, a.epsilon_text(), a.accuracy_text()))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        total = f"total ε: {'at most ' if self.at_most else ''}{_eps_text(self.total)}"
        if self.total_epsilon is not None:
            total += f" of {_eps_text(self.total_epsilon)}"
        lines += ["", total]
        if self.delta is not None:  # docs/sql.md, "Groups from the data"
            lines.append(
                f"(ε, δ)-DP: ε as above, δ = {_text(self.delta)} for the groups chosen from the "
                "data (plus the snapping mechanism's own δ)"
            )
        lines += [f"assumes: {a}" for a in self.assumptions]
        return "\n".join(lines)
