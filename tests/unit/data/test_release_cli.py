"""``snapdp release`` over tables: the README one-liners, the declaration flags, and the
command-line items of the budget/CLI issue (docs/data.md, "The command line")."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.unit.data._engines import local_engine
from tests.unit.data.engines._csv_cases import AWKWARD as CSV_AWKWARD

import snapdp.cli._print as cli_print
import snapdp.data.engines.factory as engine_factory
from snapdp.cli import main
from snapdp.cli._data import schema_from_options
from snapdp.cli._print import plain_number
from snapdp.data import read_ledger
from snapdp.data.model.schema import Schema
from snapdp.errors import ParameterError


@pytest.fixture(autouse=True)
def _engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the CLI on the local engine (DuckDB once installed, else the oracle)."""
    local_engine([])  # skips when there is no engine at all

    def make(name: str, source: object, schema: Schema, **options: Any) -> Any:
        return local_engine(source, schema.csv)

    monkeypatch.setattr(engine_factory, "make_engine", make)


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def _csv(tmp: Path, text: str, name: str = "t.csv") -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_readme_first_command_on_the_demo_table() -> None:
    code, out = _run("release", "--epsilon", "1", "--count", "--mean", "age:0:100",
                     "--by", "region", "--json")  # fmt: skip
    assert code == 0, out
    count, mean = json.loads(out)["results"]
    assert count["keys"] == {"region": ["north", "south", "east", "west", "central"]}
    assert sum(count["value"]) == pytest.approx(100_000, abs=200)
    assert all(0 <= v <= 100 for v in mean["value"])
    assert count["epsilon"] == mean["epsilon"] == "0.5"


