"""Typed filters (where.py) as LanceDB (DataFusion SQL) predicates: the one place that writes Lance filter syntax.

Like milvus/expressions.py, every value is escaped here and no caller text reaches a predicate any other
way: strings become SQL literals ('' for a quote), field names are identifiers (``metadata.<identifier>``
for a key of the JSON column) quoted with backticks. A JSON key is compared as JSON text
(``json_extract(metadata, '$.key')``: '"abc"', '5', 'true'), so only a value of the same type matches (5 and
5.0 match each other, as in the in-memory reference, tests/fake_index.py); a row without the key, or with a
value of another type, never equals the value and is "not equal" to it; nothing a row holds makes a filter
fail. ``NOT`` keeps the rows its part says nothing about (a missing key), as the reference does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from ..filters import FilterError, check_scalar, check_text
from ..where import And, Cmp, Contains, Eq, In, Ne, Not, Or, Where

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def _field(name: str) -> str:
    """The column, or for ``column.key`` the key's value as JSON text."""
    column, _, key = name.partition(".")
    if not key:
        return _column(column)
    if not _IDENTIFIER.fullmatch(key):
        raise FilterError(f"Filter field {name!r} is not a field name.")
    return f"json_extract({_column(column)}, '$.{key}')"


def _json_texts(value: object, what: str) -> str:
    """The JSON texts a stored value equal to ``value`` reads as, as an SQL list: ('"abc"'), ('5', '5.0')."""
    checked = check_scalar(value, what=what)
    if isinstance(checked, bool):
        texts = ["true" if checked else "false"]
    elif isinstance(checked, int):
        texts = [str(checked), f"{checked}.0"]
    elif isinstance(checked, float):
        texts = [repr(checked), *([str(int(checked))] if checked.is_integer() else [])]
    else:
        texts = [json.dumps(checked, ensure_ascii=False)]
    return "(" + ", ".join("'" + t.replace("'", "''") + "'" for t in texts) + ")"


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
        case Eq(field, value) if "." in field:
            return f"{_field(field)} IN {_json_texts(value, _what(field))}"
        case Ne(field, value) if "." in field:
            return f"({_field(field)} IS NULL OR {_field(field)} NOT IN {_json_texts(value, _what(field))})"
        case Eq(field, value):
            return f"{_field(field)} = {literal(value)}"
        case Ne(field, value):
            return f"({_field(field)} IS NULL OR {_field(field)} != {literal(value)})"
        case In(field, values):
            return in_list(field, values)
        case Cmp(field, op, value):
            return f"{_field(field)} {op} {literal(value)}"
        case Contains(field, value):
            return f"array_has({_column(field)}, {quote(value, what='tag')})"
        case And(parts):
            return "(" + " AND ".join(_part(p) for p in parts) + ")"
        case Or(parts):
            return "(" + " OR ".join(_part(p) for p in parts) + ")"
        case Not(part):
            return f"NOT coalesce({_part(part)}, false)"
    raise TypeError(f"not a filter: {where!r}")


def _part(where: Where) -> str:
    return predicate(where) or "true"
