"""Typed filters (where.py) as LanceDB (DataFusion SQL) predicates: the one place that writes Lance filter syntax.

Like milvus/expressions.py, every value is escaped here and no caller text reaches a predicate any other
way: strings become SQL literals ('' for a quote), field names are identifiers (``metadata.<identifier>``
for a key of the JSON column) quoted with backticks. A JSON key is read with the getter of the value's
type (json_get_string / _int / _float / _bool); a row without the key, or with a value of another type,
never equals the value, and is "not equal" to it, as the in-memory reference (tests/fake_index.py) says.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..filters import FilterError, check_scalar, check_text
from ..where import And, Cmp, Contains, Eq, In, Ne, Not, Or, Where

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GETTERS = {bool: "json_get_bool", int: "json_get_int", float: "json_get_float", str: "json_get_string"}


def quote(value: str, *, what: str = "value") -> str:
    """An SQL string literal for ``value``."""
    check_text(value, what=what)
    return "'" + value.replace("'", "''") + "'"


def literal(value: object, *, what: str = "value") -> str:
    """An SQL literal for a JSON scalar (string, integer, finite float, boolean)."""
    checked = check_scalar(value, what=what)
    if isinstance(checked, bool):
        return "true" if checked else "false"
    if isinstance(checked, str):
        return quote(checked, what=what)
    return repr(checked) if isinstance(checked, float) else str(checked)


def _column(name: str) -> str:
    if not _IDENTIFIER.fullmatch(name):
        raise FilterError(f"Filter field {name!r} is not a field name.")
    return f"`{name}`"


def _field(name: str, value: object = "") -> str:
    """The column, or for ``column.key`` the JSON getter of ``value``'s type."""
    column, _, key = name.partition(".")
    if not key:
        return _column(column)
    if not _IDENTIFIER.fullmatch(key):
        raise FilterError(f"Filter field {name!r} is not a field name.")
    return f"{_GETTERS[type(value)]}({_column(column)}, '{key}')"  # type(): bool is not int here


def in_list(field: str, values: Iterable[str]) -> str:
    """``field IN ('a', 'b')`` with every value escaped (never an empty list: SQL has none)."""
    listed = [quote(v) for v in values]
    return f"{_field(field)} IN ({', '.join(listed)})" if listed else "false"


def _what(field: str) -> str:
    return repr(field) if "." in field else "value"


def predicate(where: Where | None) -> str | None:
    """The predicate for ``where``; None (every row) for None."""
    match where:
        case None:
            return None
        case Eq(field, value):
            return f"{_field(field, value)} = {literal(value, what=_what(field))}"
        case Ne(field, value):
            text = f"{_field(field, value)} != {literal(value, what=_what(field))}"
            return f"({_field(field, value)} IS NULL OR {text})" if "." in field else text
        case In(field, values):
            return in_list(field, values)
        case Cmp(field, op, value):
            return f"{_field(field, value)} {op} {literal(value)}"
        case Contains(field, value):
            return f"array_has({_column(field)}, {quote(value, what='tag')})"
        case And(parts):
            return "(" + " AND ".join(_part(p) for p in parts) + ")"
        case Or(parts):
            return "(" + " OR ".join(_part(p) for p in parts) + ")"
        case Not(part):
            return f"NOT ({_part(part)})"
    raise TypeError(f"not a filter: {where!r}")


def _part(where: Where) -> str:
    return predicate(where) or "true"
