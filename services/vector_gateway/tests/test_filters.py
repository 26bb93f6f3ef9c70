"""Filters: exact Milvus expressions for good input, refusals for hostile or ill-typed input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vector_gateway.filters import FilterError, build_filter, field_condition, tag_condition
from vector_gateway.milvus.expressions import expression, in_list, literal, quote
from vector_gateway.where import And, Cmp, Eq, In, Ne, Not, Or

INJECTIONS = ['x" or doc_id != "', '") or (1==1', 'a\\" or true or "', "\\", '"', '\\\\"']


def _unescape(literal_text: str) -> str:
    """Parse a Milvus string literal the way Milvus does: \\\\ and \\" are the only escapes we emit."""
    assert literal_text[0] == literal_text[-1] == '"'
    out, i, body = [], 0, literal_text[1:-1]
    while i < len(body):
        if body[i] == "\\":
            out.append(body[i + 1])
            i += 2
        else:
            assert body[i] != '"', "an unescaped quote would end the literal early"
            out.append(body[i])
            i += 1
    return "".join(out)


def test_string_equality_is_quoted() -> None:
    assert expression(field_condition("file_type", "pdf")) == 'file_type == "pdf"'


@pytest.mark.parametrize("value", INJECTIONS)
def test_injection_attempts_stay_inside_one_literal(value: str) -> None:
    expr = expression(field_condition("source", value))
    prefix = "source == "
    assert expr.startswith(prefix)
    assert _unescape(expr[len(prefix) :]) == value


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=200))
def test_any_printable_string_round_trips(value: str) -> None:
    assert _unescape(quote(value)) == value


@pytest.mark.parametrize("value", ["a\x00b", "line\nbreak", "tab\tbed", "\x1b[31m"])
def test_control_characters_are_refused(value: str) -> None:
    with pytest.raises(FilterError, match="control character"):
        field_condition("title", value)


def test_overlong_values_are_refused() -> None:
    with pytest.raises(FilterError, match="limit is"):
        quote("x" * 5000)


def test_page_matches_chunks_covering_the_page() -> None:
    both = build_filter({"page": 3, "file_type": "pdf"})
    assert expression(both) == '(page <= 3 and page_end >= 3) and file_type == "pdf"'


@pytest.mark.parametrize(("value", "expected"), [(7, "7"), (7.0, "7"), ("7", "7"), (" -2 ", "-2")])
def test_integer_fields_accept_integral_values(value: object, expected: str) -> None:
    assert expression(field_condition("chunk_index", value)) == f"chunk_index == {expected}"


@pytest.mark.parametrize("value", [True, 2.5, math.inf, math.nan, "3 or 1==1", "", 2**63, "1e3"])
def test_integer_fields_refuse_everything_else(value: object) -> None:
    with pytest.raises(FilterError, match="integer"):
        field_condition("page", value)


@pytest.mark.parametrize("value", [3, 2.5, True])
def test_string_fields_refuse_numbers(value: object) -> None:
    with pytest.raises(FilterError, match="takes a string"):
        field_condition("file_type", value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("v", 'metadata["year"] == "v"'), (2024, 'metadata["year"] == 2024'), (1.5, 'metadata["year"] == 1.5')],
)
def test_metadata_keys_become_json_paths(value: object, expected: str) -> None:
    assert expression(field_condition("metadata.year", value)) == expected


def test_metadata_booleans_are_milvus_booleans() -> None:
    assert expression(field_condition("metadata.draft", False)) == 'metadata["draft"] == false'


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_metadata_numbers_must_be_finite(value: float) -> None:
    with pytest.raises(FilterError, match="finite"):
        literal(value)


@pytest.mark.parametrize("key", ["vector", "text", "metadata", 'metadata.a"]', "metadata.a b", "page or 1"])
def test_unknown_keys_are_refused_with_the_allowed_list(key: str) -> None:
    with pytest.raises(FilterError, match="Allowed: chunk_index, doc_id, file_type"):
        field_condition(key, "x")


def test_tags_are_and_ed_and_deduplicated() -> None:
    assert expression(tag_condition(["a", 'b"', "a"])) == 'ARRAY_CONTAINS(tags, "a") and ARRAY_CONTAINS(tags, "b\\"")'


def test_build_filter_joins_everything_and_skips_collection() -> None:
    expr = build_filter({"file_type": "pdf", "collection": "docs", "metadata.lang": "en"}, ["t"])
    assert expression(expr) == 'file_type == "pdf" and metadata["lang"] == "en" and ARRAY_CONTAINS(tags, "t")'
    assert build_filter({}) is None
    assert expression(None) == ""


def test_in_list_escapes_every_value() -> None:
    assert in_list("doc_id", ['a"', "b"]) == 'doc_id in ["a\\"", "b"]'


def test_nested_filters_keep_their_precedence() -> None:
    where = Or((And((Eq("doc_id", "a"), In("version", ("1", "2")))), Not(Ne("doc_id", "")), Cmp("page", ">", 2)))
    assert expression(where) == '(doc_id == "a" and version in ["1", "2"]) or not (doc_id != "") or page > 2'


@pytest.mark.parametrize("field", ["doc_id or 1", 'metadata.a"]', "metadata.a.b", ""])
def test_field_names_that_are_not_identifiers_are_refused(field: str) -> None:
    with pytest.raises(FilterError, match="not a field name"):
        expression(Eq(field, "x"))
