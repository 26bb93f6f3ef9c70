"""The search form's filter field, read as the search tool's filters."""

from __future__ import annotations

import pytest
from ingestion_mcp.console.activity import parse_filters, words
from ingestion_mcp.errors import ToolFailure


def test_filters_are_typed_like_the_tools_filters() -> None:
    assert parse_filters("page=3; file_type=pdf;\nmetadata.draft=true") == {
        "page": 3, "file_type": "pdf", "metadata.draft": True,
    }  # fmt: skip
    assert parse_filters("  ") == {} and words(" a, ,b ") == ["a", "b"]
    with pytest.raises(ToolFailure, match="is not key=value"):
        parse_filters("page 3")
