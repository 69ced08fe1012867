"""Tumult Analytics' releases of the peer workload (docs/utility.md, "Against peers").

Run by benchmarks/utility_peers.py with the interpreter of a separate virtual environment that
has ``tmlt.analytics`` (never a snapdp dependency):

    /path/to/venv/bin/python benchmarks/tumult_peer.py PUMS.csv RUNS EPSILON [STATISTIC ...]

Prints one JSON object: per statistic, a list of runs, each the released values (by sex 0, 1 for
grouped ones). Pure DP, one row per person (AddOneRow), the same bounds as snapdp's workload.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from fractions import Fraction

AGE, INCOME = (0, 100), (0, 200_000)


def main() -> None:
    from pyspark.sql import SparkSession
    from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers need this venv's tmlt
    path, runs, eps = sys.argv[1], int(sys.argv[2]), float(Fraction(sys.argv[3]))
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = spark.config("spark.ui.showConsoleProgress", "false")
    spark = spark.config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="tumult-"))
    spark = spark.config("spark.sql.shuffle.partitions", "1").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.csv(path, header=True, inferSchema=True).select("age", "sex", "income")
    sexes = KeySet.from_dict({"sex": [0, 1]})
    queries = {
        "count": lambda: QueryBuilder("d").count(),
        "count by sex": lambda: QueryBuilder("d").groupby(sexes).count(),
        "sum(income)": lambda: QueryBuilder("d").sum("income", *INCOME),
        "mean(income) by sex": lambda: QueryBuilder("d").groupby(sexes).average("income", *INCOME),
        "mean(age)": lambda: QueryBuilder("d").average("age", *AGE),
        "variance(income)": lambda: QueryBuilder("d").variance("income", *INCOME),
        "std(age)": lambda: QueryBuilder("d").stdev("age", *AGE),
    }
    if len(sys.argv) > 4:  # only these statistics (Spark is slow on a busy machine)
        queries = {k: v for k, v in queries.items() if k in sys.argv[4:]}
    out: dict[str, list[list[float]]] = {k: [] for k in queries}
    for _ in range(runs):
        session = Session.from_dataframe(
            PureDPBudget(eps * len(queries)), "d", df, protected_change=AddOneRow()
        )
        for name, build in queries.items():
            rows = session.evaluate(build(), PureDPBudget(eps)).toPandas()
            if "sex" in rows.columns:
                rows = rows.sort_values("sex")
            out[name].append([float(v) for v in rows.iloc[:, -1]])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
