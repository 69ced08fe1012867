"""The cases of the standalone-cluster test, shared by the test and its driver process."""

from __future__ import annotations

from fractions import Fraction

from snapdp.data.engines.base import AggregatePlan, ValueColumn
from snapdp.data.model.schema import Column, ContributionBounds, NullRule

KEY = "00112233445566778899aabbccddeeff"
PARAMS = (Fraction(10), Fraction(1), Fraction(-1000), Fraction(5000))
# Every test JVM (local session, master, worker, driver, executors): C1 only and the serial
# collector. Half of a test JVM's CPU went to the C2 compiler threads, for code that runs a few
# hundred times (docs/performance.md, "The test suite"); plans and results are Spark's either way.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def csv_text(n: int = 600) -> str:
    """A table with awkward cells: 2.5 and empty keys, text and NaN values, null units."""
    lines = ["k,v,n,u"]
    for i in range(n):
        key = ("0", "1", "2", "2.5", "", " 1 ")[i % 6]
        value = ("10", "x", "1e3", "NaN", "-3.25", "7", "")[i % 7]
        unit = "" if i % 11 == 0 else f"p{i % 97}"
        lines.append(f"{key},{value},{i % 40},{unit}")
    return "\n".join(lines) + "\n"


def plans() -> list[tuple[str, AggregatePlan]]:
    k = Column("k", "integer", keys=(0, 1, 2), nulls=NullRule("impute", 0))
    n = Column("n", "integer", bins=(0, 10, 20, 40))
    v = ValueColumn(Column("v", "decimal", lower=-5, upper=25), 2, -500, 2500, None, squares=True)
    u = Column("u", "text")
    return [
        ("grouped", AggregatePlan((k, n), (v,))),
        (
            "k, L0, Linf",
            AggregatePlan((k, n), (v,), u, "own", ContributionBounds(3, 2, 1), hash_key=KEY),
        ),
    ]
