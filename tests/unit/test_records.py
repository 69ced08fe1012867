"""The package's records are msgspec Structs (docs/architecture.md, "Records"): what they keep
of the dataclasses they were, and the helpers that replace ``dataclasses.asdict``/``fields``."""

from __future__ import annotations

import ast
import pickle
from fractions import Fraction
from pathlib import Path

import pytest
from msgspec.structs import replace

from snapdp._records import as_dict, field_defaults
from snapdp.data.model.query import Query
from snapdp.data.model.schema import Column, ContributionBounds, Schema
from snapdp.data.model.workload import PlannedQuery
from snapdp.data.owner.check import CheckReport, ColumnReport
from snapdp.errors import ParameterError

SRC = Path(__file__).resolve().parents[2] / "src" / "snapdp"

#: The records that stay dataclasses (docs/architecture.md, "Records"): their module's source
#: keys the certificates, or a field is left out of equality or repr.
DATACLASSES = {
    ("parameters.py", "SnappingParameters"),
    ("distribution.py", "ExactDistribution"),
    ("shift.py", "ShiftLoss"),
    ("shift.py", "ShiftCertificate"),
    ("guarantee.py", "PrivacyGuarantee"),
    ("data/statistics/selection.py", "KeySelection"),
    ("data/planner/plan.py", "Plan"),
}


def _decorated_dataclasses() -> set[tuple[str, str]]:
    found = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                name = (
                    target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                )
                if name == "dataclass":
                    found.add((path.relative_to(SRC).as_posix(), node.name))
    return found


def test_only_the_documented_records_are_dataclasses() -> None:
    # a new dataclass costs ~1 ms of every fresh process that imports it (Python 3.11)
    assert _decorated_dataclasses() == DATACLASSES


def _schema() -> Schema:
    return Schema(
        columns=(
            Column("age", "integer", lower=0, upper=100),
            Column("sex", "integer", keys=(0, 1)),
        ),
    )


def test_records_are_frozen_and_compare_by_fields() -> None:
    a, b = _schema(), _schema()
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != replace(a, columns=a.columns[:1])
    with pytest.raises(AttributeError):
        a.columns = ()  # type: ignore[misc]
    col = a.columns[0]
    with pytest.raises(AttributeError):
        col.lower = Fraction(1)  # type: ignore[misc]
    assert repr(col).startswith("Column(name='age', ")


def test_replace_checks_again() -> None:
    col = Column("age", "integer", lower=0, upper=100)
    # __post_init__ runs on replace, as with dataclasses.replace: a bad bound is refused
    with pytest.raises(ParameterError):
        replace(col, lower=200)
    # and normalises as construction does (exact bounds)
    assert replace(col, upper=50.5).upper == Fraction(101, 2)


def test_records_pickle_as_equal_records() -> None:
    # the Spark engine ships plans and queries to its executors by pickling
    schema = _schema()
    pq = PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1, 3))
    for record in (schema, pq, schema.columns[1]):
        assert pickle.loads(pickle.dumps(record)) == record


def test_as_dict_is_nested_and_a_copy() -> None:
    col = Column("sex", "integer", keys=(0, 1))
    got = as_dict(Schema(columns=(col,)))
    assert isinstance(got["columns"], tuple) and got["columns"][0] == as_dict(col)
    assert got["columns"][0]["keys"] == col.keys and got["columns"][0]["name"] == "sex"
    assert got["bounds"] == as_dict(ContributionBounds())
    assert isinstance(got["bounds"], dict) and isinstance(got["csv"], dict)
    report = CheckReport("x.csv", 3, None, 10, [ColumnReport("sex", "integer", "drop")])
    plain = as_dict(report)
    assert plain["columns"] == [as_dict(report.columns[0])]
    plain["columns"][0]["examples"].append("changed")
    plain["columns"].append("changed")
    assert report.columns[0].examples == [] and len(report.columns) == 1


def test_field_defaults() -> None:
    defaults = dict(field_defaults(_schema()))
    assert list(defaults) == list(Schema.__struct_fields__)
    assert defaults["max_rows"] is not None and defaults["max_rows"]() == Schema().max_rows
    make = defaults["bounds"]
    assert make is not None and make() == ContributionBounds() and make() is not make()
    assert dict(field_defaults(ColumnReport("a", "text", "drop")))["name"] is None  # required
