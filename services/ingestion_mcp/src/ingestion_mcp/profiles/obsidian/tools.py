"""Compatibility profile: PyObsidianMCP's vector search tools (docs/specs/obsidian-vector-search.md).

vector_search, find_similar_notes and vector_status return a JSON-formatted string shaped exactly as
the spec's examples. Errors are the spec's string too, with isError=true:
{"error": true, "error_type": "IndexNotFoundError"|"NoteNotFoundError"|"ConfigurationError"|"DatabaseError",
 "message": "..."}.

Notes live in one collection (INGESTION_MCP_OBSIDIAN_COLLECTION, default "obsidian_notes"), indexed by
`ingestion-index` with source = the vault-relative path ("Projects/MyProject.md") and one tag per
ancestor folder ("folder:Projects", "folder:Projects/Sub"), so a folder filter is an exact tag match
that includes subfolders.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from ingestion_contracts.gateway import MAX_QUERY_CHARS
from mcp.server import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import Field

from ...errors import ToolFailure
from ...ingest.notes import (
    ObsidianError,
    as_obsidian_error,
    error_json,
)
from ...state import AppState
from ...toolkit.annotations import READ
from ...toolkit.common import profile_tools


def spec_error(error: ObsidianError) -> CallToolResult:
    text = error_json(error)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content={"result": text}, is_error=True
    )


def render_error(failure: ToolFailure) -> CallToolResult:
    """Any failure in a tool, as the spec's error string (isError=true)."""
    return spec_error(as_obsidian_error(failure))


def invalid_arguments(failure: ToolFailure) -> CallToolResult:
    """Arguments the MCP framework refused (type, range), in the spec's error string."""
    return spec_error(ObsidianError("ValidationError", f"{failure.message} {failure.suggestion}".strip()))


def as_json(answer: dict[str, Any]) -> str:
    """The spec answers with a JSON string (compact: the agent pays per token)."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def register(server: MCPServer, state: AppState) -> None:
    tool = profile_tools(server, render_error)
    notes = state.note_index()

    @tool(READ)
    async def vector_search(
        query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Natural language query")],
        n_results: Annotated[int, Field(ge=1, le=100, description="Number of results to return (1-100)")] = 10,
        folder: Annotated[
            str | None, Field(default=None, max_length=1024, description='Optional folder filter (e.g. "Projects")')
        ] = None,
    ) -> str:
        """Perform semantic search across the Obsidian vault.

        Returns a JSON string: results (path, title, folder, score, content_preview, chunk_index,
        total_chunks), total and query. `folder` includes its subfolders. For notes like a given note,
        use find_similar_notes; for the index state, vector_status.
        """
        return as_json(await notes.search(query, n_results, folder))

    @tool(READ)
    async def find_similar_notes(
        path: Annotated[
            str,
            Field(min_length=1, max_length=2048, description='Path to the source note (e.g. "Projects/MyProject.md")'),
        ],
        n_results: Annotated[int, Field(ge=1, le=50, description="Number of similar notes to return (1-50)")] = 5,
    ) -> str:
        """Find notes similar to a specified note (by meaning), best first, the note itself excluded.

        Returns a JSON string: source_note, similar_notes (path, title, folder, score, content_preview,
        chunk_index, total_chunks) and total.
        """
        return as_json(await notes.similar(path, n_results))

    @tool(READ)
    async def vector_status() -> str:
        """Get the status of the vector search index: ready or empty, chunk and note counts, embedding
        provider and dimension, last update time and data path (JSON string)."""
        status = await notes.status()
        status.pop("embedding_model", None)  # the CLI shows it; the tool keeps the spec's keys
        return as_json(status)
