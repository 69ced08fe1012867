"""The release report's charts are SVG text written directly (docs/plans.md, "Outputs"): no
matplotlib import, one chart per result, bars, points and error bars where the values are."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from snapdp.data.output.svg_chart import bar_chart

SCRIPT = """
import sys
from fractions import Fraction
import numpy as np
from snapdp.data import Plan, PlannedQuery, Query, Column, Schema
from snapdp.data.output.report import render_report
from snapdp.data.engines.factory import default_engine
schema = Schema((Column("age", "integer", lower=Fraction(0), upper=Fraction(100)),
                 Column("sex", "integer", keys=(0, 1))))
plan = Plan(schema, [PlannedQuery(Query("count", by=("sex",)), epsilon=Fraction(1)),
                     PlannedQuery(Query("quantiles", "age", quantiles=(Fraction(1, 2),)),
                                  epsilon=Fraction(1), group_size=10)], source=sys.argv[1])
done = plan.run(rng=np.random.default_rng(0))
page = render_report(done.results, done.preview, schema)
assert page.count("<svg") == 2, page
print("matplotlib" in sys.modules)
"""


def test_a_report_draws_its_charts_without_matplotlib(tmp_path: Path) -> None:
    source = tmp_path / "d.csv"
    source.write_text("age,sex\n" + "".join(f"{20 + i % 50},{i % 2}\n" for i in range(60)))
    src = str(Path(__file__).resolve().parents[3] / "src")
    env = {"PYTHONPATH": src, "PATH": "", "SNAPDP_CACHE_DIR": "off"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(source)], capture_output=True, text=True, check=True,
        env=env,
    )  # fmt: skip
    assert out.stdout.strip() == "False"


def test_bars_and_error_bars_sit_at_their_values() -> None:
    svg = bar_chart(["a", "b<"], [10.0, -5.0], [2.0, 1.0], [2.0, 1.0], "count (± at 0.95)")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<rect") == 2 and svg.count("<path") == 2
    assert "b&lt;" in svg and "count (± at 0.95)" in svg
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', svg)]
    assert abs(widths[0] - 2 * widths[1]) <= 0.2  # |10| and |−5| from one zero line (0.1 px)
    points = bar_chart(["q=0.5"], [40.0], [3.0], [3.0], "quantiles", points=True, limits=(0, 100))
    assert points.count("<circle") == 1 and "<rect" not in points
