"""SQL HAVING and ORDER BY: terms over the released values (docs/sql.md).

:class:`SqlPostTerms` reads HAVING as a predicate over the SELECT's output names and ORDER BY as a
list of (name, descending): both are post-processing of released values, so they may name only
the selected aggregates, their aliases and the GROUP BY columns.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from snapdp.data.frontends._sqlterms import COMPARE, FLIP, SqlTerms, canonical, describe
from snapdp.data.model.predicate import And, Compare, InList, Not, Or, Predicate
from snapdp.data.output.postprocess import Output

__all__ = ["SqlPostTerms"]


class SqlPostTerms(SqlTerms):
    """HAVING and ORDER BY over the outputs of a SELECT."""

    def _ref(
        self, node: Any, outputs: list[Output], names: dict[str, int], groups: list[str],
        clause: str,
    ) -> tuple[str, str | None]:  # fmt: skip
        """The output a HAVING/ORDER BY term names, and its grouping column (None: an
        aggregate)."""
        from sqlglot import exp

        if isinstance(node, exp.Column) and not node.args.get("table"):
            name = str(node.name)
            for o in outputs:
                if o.name == name:
                    return (name, o.column)
            if name in groups:
                return (name, name)
        key = canonical(node)
        if key in names:
            return (f"#{names[key]}", None)
        raise self.at(
            node,
            f"{clause} may use only the selected aggregates, their aliases and the GROUP BY "
            "columns (anything else would need its own release)",
        )

    def _post(
        self, node: Any, outputs: list[Output], names: dict[str, int], groups: list[str],
        clause: str,
    ) -> Predicate:  # fmt: skip
        """HAVING as a predicate over output names (post-processing of released values)."""
        from sqlglot import exp

        def again(n: Any) -> Predicate:
            return self._post(n, outputs, names, groups, clause)

        if isinstance(node, exp.Paren):
            return again(node.this)
        if isinstance(node, exp.And):
            return And((again(node.this), again(node.expression)))
        if isinstance(node, exp.Or):
            return Or((again(node.this), again(node.expression)))
        if isinstance(node, exp.Not):
            return Not(again(node.this))
        kind = type(node).__name__
        if not (isinstance(node, (exp.Between, exp.In)) or kind in COMPARE):
            raise self.at(node, f"{describe(node)} is not accepted in {clause}")
        left, right = node.this, node.args.get("expression")
        op = COMPARE.get(kind, "=")
        if kind in COMPARE and isinstance(left, (exp.Literal, exp.Neg)):
            left, right, op = right, left, FLIP[op]
        ref, column = self._ref(left, outputs, names, groups, clause)
        if column is not None:  # a grouping column: its keys are typed values
            if self.schema.column(column).keys is None:
                raise self.at(left, f"{clause} on a binned column is refused (its groups are bins)")
            return self.predicate(_renamed(node, ref, column))
        if isinstance(node, exp.Between):
            lo, hi = node.args["low"], node.args["high"]
            return And((Compare(ref, ">=", self._number_literal(lo)),
                        Compare(ref, "<=", self._number_literal(hi))))  # fmt: skip
        if isinstance(node, exp.In):
            return InList(ref, tuple(self._number_literal(v) for v in node.expressions))
        return Compare(ref, op, self._number_literal(right))  # type: ignore[arg-type]

    def _number_literal(self, node: Any) -> Fraction:
        """A released value is a number: it is compared with numbers only."""
        value = self.literal(node)
        if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
            raise self.at(node, "a released value is compared with a number")
        return Fraction(value)

    def _order(self, tree: Any, outputs: list[Output], names: dict[str, int],
               groups: list[str]) -> tuple[tuple[str, bool], ...]:  # fmt: skip
        from sqlglot import exp

        order = tree.args.get("order")
        if order is None:
            return ()
        out = []
        for item in order.expressions:
            node = item.this if isinstance(item, exp.Ordered) else item
            if isinstance(node, exp.Literal) and not node.is_string:
                position = self.exact(node)
                index = int(position) - 1 if position.denominator == 1 else -1
                if not 0 <= index < len(outputs):
                    raise self.at(node, "ORDER BY position is not a SELECT item")
                name = outputs[index].name
            else:
                name = self._ref(node, outputs, names, groups, "ORDER BY")[0]
            out.append((name, bool(item.args.get("desc"))))
        return tuple(out)


def _renamed(node: Any, alias: str, column: str) -> Any:
    """A copy of ``node`` with the grouping ``column`` where its ``alias`` was written (positions
    of the other parts kept)."""
    from sqlglot import exp

    copy = node.copy()
    for ref in list(copy.find_all(exp.Column)):
        if ref.name == alias and not ref.args.get("table"):
            new = exp.column(column)
            new.meta.update(ref.meta)
            ref.replace(new)
    return copy
