"""Milvus boolean expressions built safely from the contract's equality filters.

Milvus Lite has no filter templates, so every value is type-checked and every string is
escaped here; no caller text reaches an expression any other way. Field names come from
FILTERABLE_FIELDS or match ``metadata.<identifier>``, never from free text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping

from ingestion_contracts.gateway import FILTERABLE_FIELDS, METADATA_KEY_PATTERN

from . import names

_METADATA_KEY_RE = re.compile(METADATA_KEY_PATTERN)
_INTEGER_STRING_RE = re.compile(r"^-?\d{1,18}$")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_STRING_VALUE = 2048
# Not chunk fields: `collection` selects which Milvus collections are searched.
COLLECTION_KEY = "collection"


class FilterError(ValueError):
    """A filter the caller must fix; the message names the key and the rule."""


def in_collection(collection: str) -> str:
    """Registry and lease rows of a collection: they record its Milvus name (names.py, at most 63 characters)."""
    return f"collection == {quote(names.collection(collection))}"


def quote(value: str, *, what: str = "value") -> str:
    """A Milvus string literal for ``value``: backslashes and double quotes escaped."""
    if len(value) > MAX_STRING_VALUE:
        raise FilterError(f"Filter {what} is {len(value)} characters long; the limit is {MAX_STRING_VALUE}.")
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise FilterError(
                f"Filter {what} contains a control character (U+{ord(char):04X}); filter values must be printable text."
            )
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _integer(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise FilterError(f"Filter {key!r} takes an integer, not a boolean.")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise FilterError(f"Filter {key!r} takes an integer; {value!r} is not one.")
        value = int(value)
    if isinstance(value, str):
        if not _INTEGER_STRING_RE.fullmatch(value.strip()):
            raise FilterError(f"Filter {key!r} takes an integer (for example 3), not text.")
        value = int(value.strip())
    if not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        raise FilterError(f"Filter {key!r} takes a 64-bit integer.")
    return value


def literal(value: object, *, what: str = "value") -> str:
    """A Milvus literal for a JSON scalar (string, integer, finite float, boolean)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise FilterError(f"Filter {what} is outside the 64-bit integer range.")
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"Filter {what} must be a finite number, not {value!r}.")
        return repr(value)
    if isinstance(value, str):
        return quote(value, what=what)
    raise FilterError(f"Filter {what} must be a string, number or boolean.")


def field_condition(key: str, value: object) -> str:
    """One equality condition on a chunk field or ``metadata.<key>``."""
    if _METADATA_KEY_RE.fullmatch(key):
        name = key.split(".", 1)[1]
        return f'metadata["{name}"] == {literal(value, what=repr(key))}'
    expected = FILTERABLE_FIELDS.get(key)
    if expected is None or key == COLLECTION_KEY:
        allowed = ", ".join(sorted(k for k in FILTERABLE_FIELDS if k != COLLECTION_KEY))
        raise FilterError(f"Unknown filter key {key!r}. Allowed: {allowed}, or metadata.<key>.")
    if expected is int:
        number = _integer(key, value)
        if key == "page":
            # A chunk covers pages page..page_end: "page 3" finds every chunk that shows page 3.
            return f"(page <= {number} and page_end >= {number})"
        return f"{key} == {number}"
    if not isinstance(value, str):
        raise FilterError(f"Filter {key!r} takes a string, not {type(value).__name__}.")
    return f"{key} == {quote(value, what=repr(key))}"


def tag_condition(tags: Iterable[str]) -> str:
    """Chunks that carry every one of ``tags``."""
    return " and ".join(f"ARRAY_CONTAINS(tags, {quote(tag, what='tag')})" for tag in dict.fromkeys(tags))


def build_filter(filters: Mapping[str, object], tags: Iterable[str] = ()) -> str:
    """AND of the equality filters (minus ``collection``) and the tags; '' when there are none."""
    parts = [field_condition(key, value) for key, value in filters.items() if key != COLLECTION_KEY]
    tag_part = tag_condition(tags)
    if tag_part:
        parts.append(tag_part)
    return " and ".join(parts)


def combine(*expressions: str) -> str:
    """AND of non-empty expressions, each parenthesized."""
    present = [e for e in expressions if e]
    if len(present) == 1:
        return present[0]
    return " and ".join(f"({e})" for e in present)


def in_list(field: str, values: Iterable[str]) -> str:
    """``field in ["a", "b"]`` with every value escaped."""
    return f"{field} in [{', '.join(quote(v) for v in values)}]"
