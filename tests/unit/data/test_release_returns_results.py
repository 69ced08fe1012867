"""`PrivateTable.release` says what it returns: `Results` (a list of `QueryResult` that also
turns into one DataFrame), not a plain `list[QueryResult]` (docs/data.md, "The API")."""

from __future__ import annotations

import typing

from snapdp.data import PrivateTable
from snapdp.data.output.results import Results
from snapdp.data.release import table


def test_release_is_annotated_with_what_it_returns() -> None:
    for cls in (table.PrivateTable, PrivateTable):
        assert typing.get_type_hints(cls.release)["return"] is Results
