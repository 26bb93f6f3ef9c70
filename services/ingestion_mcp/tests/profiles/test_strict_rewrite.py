"""toolkit/strict_schema.py: the rewrite of generated tool schemas into the subset strict clients accept."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from ingestion_mcp.toolkit.strict_schema import UnsupportedSchema, strict

from .test_strict_schemas import violations


def test_the_rewrite_inlines_definitions_and_turns_nullable_fields_into_optional_ones() -> None:
    generated = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "options": {"$ref": "#/$defs/Options", "default": {"limit": 10}},
            "page": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "description": "Page."},
            "score": {"type": ["number", "null"]},
            "mode": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}], "default": None},
            "filters": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
            "tags": {"type": "array"},
            "status": {"anyOf": [{"const": "error", "type": "string"}, {"type": "null"}]},
        },
        "required": ["query", "score"],
        "$defs": {"Options": {"type": "object", "properties": {"limit": {"type": "integer"}}}},
    }
    assert strict(generated) == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "options": {"type": "object", "properties": {"limit": {"type": "integer"}}, "default": {"limit": 10}},
            "page": {"type": "integer", "minimum": 1, "description": "Page."},
            "score": {"type": "number"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "filters": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "status": {"type": "string", "enum": ["error"]},
        },
        "required": ["query"],
    }
    assert violations(strict(generated)) == []
    assert len(violations(generated)) >= 5


@pytest.mark.parametrize(
    "value",
    [{"query": "x"}, {"query": "x", "page": 2}, {"query": "x", "page": 0}, {"query": "x", "mode": "c"},
     {"query": "x", "mode": "a", "page": 1}, {"page": 1}, {"query": "x", "filters": {"page": 3, "k": "v"}}],
)  # fmt: skip
def test_the_rewrite_accepts_what_the_generated_schema_accepts_without_null(value: dict[str, Any]) -> None:
    generated = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "page": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
            "mode": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}], "default": None},
            "filters": {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        },
        "required": ["query"],
    }
    validator = jsonschema.Draft202012Validator
    assert validator(strict(generated)).is_valid(value) == validator(generated).is_valid(value)


@pytest.mark.parametrize(
    "schema",
    [
        {
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        },
        {"type": "object", "properties": {"x": {"anyOf": [{"type": "object"}, {"type": "string"}]}}},
        {"type": "object", "properties": {"x": {"type": ["string", "integer"]}}},
    ],
)
def test_what_has_no_strict_form_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema):
        strict(schema)
