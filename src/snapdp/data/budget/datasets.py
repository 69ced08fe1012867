"""The dataset a release's budget is kept under (docs/data.md, "A budget per dataset")."""

from __future__ import annotations

from pathlib import Path

from snapdp._validation import check_unicode
from snapdp.errors import ParameterError

__all__ = ["dataset_name_for", "resolve_dataset"]


def dataset_name_for(source: object, label: str) -> str | None:
    """The default dataset name of a source: its resolved path if it is a path; else the engine's
    ``label`` when that names a file (an engine opened on a path); None for an in-memory source
    (a DataFrame or Arrow table, whose label ``<…>`` is only its type): such a source has no name
    of its own, and two of them must not share a budget by accident (docs/data.md, "A budget per
    dataset")."""
    if isinstance(source, (str, Path)):
        return _text(str(Path(source).expanduser().resolve()))
    if source is not None or (label.startswith("<") and label.endswith(">")):
        return None
    return _text(label)


def _text(path: str) -> str:
    """A path as valid Unicode text: a byte of the file name that is not UTF-8 (Python keeps it as
    a lone surrogate, ``'\\udcff'``) is written as its escape, ``\\xff``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def resolve_dataset(dataset: str | None, source: object, label: str, *, ledger_file: bool) -> str:
    """The dataset name a release spends under: ``dataset`` if given, else the source's default
    (:func:`dataset_name_for`). An in-memory source without a name is refused when the budget is
    kept in a ledger file (``ledger_file``): else two different DataFrames would silently share
    one budget; with an in-memory ledger its label serves (that budget lives with the table)."""
    if dataset is not None:
        if isinstance(dataset, str):
            check_unicode(dataset, "`dataset`", "dataset")
        return dataset
    name = dataset_name_for(source, label)
    if name is not None:
        return name
    if ledger_file:
        raise ParameterError(
            f"`dataset` is needed with a ledger file for an in-memory source ({label}): it has "
            "no file name to keep its budget under; name it, e.g. dataset='survey-2026' "
            '(docs/data.md, "A budget per dataset")',
            parameter="dataset",
        )
    return label