def test_a_statistic_is_required_and_nothing_is_spent(tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    code, out = _run("release", "--epsilon", "1", "--ledger", ledger, "--total-epsilon", "2")
    assert code == 2 and "name at least one statistic" in out
    assert not Path(ledger).exists() or read_ledger(ledger).entries == []


def test_dry_run_draws_nothing_reads_nothing_spends_nothing(tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    missing = str(tmp_path / "absent.csv")  # never opened by a dry run
    code, out = _run("release", missing, "--epsilon", "1", "--count", "--mean", "age:0:100",
                     "--keys", "sex=0,1", "--dry-run", "--ledger", ledger)  # fmt: skip
    assert code == 0, out
    assert "Dry run" in out and "count by sex" in out and "/ñ" in out
    assert not Path(ledger).exists()


def test_required_options_are_marked_in_help() -> None:
    code, out = _run("release", "--help")
    assert code == 0 and "[required]" in out


def test_errors_name_the_flag(tmp_path: Path) -> None:
    data = _csv(tmp_path, "pid,x\n1,2\n")
    code, out = _run("release", data, "--epsilon", "1", "--count", "--max-rows-per-unit", "2")
    assert code == 2 and "--privacy-unit" in out and "privacy_unit" not in out
    code, out = _run("release", data, "--epsilon", "1", "--count", "--rows", "0")
    assert code == 2 and "--rows" in out
    code, out = _run("release", data, "--epsilon", "1", "--mean", "x:0:10", "--max-rows", "-3")
    assert code == 2 and "--max-rows" in out


def test_keys_with_commas_by_repeated_key(tmp_path: Path) -> None:
    data = _csv(tmp_path, 'city,v\n"Paris, FR",1\n"Paris, FR",2\n"Rome, IT",3\n')
    code, out = _run("release", data, "--epsilon", "50", "--count", "--key", "city=Paris, FR",
                     "--key", "city=Rome, IT", "--json")  # fmt: skip
    assert code == 0, out
    (count,) = json.loads(out)["results"]
    assert count["keys"] == {"city": ["Paris, FR", "Rome, IT"]}
    assert count["value"][0] == pytest.approx(2, abs=1)


def test_keys_are_typed_by_their_literals_never_by_the_data() -> None:
    schema = schema_from_options(keys=["k=0,1,2"], bins=[], values=[])
    assert schema.column("k").type == "integer" and schema.column("k").keys == (0, 1, 2)
    schema = schema_from_options(keys=["k=0,1,x"])
    assert schema.column("k").type == "text" and schema.column("k").keys == ("0", "1", "x")
    schema = schema_from_options(columns=["k:text"], keys=["k=0,1"])
    assert schema.column("k").keys == ("0", "1")
    schema = schema_from_options(columns=["age:integer:0:120"], values=["age"])
    assert schema.column("age").upper == 120
    with pytest.raises(ParameterError, match="--column"):
        schema_from_options(columns=["age:number"])


def test_encoding_delimiter_and_no_header(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("1;café\n2;thé\n2;café\n".encode("latin-1"))
    code, out = _run("release", str(path), "--epsilon", "50", "--count", "--no-header",
                     "--csv-columns", "column0,column1", "--delimiter", ";",
                     "--encoding", "latin-1", "--keys", "column1=café,thé",
                     "--json")  # fmt: skip
    if code != 0 and "column1" in out:
        pytest.skip("the engine names header-less columns differently")
    assert code == 0, out
    (count,) = json.loads(out)["results"]
    assert count["keys"] == {"column1": ["café", "thé"]}
    assert count["value"][0] == pytest.approx(2, abs=1)


def test_plain_numbers_with_thousands_separators() -> None:
    assert plain_number(1234567.0) == "1,234,567"
    assert plain_number(1e20) == "100,000,000,000,000,000,000"
    assert plain_number(0.000123456789) == "0.000123457"
    assert plain_number(41.69034) == "41.6903"
    assert "e" not in plain_number(3.5e-7)


def test_table_output_prints_plain_numbers_and_typed_keys(tmp_path: Path) -> None:
    code, out = _run("release", "--epsilon", "1", "--count", "--by", "sex")
    assert code == 0, out
    assert "e+" not in out and "," in out  # 50,000-ish counts, thousands separators
    assert "remaining ε = 0" in out


def test_readme_pums_command_with_ledger_and_budget(pums: Path, tmp_path: Path) -> None:
    ledger = str(tmp_path / "b.sqlite")
    args = ["release", str(pums / "PUMS_dup.csv"), "--epsilon", "0.5", "--count",
            "--mean", "income:0:500000", "--keys", "sex=0,1", "--privacy-unit", "pid",
            "--max-rows-per-unit", "2", "--ledger", ledger, "--total-epsilon", "2",
            "--json"]  # fmt: skip
    code, out = _run(*args)
    assert code == 0, out
    doc = json.loads(out)
    assert doc["epsilon_spent"] == "0.5"
    count, mean = doc["results"]
    assert all(0 <= v <= 500_000 for v in mean["value"])
    assert count["keys"] == {"sex": [0, 1]} and count["query"] == "count by sex"
    assert any("at most 2 row(s)" in n for n in count["notes"])
    code, out = _run("budget", "--ledger", ledger, "--json")
    assert code == 0, out
    (entry,) = read_ledger(ledger).entries
    assert entry.what == "count by sex; mean(income) by sex"


def test_var_std_cross_tab_and_bins_on_the_command_line(pums: Path) -> None:
    code, out = _run("release", str(pums / "PUMS.csv"), "--epsilon", "3", "--var",
                     "age:0:100", "--std", "income:0:500000", "--count", "--by", "sex,educ",
                     "--keys", "sex=0,1", "--bins", "educ=1,9,13,17", "--json")  # fmt: skip
    assert code == 0, out
    count, var, std = (json.loads(out)["results"][i] for i in (2, 0, 1))
    assert count["keys"]["sex"] == [0, 0, 0, 1, 1, 1]
    assert count["keys"]["educ"] == ["[1, 9)", "[9, 13)", "[13, 17)"] * 2
    assert all(0 <= v <= 2500 for v in var["value"])
    assert all(0 <= v <= 250_000 for v in std["value"])


class _Interrupted:
    """An engine interrupted (Ctrl-C) in the middle of its scan."""

    def __init__(self, source: object, csv_options: object = None) -> None:
        self.read = 0

    def column_names(self) -> list[str]:
        return ["x"]

    def describe(self) -> str:
        return "t"

    def progress(self) -> int:
        return self.read

    def aggregate(self, plan: object) -> Any:
        self.read = 50
        raise KeyboardInterrupt


def test_ctrl_c_during_the_scan_spends_nothing_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        engine_factory, "make_engine", lambda name, source, schema, **kw: _Interrupted(source)
    )
    ledger = str(tmp_path / "b.sqlite")
    code, out = _run("release", str(tmp_path / "t.csv"), "--epsilon", "1", "--count",
                     "--ledger", ledger, "--total-epsilon", "2")  # fmt: skip
    assert code == 130 and "interrupted, nothing spent" in out and "Traceback" not in out
    assert not Path(ledger).exists() or read_ledger(ledger).entries == []


def test_progress_shows_a_percentage_and_time_never_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar shows the share read (out of 100) and the time left: no byte count, which with
    fixed-width rows is the row count (issue 21 item 4; docs/data.md)."""
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    class Done(_Interrupted):
        def aggregate(self, plan: Any) -> Any:
            self.read = 100
            return local_engine([{"x": "1"}]).aggregate(plan)

    monkeypatch.setattr(
        engine_factory, "make_engine", lambda name, source, schema, **kw: Done(source)
    )
    shown: list[tuple[Any, Any]] = []
    update = Progress.update

    def spy(self: Progress, task: Any, **kw: Any) -> None:
        shown.append((kw.get("completed"), kw.get("total")))
        update(self, task, **kw)

    monkeypatch.setattr(Progress, "update", spy)
    code, out = _run("release", str(tmp_path / "t.csv"), "--epsilon", "1", "--count")
    assert code == 0, out
    assert shown[0] == (0, 100) and shown[-1] == (100, 100)
    allowed = (BarColumn, TaskProgressColumn, TextColumn, TimeRemainingColumn)
    columns = cli_print.progress_columns()
    assert all(type(c) in allowed for c in columns)  # no Download/FileSize/MofN/Speed column
    texts = [c.text_format for c in columns if type(c) is TextColumn]
    assert all("{task." not in t for t in texts)  # the fixed labels, no task field


def test_a_refused_release_leaves_no_ledger_file(tmp_path: Path) -> None:
    data = _csv(tmp_path, "x,g\n1,a\n")
    ledger = tmp_path / "b.sqlite"
    code, out = _run("release", data, "--epsilon", "1", "--sum", "wealth:0:10",
                     "--ledger", str(ledger), "--total-epsilon", "2")  # fmt: skip
    assert code == 2 and "column 'wealth' is not in" in out
    assert not ledger.exists()


def test_quantiles_on_the_command_line(tmp_path: Path) -> None:
    pytest.importorskip("snapdp.data.statistics.math.quantile_tree")
    lines = "".join(f"{a % 20},{a % 2}\n" for a in range(100))
    data = _csv(tmp_path, "age,sex\n" + lines)
    code, out = _run("release", data, "--epsilon", "2", "--quantiles",
                     "age:0:20:0.25,0.5,0.75", "--column", "age:integer", "--keys", "sex=0,1",
                     "--json")  # fmt: skip
    assert code == 0, out
    (q,) = json.loads(out)["results"]
    assert q["keys"] == {"sex": [0, 0, 0, 1, 1, 1]} and q["quantile"] == [0.25, 0.5, 0.75] * 2
    assert all(0 <= v <= 20 for v in q["value"]) and q["value"][0] <= q["value"][2]
    code, out = _run("release", data, "--epsilon", "2", "--quantiles", "age:0:20:1.5")
    assert code == 2 and "--quantiles" in out


SENTINEL = "Qx8SENTINEL3z"
AWKWARD_LINES = [
    "",  # an empty line
    f"{SENTINEL},1,2.5",  # text in a numeric column, an undeclared numeric key
    "7,,",  # empty cells
    f'8,"{SENTINEL}',  # a malformed line (an unterminated quote)
    "9,1e3,NaN",
    f"10,{SENTINEL},-inf",
    "11,99999999999999999999999,1",
]


def _mask(text: str, *paths: str) -> str:
    import re

    for p in paths:
        text = text.replace(p, "DATA")
    text = re.sub(r"[-−]?[0-9][0-9,.]*", "#", text)  # the numbers (noisy, or their ±)
    text = re.sub("[\u2500-\u257f]+", " ", text)  # table rules: widths follow the numbers
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Callable[[Path], Any]], Any]:
    """``once(name, make)``: ``make(folder)`` the first time (inside a test, so on its engine),
    then what it returned. D is the same for every awkward line of the neighbour tests below,
    so its releases run once per module, not once per line."""
    root = tmp_path_factory.mktemp("d")
    kept: dict[str, Any] = {}

    def get(name: str, make: Callable[[Path], Any]) -> Any:
        if name not in kept:
            (root / name).mkdir()
            kept[name] = make(root / name)
        return kept[name]

    return get


@pytest.mark.parametrize("line", AWKWARD_LINES)
def test_cli_neighbours_same_messages_and_exit_status(tmp_path: Path, line: str, once: Any) -> None:
    base = "v,k,w\n" + "".join(f"{i % 50},{i % 3},{i % 7}\n" for i in range(300))
    args = ["--epsilon", "1", "--count", "--mean", "v:0:100", "--var", "w:0:10",
            "--keys", "k=0,1,2"]  # fmt: skip

    def on_d(folder: Path) -> tuple[int, str, str]:
        d = _csv(folder, base)
        code, out = _run("release", d, *args)
        return code, _mask(out, d), _run("release", d, *args, "--json")[1]

    code1, masked1, json1 = once("same_messages", on_d)
    (tmp_path / "b").mkdir()
    d2 = _csv(tmp_path / "b", base + line + "\n")
    code2, out2 = _run("release", d2, *args)
    assert code1 == code2 == 0, (masked1, out2)
    assert masked1 == _mask(out2, d2)
    assert SENTINEL not in out2
    code2, out2 = _run("release", d2, *args, "--json")
    a, b = json.loads(json1), json.loads(out2)
    for r1, r2 in zip(a["results"], b["results"], strict=True):
        assert (r1["keys"], r1["notes"], r1["epsilon"], r1["mechanisms"]) == (
            r2["keys"],
            r2["notes"],
            r2["epsilon"],
            r2["mechanisms"],
        )
    assert SENTINEL not in out2


@pytest.mark.parametrize("name", list(CSV_AWKWARD))
def test_cli_neighbours_one_awkward_line_in_the_middle(
    tmp_path: Path, name: str, once: Any
) -> None:
    """D and D' = D + one awkward line in the middle of the file (an unbalanced quote, a lone
    CR, bytes that are not UTF-8, a NUL, a very long line, …; docs/data.md, "CSV input"): the
    same exit status and the same messages, numbers aside, in text and in JSON."""
    lines = [f"{i % 3},{(i * 7) % 50 / 8},p{i % 11}".encode() for i in range(300)]
    args = ["--epsilon", "1", "--count", "--mean", "v:-2:5", "--keys", "g=0,1,2",
            "--privacy-unit", "u", "--max-rows-per-unit", "2"]  # fmt: skip

    def run(*extra: str) -> tuple[int, str]:  # wide, so that no path is wrapped
        result = CliRunner().invoke(main, ["release", *extra], env={"COLUMNS": "400"})
        assert result.exception is None or isinstance(result.exception, SystemExit)
        return result.exit_code, result.output

    def on_d(folder: Path) -> tuple[int, str, str]:
        d = folder / "t.csv"
        d.write_bytes(b"g,v,u\n" + b"\n".join(lines) + b"\n")
        code, out = run(str(d), *args)
        return code, _mask(out, str(d)), run(str(d), *args, "--json")[1]

    code1, masked1, json1 = once("middle", on_d)
    (tmp_path / "b").mkdir()
    d2 = tmp_path / "b" / "t.csv"
    d2.write_bytes(b"g,v,u\n" + b"\n".join([*lines[:150], CSV_AWKWARD[name], *lines[150:]]) + b"\n")
    code2, out2 = run(str(d2), *args)
    assert code1 == code2 == 0, (masked1, out2)
    assert masked1 == _mask(out2, str(d2))
    code2, out2 = run(str(d2), *args, "--json")
    a, b = json.loads(json1), json.loads(out2)
    for r1, r2 in zip(a["results"], b["results"], strict=True):
        assert (r1["keys"], r1["notes"], r1["epsilon"], r1["mechanisms"]) == (
            r2["keys"], r2["notes"], r2["epsilon"], r2["mechanisms"],
        )  # fmt: skip


def test_null_rules_substitute_mean_and_row_bound_on_the_command_line(tmp_path: Path) -> None:
    data = _csv(tmp_path, "v,g\n" + "".join(f"{'' if i % 10 == 0 else i % 9},{i % 2}\n"
                                              for i in range(200)))  # fmt: skip
    code, out = _run("release", data, "--epsilon", "100", "--mean", "v:0:10", "--nulls", "v=5",
                     "--mean-method", "substitute", "--rows", "200", "--json")  # fmt: skip
    assert code == 0, out
    (mean,) = json.loads(out)["results"]
    assert any("nulls replaced by 5" in n for n in mean["notes"])
    assert any("tables of n = 200 rows" in n for n in mean["notes"])
    truth = (sum(i % 9 for i in range(200) if i % 10) + 5 * 20) / 200
    assert mean["value"][0] == pytest.approx(truth, abs=0.5)
    code, out = _run("release", data, "--epsilon", "1", "--count", "--keys", "g=0,1",
                     "--max-rows", "1000", "--json")  # fmt: skip
    assert code == 0, out
    (count,) = json.loads(out)["results"]
    assert "± holds for tables of at most 1,000 rows (declared)" in count["notes"]
    code, out = _run("release", data, "--epsilon", "1", "--mean", "v:0:10", "--nulls", "v=x")
    assert code == 2 and "--nulls" in out


BAD_ARGUMENTS = [
    ["--delimiter", ""], ["--column", "a:integer:x:y"], ["--column", "a"], ["--by", "a"],
    ["--confidence", "2"], ["--max-rows-per-unit", "0"], ["--bins", "a=2,1"], ["--keys", "a=1,1"],
    ["--keys", "a="], ["--key", "a"], ["--column", "a:integer", "--keys", "a=3.0"],
    ["--nulls", "zz=1"], ["--rows", "0"], ["--max-rows", "0"], ["--sum", "a:1"],
    ["--sum", "a:b:c"], ["--mean", "a:3:1"], ["--quantiles", "a:0:1"], ["--var", "b"],
    ["--sum", "a:0:1e400"], ["--sum", "a:0:1", "--column", "a:text"], ["--encoding", "nope"],
    ["--mean-method", "substitute", "--mean", "a:0:1"], ["--column", "a:date:0:1"],
]  # fmt: skip


@pytest.mark.parametrize("extra", BAD_ARGUMENTS, ids=" ".join)
def test_bad_arguments_are_one_line_errors_naming_a_flag(tmp_path: Path, extra: list[str]) -> None:
    data = _csv(tmp_path, "a,b,c\n1,2,3\n")
    stats = {"--sum", "--mean", "--var", "--quantiles"}
    args = ["release", data, "--epsilon", "1", *([] if stats & set(extra) else ["--count"])]
    code, out = _run(*args, *extra)
    assert code == 2 and "Traceback" not in out
    error = [line for line in out.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "--" in error[0], out


def test_usefulness_flags_and_summary_from_public_parameters(tmp_path: Path) -> None:
    data = _csv(tmp_path, "v\n" + "".join(f"{i % 10}\n" for i in range(30)))
    sub = ["--mean-method", "substitute", "--rows", "30"]
    code, out = _run("release", data, "--epsilon", "0.01", "--mean", "v:0:10", *sub, "--json")
    assert code == 0, out
    (mean,) = json.loads(out)["results"]
    assert [f["code"] for f in mean["flags"]] == ["almost_pure_noise"]
    code, out = _run("release", data, "--epsilon", "0.01", "--mean", "v:0:10", *sub)
    assert code == 0 and "almost pure noise" in out and "95% of releases are within" in out
