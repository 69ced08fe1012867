"""The notes of a released result in plain words, for the page's results screen (docs/ui.md,
"Running") and the output of ``snapdp run`` and ``snapdp sql`` (docs/plans.md, docs/sql.md).

A release qualifies its values with technical notes (the neighbouring relation, the null and
bound rules applied, calibration, post-processing). :func:`plain_notes` gives each one a
sentence a data curator who does not code understands, the docs page that explains it, and
keeps the exact technical statement for a "details" fold (``--details`` on the command line).
It reads the notes only: the notes themselves follow from the plan (DESIGN §8.1), so their
plain words do too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from msgspec import Struct

__all__ = ["NOTE_KINDS", "PlainNote", "plain_note", "plain_notes"]


class PlainNote(Struct, frozen=True):
    """One note: ``kind`` (a short tag), ``text`` (plain words), ``doc`` (the docs page and
    section that explain it), ``help`` (the anchor of the page's own help), ``details`` (the
    note as the release states it)."""

    kind: str
    text: str
    doc: str
    help: str
    details: str

    def as_dict(self) -> dict[str, str]:
        """JSON-ready."""
        return {
            "kind": self.kind,
            "text": self.text,
            "doc": self.doc,
            "help": self.help,
            "details": self.details,
        }


_Words = Callable[[re.Match[str]], str]


def _who(m: re.Match[str]) -> str:
    unit = m["unit"]
    if unit == "row":
        return (
            "Privacy protects each row: the results would look much the same had any one row "
            "been left out of the data, or added."
        )
    return (
        f"Privacy protects each {unit}: the results would look much the same had any one "
        f"{unit} (all of their rows, up to the declared limits) been left out, or added."
    )


def _nulls(rule: str, what: str) -> str:
    if rule == "dropped":
        return f"Rows with an empty {what} were left out."
    return f"Empty {what} cells were counted as {rule.removeprefix('replaced by ')}."


def _grouping(m: re.Match[str]) -> str:
    outside = "one of the declared values" if m["out"] == "not a declared key" else "in a bin"
    return f"Rows whose {m['col']} is not {outside} were left out of this table. " + _nulls(
        m["rule"], m["col"]
    )


def _values(m: re.Match[str]) -> str:
    return (
        f"Values of {m['col']} below {m['lo']} were counted as {m['lo']}, and values above "
        f"{m['hi']} as {m['hi']} (the bounds declared for it). " + _nulls(m["rule"], m["col"])
    )


def _null_unit(m: re.Match[str]) -> str:
    if m["rule"] == "dropped":
        return f"Rows with no {m['unit']} were left out."
    return f"Each row with no {m['unit']} was treated as a separate {m['unit']}."


def _fixed(text: str) -> _Words:
    return lambda _m: text


# (kind, pattern of the technical note, plain words, docs page and section, help anchor)
_RULES: tuple[tuple[str, str, _Words, str, str], ...] = (
    ("substitute", r"neighbours: substitute one row; ± holds for tables of n = (?P<n>[\d,]+) rows",
     lambda m: f"This mean assumes the table has exactly {m['n']} rows, as declared (not "
     "checked); privacy protects each row.",
     "docs/data.md, “Statistics”", "protects"),
    ("protects", r"neighbours: add or remove one (?P<unit>[^ (]+)", _who,
     "docs/data.md, “Contribution bounding”", "protects"),
    ("null-unit", r"rows with a null (?P<unit>.+?): (?P<rule>dropped|each its own unit)$",
     _null_unit, "docs/data.md, “What does not fit”", "left-out"),
    ("groups", r"(?P<col>.+?): cells that are not \w+ count as null; nulls (?P<rule>.+?); rows "
     r"whose .+? is (?P<out>not a declared key|outside every bin) are dropped", _grouping,
     "docs/data.md, “What does not fit”", "left-out"),
    ("groups-data", r"(?P<col>.+?): cells that are not \w+ count as null; nulls (?P<rule>.+?); "
     r"groups from the data$", lambda m: _nulls(m["rule"], m["col"]),
     "docs/data.md, “What does not fit”", "left-out"),
    ("bounds", r"(?P<col>.+?): cells that are not \w+ count as null; nulls (?P<rule>.+?); values "
     r"clamped to \[(?P<lo>[^,]+), (?P<hi>[^\]]+)\]", _values,
     "docs/data.md, “What does not fit”", "bounds"),
    ("rows", r"± holds for tables of at most (?P<n>[\d,]+) rows",
     lambda m: f"The ± assumes the table has at most {m['n']} rows, as declared.",
     "docs/data.md, “The declaration”", "margin"),
    ("calibration", r".+: calibrated to the whole table",
     _fixed("The noise of this query was sized by a finer rule that lets it be smaller; its ± "
            "already accounts for it."),
     "docs/data.md, “Calibrated to the whole table (L1)”", "margin"),
    ("per-group", r".+: calibrated per group",
     _fixed("The noise of this query was sized group by group, the safe rule when the finer one "
            "could not be confirmed; its ± already accounts for it."),
     "docs/data.md, “Calibrated to the whole table (L1)”", "margin"),
    ("sample", r"sample forms divide by",
     _fixed("A group with one value or none has no sample variance: it shows the middle of the "
            "possible range, with the whole range as its ±."),
     "docs/sql.md, “Sample variance”", "margin"),
    ("consistent", r"consistent(:| with)",
     _fixed("Related tables were adjusted together so that totals equal the sum of their parts. "
            "This uses only the released numbers: it costs no privacy."),
     "docs/data.md, “Tables that add up”", "after"),
    ("quantile-exp", r"quantiles \(exponential mechanism",
     _fixed("Each quantile was picked at random among the possible values, favouring those near "
            "the true one. Its ± is the whole declared range, a safe but wide margin."),
     "docs/data.md, “Quantiles by the exponential mechanism”", "margin"),
    ("quantile", r"quantiles: ",
     _fixed("Each quantile was read from noisy counts of the values; its ± covers every value "
            "whose position in the data is close to the one asked for."),
     "docs/data.md, “Quantiles”", "margin"),
    ("having", r"(?P<clause>HAVING|ORDER BY) was applied to the released values",
     lambda m: f"{'Filtering' if m['clause'] == 'HAVING' else 'Ordering'} ({m['clause']}) used "
     "the released numbers, not the true ones: it costs no privacy.",
     "docs/sql.md, “HAVING and ORDER BY”", "after"),
    ("selection", r"keys not declared: a key is shown only if its noisy count is at least "
     r"(?P<t>[\d,.]+)",
     lambda m: f"The groups of this table were chosen from the data: a group is shown only when "
     f"its noisy count is at least {m['t']}, so a group that one person alone holds shows only "
     "with the tiny chance δ. A group that is not shown may still be in the data.",
     "docs/sql.md, “Groups from the data”", "from-data"),
    ("selection-count", r"(?P<e>\S+) of its ε counted the groups to choose them",
     lambda m: f"Part of this query's ε ({m['e']}) went to counting the groups in order to "
     "choose which ones to show.",
     "docs/sql.md, “Groups from the data”", "from-data"),
    ("integer", r"the count is rounded to the nearest integer",
     _fixed("Counts were rounded to whole numbers; the ± includes the rounding. It costs no "
            "privacy."),
     "docs/utility.md, “Integer counts”", "after"),
)  # fmt: skip
#: Every kind of note with plain words (the fallback, "other", says to read the details).
NOTE_KINDS = tuple(kind for kind, *_ in _RULES)


def plain_note(note: str) -> PlainNote:
    """``note`` in plain words, with its docs page and the note itself as the details."""
    for kind, pattern, words, doc, anchor in _RULES:
        m = re.match(pattern, note)  # compiled when first tried (re keeps it)
        if m is not None:
            return PlainNote(kind, words(m), doc, anchor, note)
    return PlainNote(
        "other",
        "A technical remark on how these values were computed: see the details.",
        "docs/data.md, “Accuracy”",
        "margin",
        note,
    )


def plain_notes(notes: Iterable[str]) -> list[dict[str, str]]:
    """Each note in plain words (JSON-ready), in the release's order."""
    return [plain_note(n).as_dict() for n in notes]
