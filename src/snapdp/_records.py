"""What the package's records (msgspec Structs) need beyond msgspec: their fields as nested
dicts, and each field's default (docs/architecture.md, "Records").

The package's records are :class:`msgspec.Struct` classes: Python 3.11 compiles six generated
methods for every frozen dataclass, ~1 ms of every fresh process per class, where msgspec builds a
Struct's in C (docs/performance.md, "Records as msgspec Structs").
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from typing import Any

from msgspec import NODEFAULT, Struct
from msgspec.structs import fields

__all__ = ["as_dict", "field_defaults"]


def as_dict(record: Struct) -> dict[str, Any]:
    """The fields of ``record`` by name, nested records, lists, tuples and dicts converted the
    same way and every other value deep-copied (what :func:`dataclasses.asdict` gives)."""
    return {name: _plain(getattr(record, name)) for name in record.__struct_fields__}


def _plain(value: object) -> object:
    if isinstance(value, Struct):
        return as_dict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)


def field_defaults(record: Struct) -> Iterator[tuple[str, Callable[[], object] | None]]:
    """Per field of ``record``, its name and a function giving its default (a new value each
    call, as a default factory does), or None for a field without one."""
    for f in fields(record):
        if f.default is not NODEFAULT:
            yield f.name, functools.partial(copy.copy, f.default)
        elif f.default_factory is not NODEFAULT:
            yield f.name, f.default_factory
        else:
            yield f.name, None
