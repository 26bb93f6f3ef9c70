"""What every profile now shares (issue 13 point 1): one tool wrapper, and missing things told apart by the
gateway's error codes, through a real MCP client session."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from ingestion_mcp.observability import REGISTRY

from .test_obsidian import answer, failure

pytestmark = pytest.mark.timeout(300)


def calls(tool: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("mcp_tool_calls_total", {"tool": tool, "outcome": outcome}) or 0.0


async def test_obsidian_calls_write_a_metric_and_a_log_line(notes_mcp: Any, caplog: pytest.LogCaptureFixture) -> None:
    ok, missing = calls("vector_status", "ok"), calls("find_similar_notes", "NoteNotFoundError")
    with caplog.at_level(logging.INFO, logger="ingestion_mcp.tools"):
        async with notes_mcp() as client:
            await answer(client, "vector_status")
            await failure(client, "find_similar_notes", path="Projects/Nope.md")
    assert calls("vector_status", "ok") == ok + 1
    assert calls("find_similar_notes", "NoteNotFoundError") == missing + 1
    logged = [record.getMessage() for record in caplog.records if record.name == "ingestion_mcp.tools"]
    assert any(line.startswith("tool vector_status ok in ") for line in logged), logged
    assert any(line.startswith("tool find_similar_notes NoteNotFoundError in ") for line in logged), logged


async def test_a_missing_collection_is_not_called_a_missing_document(connect: Any, call_tool: Any) -> None:
    """get_document and delete_document in a collection that does not exist say so, with the ones that do
    (the gateway's COLLECTION_NOT_FOUND, where the message text was read before and never matched)."""
    async with connect() as client:
        await call_tool(client, "create_collection", name="facade-present")
        for tool in ("get_document", "delete_document", "find_similar"):
            out = await call_tool(client, tool, doc_id="abc123", collection="facade-absent")
            assert out["success"] is False, out
            assert out["error"].startswith("Collection 'facade-absent' not found. Available collections: "), out
            assert "facade-present" in out["available_collections"], out
        out = await call_tool(client, "get_document", doc_id="abc123", collection="facade-present")
        assert out["error"] == "Document 'abc123' not found in collection 'facade-present'.", out
        again = await call_tool(client, "create_collection", name="facade-present")
        assert again["error"] == "Collection 'facade-present' already exists.", again
        await call_tool(client, "delete_collection", name="facade-present", confirm=True)
        gone = await call_tool(client, "delete_collection", name="facade-present", confirm=True)
        assert gone["error"].startswith("Collection 'facade-present' not found."), gone
