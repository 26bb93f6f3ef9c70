"""Which rows a store call touches, as data: the domain builds these, each store adapter translates them.

Store-neutral on purpose: no expression syntax lives outside the adapter (milvus/expressions.py for Milvus;
tests/fake_index.py evaluates them in Python). A field is a column name, or ``column.key`` for a key of a
JSON column (``metadata.lang``). ``None`` as a filter means every row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scalar = str | int | float | bool
Comparison = Literal["<", "<=", ">", ">="]


@dataclass(frozen=True)
class Eq:
    field: str
    value: Scalar


@dataclass(frozen=True)
class Ne:
    field: str
    value: Scalar


@dataclass(frozen=True)
class In:
    """The field's value is one of ``values``."""

    field: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class Cmp:
    """``field <op> value``, for integer fields."""

    field: str
    op: Comparison
    value: int


@dataclass(frozen=True)
class Contains:
    """An array field holds ``value``."""

    field: str
    value: str


@dataclass(frozen=True)
class And:
    parts: tuple[Where, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Where, ...]


@dataclass(frozen=True)
class Not:
    part: Where


Where = Eq | Ne | In | Cmp | Contains | And | Or | Not


def in_(field: str, values: Iterable[str]) -> In:
    return In(field, tuple(values))


def all_of(*parts: Where | None) -> Where | None:
    """AND of the given filters (``None`` ones skipped); ``None`` when none is left, the filter itself for one."""
    present = tuple(p for p in parts if p is not None)
    if not present:
        return None
    return present[0] if len(present) == 1 else And(present)
