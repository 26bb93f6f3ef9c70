"""Typed filters (where.py) as Milvus boolean expressions: the one place that writes Milvus filter syntax.

Milvus Lite has no filter templates, so every string is escaped here and no caller text reaches an
expression any other way. Field names are identifiers (``metadata.<identifier>`` for a JSON key): the
domain builds them from FILTERABLE_FIELDS or the contract's metadata-key pattern, never from free text,
and anything else is refused here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..filters import FilterError, check_scalar, check_text
from ..where import And, Cmp, Contains, Eq, In, Ne, Not, Or, Where

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote(value: str, *, what: str = "value") -> str:
    """A Milvus string literal for ``value``: backslashes and double quotes escaped."""
    check_text(value, what=what)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def literal(value: object, *, what: str = "value") -> str:
    """A Milvus literal for a JSON scalar (string, integer, finite float, boolean)."""
    checked = check_scalar(value, what=what)
    if isinstance(checked, bool):
        return "true" if checked else "false"
    if isinstance(checked, str):
        return quote(checked, what=what)
    return repr(checked) if isinstance(checked, float) else str(checked)


def in_list(field: str, values: Iterable[str]) -> str:
    """``field in ["a", "b"]`` with every value escaped."""
    return f"{_field(field)} in [{', '.join(quote(v) for v in values)}]"


def _field(name: str) -> str:
    column, _, key = name.partition(".")
    if not _IDENTIFIER.fullmatch(column) or (key and not _IDENTIFIER.fullmatch(key)):
        raise FilterError(f"Filter field {name!r} is not a field name.")
    return f'{column}["{key}"]' if key else column


def _what(field: str) -> str:
    return repr(field) if "." in field else "value"


def _nested(where: Where) -> str:
    text = expression(where)
    return f"({text})" if isinstance(where, And | Or) else text


def expression(where: Where | None) -> str:
    """The Milvus expression for ``where``; '' (every row) for None."""
    match where:
        case None:
            return ""
        case Eq(field, value):
            return f"{_field(field)} == {literal(value, what=_what(field))}"
        case Ne(field, value):
            return f"{_field(field)} != {literal(value, what=_what(field))}"
        case In(field, values):
            return in_list(field, values)
        case Cmp(field, op, value):
            return f"{_field(field)} {op} {literal(value)}"
        case Contains(field, value):
            return f"ARRAY_CONTAINS({_field(field)}, {quote(value, what='tag')})"
        case And(parts):
            return " and ".join(_nested(p) for p in parts)
        case Or(parts):
            return " or ".join(_nested(p) for p in parts)
        case Not(part):
            return f"not ({expression(part)})"
    raise TypeError(f"not a filter: {where!r}")
