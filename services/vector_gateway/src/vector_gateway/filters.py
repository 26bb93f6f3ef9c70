"""The contract's equality filters as typed filters (where.py), every value checked on the way in.

Values are type-checked and strings refused when over-long or holding control characters, so a bad filter
is the caller's 422 before any store call; the store adapter then escapes each value as its syntax needs
(milvus/expressions.py). Field names come from FILTERABLE_FIELDS or match ``metadata.<identifier>``, never
from free text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping

from ingestion_contracts.gateway import FILTERABLE_FIELDS, METADATA_KEY_PATTERN

from . import names
from .where import And, Cmp, Contains, Eq, Scalar, Where, all_of

_METADATA_KEY_RE = re.compile(METADATA_KEY_PATTERN)
_INTEGER_STRING_RE = re.compile(r"^-?\d{1,18}$")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_STRING_VALUE = 2048
# Not chunk fields: `collection` selects which Milvus collections are searched.
COLLECTION_KEY = "collection"


class FilterError(ValueError):
    """A filter the caller must fix; the message names the key and the rule."""


def in_collection(collection: str) -> Eq:
    """Registry and lease rows of a collection: they record its Milvus name (names.py, at most 63 characters)."""
    return Eq("collection", names.collection(collection))


def check_text(value: str, *, what: str = "value") -> str:
    """``value`` when a filter may hold it: at most MAX_STRING_VALUE characters, none of them a control."""
    if len(value) > MAX_STRING_VALUE:
        raise FilterError(f"Filter {what} is {len(value)} characters long; the limit is {MAX_STRING_VALUE}.")
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise FilterError(
                f"Filter {what} contains a control character (U+{ord(char):04X}); filter values must be printable text."
            )
    return value


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


def check_scalar(value: object, *, what: str = "value") -> Scalar:
    """``value`` when it is a JSON scalar a filter compares with (string, 64-bit integer, finite float, boolean)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise FilterError(f"Filter {what} is outside the 64-bit integer range.")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FilterError(f"Filter {what} must be a finite number, not {value!r}.")
        return value
    if isinstance(value, str):
        return check_text(value, what=what)
    raise FilterError(f"Filter {what} must be a string, number or boolean.")


def field_condition(key: str, value: object) -> Where:
    """One equality condition on a chunk field or ``metadata.<key>``."""
    if _METADATA_KEY_RE.fullmatch(key):
        return Eq(key, check_scalar(value, what=repr(key)))
    expected = FILTERABLE_FIELDS.get(key)
    if expected is None or key == COLLECTION_KEY:
        allowed = ", ".join(sorted(k for k in FILTERABLE_FIELDS if k != COLLECTION_KEY))
        raise FilterError(f"Unknown filter key {key!r}. Allowed: {allowed}, or metadata.<key>.")
    if expected is int:
        number = _integer(key, value)
        if key == "page":
            # A chunk covers pages page..page_end: "page 3" finds every chunk that shows page 3.
            return And((Cmp("page", "<=", number), Cmp("page_end", ">=", number)))
        return Eq(key, number)
    if not isinstance(value, str):
        raise FilterError(f"Filter {key!r} takes a string, not {type(value).__name__}.")
    return Eq(key, check_text(value, what=repr(key)))


def tag_condition(tags: Iterable[str]) -> Where | None:
    """Chunks that carry every one of ``tags``; None for no tags."""
    return all_of(*(Contains("tags", check_text(tag, what="tag")) for tag in dict.fromkeys(tags)))


def build_filter(filters: Mapping[str, object], tags: Iterable[str] = ()) -> Where | None:
    """AND of the equality filters (minus ``collection``) and the tags; None when there are none."""
    parts = [field_condition(key, value) for key, value in filters.items() if key != COLLECTION_KEY]
    return all_of(*parts, tag_condition(tags))
