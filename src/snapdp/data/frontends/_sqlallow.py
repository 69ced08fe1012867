"""The SQL grammar as an allow-list of sqlglot node types (docs/sql.md, "Grammar").

Every node of a parsed query must be of a type listed here, and may carry only the arguments the
SQL front end reads; anything else (``TABLESAMPLE``, ``QUALIFY``, ``PIVOT``, ``INTO``,
``FOR UPDATE``, ``GROUP BY ALL``, a qualified table name, a new clause of a later sqlglot, …) is
refused rather than ignored, so a release is always what its SQL says. :func:`first_refused`
finds the first such node and the SQL word that names it; the front end locates it and refuses.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ALLOWED", "CLAUSES", "first_refused"]

_BINARY = frozenset({"this", "expression"})
_ONE = frozenset({"this"})

#: node type → the arguments the front end reads (an argument that is None, False or empty is
#: absent). Aggregates, WHERE/HAVING operators, literals, names and the clauses of one SELECT.
ALLOWED: dict[str, frozenset[str]] = {
    "Select": frozenset({"expressions", "from_", "from", "where", "group", "having", "order"}),
    "From": _ONE,
    "Table": frozenset({"this", "alias"}),
    "TableAlias": _ONE,
    "Where": _ONE,
    "Group": frozenset({"expressions"}),
    "Having": _ONE,
    "Order": frozenset({"expressions"}),
    "Ordered": frozenset({"this", "desc", "nulls_first"}),
    "Alias": frozenset({"this", "alias"}),
    "Column": frozenset({"this", "table"}),
    "Identifier": frozenset({"this", "quoted"}),
    "Star": frozenset(),
    "Literal": frozenset({"this", "is_string"}),
    "Boolean": _ONE,
    "Null": frozenset(),
    "Neg": _ONE,
    "Paren": _ONE,
    "Cast": frozenset({"this", "to"}),
    "DataType": frozenset({"this", "nested"}),
    "Not": _ONE,
    "And": _BINARY,
    "Or": _BINARY,
    "EQ": _BINARY,
    "NEQ": _BINARY,
    "LT": _BINARY,
    "LTE": _BINARY,
    "GT": _BINARY,
    "GTE": _BINARY,
    "Is": _BINARY,
    "Between": frozenset({"this", "low", "high"}),
    "In": frozenset({"this", "expressions"}),
    "Count": frozenset({"this", "big_int"}),
    "Sum": _ONE,
    "Avg": _ONE,
    "VariancePop": _ONE,
    "Variance": _ONE,
    "VarianceSamp": _ONE,
    "StddevPop": _ONE,
    "Stddev": _ONE,
    "StddevSamp": _ONE,
    "Median": _ONE,
    "PercentileCont": _BINARY,
    "WithinGroup": _BINARY,
    "Anonymous": frozenset({"this", "expressions"}),
}

#: The clause nodes, checked before the compiler reads the expressions in them (so that
#: ``GROUP BY ALL`` is named as such, not as a column missing from GROUP BY).
CLAUSES = frozenset(
    {"Select", "From", "Table", "TableAlias", "Where", "Group", "Having", "Order", "Ordered"}
)

#: How a refused node type or argument is written in SQL (else its sqlglot name in capitals).
WORDS: dict[str, str] = {
    "TableSample": "TABLESAMPLE",
    "sample": "TABLESAMPLE",
    "Qualify": "QUALIFY",
    "qualify": "QUALIFY",
    "Pivot": "PIVOT",
    "pivots": "PIVOT",
    "Into": "INTO",
    "into": "INTO",
    "Lock": "FOR UPDATE",
    "locks": "FOR UPDATE",
    "all": "GROUP BY ALL",
    "db": "a qualified table name",
    "catalog": "a qualified table name",
    "windows": "WINDOW",
    "laterals": "LATERAL",
    "prewhere": "PREWHERE",
    "kind": "SELECT AS",
    "hint": "a hint",
    "Filter": "FILTER",
    "IgnoreNulls": "IGNORE NULLS",
    "RespectNulls": "RESPECT NULLS",
    "Kwarg": "a named argument (=>)",
    "PropertyEQ": "a named argument (:=)",
    "Placeholder": "a parameter (?)",
    "Parameter": "a parameter",
}

#: The keywords that locate a refused part that has no position of its own.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "TABLESAMPLE": ("TABLESAMPLE", "USING", "SAMPLE"),
    "QUALIFY": ("QUALIFY",),
    "PIVOT": ("PIVOT", "UNPIVOT"),
    "INTO": ("INTO",),
    "FOR UPDATE": ("FOR",),
    "GROUP BY ALL": ("ALL",),
    "WINDOW": ("WINDOW",),
    "LATERAL": ("LATERAL",),
    "PREWHERE": ("PREWHERE",),
    "FILTER": ("FILTER",),
    "IGNORE NULLS": ("IGNORE",),
    "RESPECT NULLS": ("RESPECT",),
}


def _present(value: object) -> bool:
    return value is not None and value is not False and value != [] and value != ""


def first_refused(tree: Any, kinds: frozenset[str] | None = None) -> tuple[Any, str] | None:
    """The first node (breadth first) outside :data:`ALLOWED`, or carrying an argument the front
    end does not read, with the SQL word that names it (the argument's value stands for the node
    when it is a node itself: its position is the better caret); None when all are accepted.
    ``kinds``: look only at nodes of these types."""
    for node in tree.walk():
        kind = type(node).__name__
        if kinds is not None and kind not in kinds:
            continue
        allowed = ALLOWED.get(kind)
        if allowed is None:
            return node, word_for(kind, node)
        for key, value in node.args.items():
            if key not in allowed and _present(value):
                inner = value[0] if isinstance(value, list) else value
                spot = inner if hasattr(inner, "args") else node
                return spot, WORDS.get(key) or key.replace("_", " ").upper()
    return None


def word_for(kind: str, node: Any) -> str:
    """The SQL word of a refused node type: the table above, a function's name, else its key."""
    if kind in WORDS:
        return WORDS[kind]
    if kind == "Anonymous":
        return f"function {str(node.this).upper()}"
    sql_name = getattr(node, "sql_name", None)
    if callable(sql_name) and hasattr(node, "is_func") and node.is_func:
        return f"function {sql_name()}"
    return str(getattr(node, "key", kind)).upper()
